"""StatefulSet (`statefulset`), as Kueue's pkg/controller/jobs/statefulset: a queued
StatefulSet's pods are one pod group, admitted at its first pod.

- webhook.py: marks the pod template (group name, total count, fast admission, serving, rank
  label); validates that `replicas` changes only to or from zero.
- No controller.py: the StatefulSet needs none of its own. Its pods' group, Workload included,
  is kept by the pod integration's controller (integrations/pod/controller.py).
"""
