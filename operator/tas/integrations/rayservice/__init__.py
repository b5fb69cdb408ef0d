"""RayService (`ray.io/rayservice`), as Kueue's pkg/controller/jobs/rayservice.

- controller.py: the RayService as a GenericJob (the pod sets of its `rayClusterSpec`; held
  by `spec.rayClusterSpec.suspend`; never finished, it serves until deleted); jobframework's
  JobReconciler drives it.
- webhook.py: suspended at creation (its cluster spec's `suspend`); Kueue's refusals of the
  cluster spec (autoscaling, more than 7 worker groups, a worker group named "head") and every
  template's topology annotations validated.

What the three Ray kinds share is in integrations/ray/cluster_spec.py.
"""
