"""StatefulSet integration: a queued StatefulSet's pods are one pod group (Kueue's statefulset)."""
