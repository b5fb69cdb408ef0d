"""Deployment (`deployment`), as Kueue's pkg/controller/jobs/deployment: a queued Deployment's
pods are admitted one by one, each a plain pod of the pod integration (which the Deployment
integration enables, as Kueue's does).

- webhook.py: marks the pod template (the managed and queue-name labels, the priority class
  label, `kueue.x-k8s.io/pod-suspending-parent: deployment`); refuses a queue-name change while
  pods are ready, or its removal.
- No controller.py: Kueue's Deployment reconciler does nothing. Each pod (owned Deployment ->
  ReplicaSet -> pod) is gated, given a Workload of its own and started by the pod integration
  (integrations/pod/controller.py).
"""
