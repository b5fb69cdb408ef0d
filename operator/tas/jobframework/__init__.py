"""What every integration shares (Kueue's jobframework): Workload names and pod sets, the pod
template changes of a start and their undoing, and the controller of kinds that are held
suspended until admitted (batch/v1 Job, JobSet)."""
