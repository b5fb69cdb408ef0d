"""RayCluster (`ray.io/raycluster`), as Kueue's pkg/controller/jobs/raycluster.

- controller.py: the RayCluster as a GenericJob (a "head" pod set and one per worker group,
  unordered; held by `spec.suspend`; never finished); jobframework's JobReconciler drives it.
  A RayCluster that a RayJob or RayService controls is its parent's to admit.
- webhook.py: suspended at creation (unless a Ray parent controls it); Kueue's refusals of the
  spec (autoscaling, more than 7 worker groups, a worker group named "head") and every
  template's topology annotations validated.

What the three Ray kinds share is in integrations/ray/cluster_spec.py.
"""
