"""TFJob as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go.

The kind's facts; jobframework.replica_specs does the rest, as Kueue's kubeflowjob does for
every training-operator kind. The training operator creates each replica type's pods itself,
owned by the TFJob (its controller reference) and labelled with their index within the type.
"""

from __future__ import annotations

from tas.api.frameworks import TFJOB as TFJOB_RESOURCE
from tas.jobframework.replica_specs import REPLICA_INDEX_LABEL, ReplicaSpecsJob

REPLICA_SPECS_FIELD = "tfReplicaSpecs"
# Kueue's OrderedReplicaTypes: the pod sets' order.
REPLICA_TYPES = ("Chief", "Master", "PS", "Worker", "Evaluator")

TF_JOB = ReplicaSpecsJob(
    TFJOB_RESOURCE, REPLICA_SPECS_FIELD, REPLICA_TYPES, rank_label=REPLICA_INDEX_LABEL
)
