"""TFJob (`kubeflow.org/tfjob`, training-operator v1), as Kueue's
pkg/controller/jobs/kubeflow/jobs/tfjob on its kubeflow/kubeflowjob.

- controller.py: the TFJob as a GenericJob (jobframework.replica_specs): a pod set per replica
  type of `spec.tfReplicaSpecs` (Chief, Master, PS, Worker, Evaluator, in that order), ranked by the replica index label;
  jobframework's JobReconciler drives it.
- webhook.py: suspended at creation (`spec.runPolicy.suspend`); every replica type's topology
  annotations validated.
"""
