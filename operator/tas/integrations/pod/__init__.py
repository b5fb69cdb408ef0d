"""Pods and pod groups (`pod`), as Kueue's pkg/controller/jobs/pod: plain pods, and the pods of
StatefulSets and LeaderWorkerSets.

- pod.py: a managed pod as Kueue reads it (group, role, state). Pure.
- group.py: a pod group's Workload, its end, and its members against its pod sets. Pure.
- controller.py: keeps pods and their Workloads in step (create, start, stop, finish, finalize).
- webhook.py: gates a queued pod at creation; validates its group metadata and annotations.

Not a GenericJob: a pod cannot be suspended, so it is gated at creation and started by
removing the gate.
"""
