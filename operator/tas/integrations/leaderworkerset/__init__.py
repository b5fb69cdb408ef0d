"""LeaderWorkerSet (`leaderworkerset.x-k8s.io/leaderworkerset`), as Kueue's
pkg/controller/jobs/leaderworkerset: one Workload per group, its pods a pod group.

- workload.py: the group Workloads (names, pod sets "leader"/"worker" or "main", rank label)
  and a pod's membership of its group. Pure.
- controller.py: creates and deletes the groups' Workloads as `replicas` changes, and labels
  each pod a member of its group; the pod integration admits, starts and keeps the pods.
- webhook.py: marks both pod templates so that the pods are gated; validates the bounds and
  topology annotations.
"""
