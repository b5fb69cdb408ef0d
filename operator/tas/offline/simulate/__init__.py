"""`tas simulate TRACE`: replay workloads arriving and leaving through the operator's own
placement and admission, on a simulated clock, with no cluster.

trace.py reads a trace (a scenario whose workloads have arrival times and durations),
run.py is the event loop and its report, plot.py draws the report, generate.py writes
realistic traces.
"""
