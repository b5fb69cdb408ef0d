"""XGBoostJob (`kubeflow.org/xgboostjob`, training-operator v1), as Kueue's
pkg/controller/jobs/kubeflow/jobs/xgboostjob on its kubeflow/kubeflowjob.

- controller.py: the XGBoostJob as a GenericJob (jobframework.replica_specs): a pod set per replica
  type of `spec.xgbReplicaSpecs` (Master, Worker, in that order), ranked by the replica index label;
  jobframework's JobReconciler drives it.
- webhook.py: suspended at creation (`spec.runPolicy.suspend`); every replica type's topology
  annotations validated.
"""
