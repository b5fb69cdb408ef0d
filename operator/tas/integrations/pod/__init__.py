"""Pods and pod groups (Kueue's pod integration): plain pods, and the pods of StatefulSets and LeaderWorkerSets."""
