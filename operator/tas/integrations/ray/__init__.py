"""What KubeRay's three kinds share, as Kueue's pkg/controller/jobs/raycluster/common.go: not a
kind of its own (no framework name, no controller, no webhook).

- cluster_spec.py: a RayClusterSpec (a RayCluster's spec, a RayJob's or RayService's
  `rayClusterSpec`) as pod sets, its start and restore, and Kueue's refusals of it.
"""
