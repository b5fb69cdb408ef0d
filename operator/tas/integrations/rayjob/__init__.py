"""RayJob (`ray.io/rayjob`), as Kueue's pkg/controller/jobs/rayjob.

- controller.py: the RayJob as a GenericJob (the pod sets of its `rayClusterSpec`, then a
  "submitter" pod set in K8sJobMode; held by `spec.suspend`; finished with its deployment);
  jobframework's JobReconciler drives it. A RayJob on an existing cluster (`clusterSelector`)
  is not admitted (Kueue skips it).
- webhook.py: suspended at creation; Kueue's refusals (an existing cluster together with a
  `rayClusterSpec`, no cluster at all, `shutdownAfterJobFinishes` false, autoscaling, more
  than 7 worker groups, a worker group named "head") and every template's topology
  annotations validated.

What the three Ray kinds share is in integrations/ray/cluster_spec.py.
"""
