"""MPIJob (`kubeflow.org/mpijob`, mpi-operator v2beta1), as Kueue's pkg/controller/jobs/mpijob.

- controller.py: the MPIJob as a GenericJob (jobframework.replica_specs): a pod set per
  replica type of `spec.mpiReplicaSpecs` (Launcher, then Worker), ranked by the replica index
  label; jobframework's JobReconciler drives it.
- webhook.py: suspended at creation (`spec.runPolicy.suspend`); a launcher that also works
  shifts the workers' index by one (`kueue.x-k8s.io/pod-index-offset`); every replica type's
  topology annotations, and a launcher-and-workers pod-set group, validated.
"""
