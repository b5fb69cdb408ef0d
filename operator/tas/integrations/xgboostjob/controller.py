"""XGBoostJob as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/kubeflow/jobs/xgboostjob/xgboostjob_controller.go.

The kind's facts; jobframework.replica_specs does the rest, as Kueue's kubeflowjob does for
every training-operator kind. The training operator creates each replica type's pods itself,
owned by the XGBoostJob (its controller reference) and labelled with their index within the type.
"""

from __future__ import annotations

from tas.api.frameworks import XGBOOSTJOB as XGBOOSTJOB_RESOURCE
from tas.jobframework.replica_specs import REPLICA_INDEX_LABEL, ReplicaSpecsJob

REPLICA_SPECS_FIELD = "xgbReplicaSpecs"
# Kueue's OrderedReplicaTypes: the pod sets' order.
REPLICA_TYPES = ("Master", "Worker")

XGBOOST_JOB = ReplicaSpecsJob(
    XGBOOSTJOB_RESOURCE, REPLICA_SPECS_FIELD, REPLICA_TYPES, rank_label=REPLICA_INDEX_LABEL
)
