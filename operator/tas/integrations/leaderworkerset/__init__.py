"""LeaderWorkerSet integration: one Workload per group, its pods a pod group (Kueue's leaderworkerset)."""
