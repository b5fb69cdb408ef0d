"""PyTorchJob as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/kubeflow/jobs/pytorchjob/pytorchjob_controller.go.

The kind's facts; jobframework.replica_specs does the rest, as Kueue's kubeflowjob does for
every training-operator kind. The training operator creates each replica type's pods itself,
owned by the PyTorchJob (its controller reference) and labelled with their index within the type.
"""

from __future__ import annotations

from tas.api.frameworks import PYTORCHJOB as PYTORCHJOB_RESOURCE
from tas.jobframework.replica_specs import REPLICA_INDEX_LABEL, ReplicaSpecsJob

REPLICA_SPECS_FIELD = "pytorchReplicaSpecs"
# Kueue's OrderedReplicaTypes: the pod sets' order.
REPLICA_TYPES = ("Master", "Worker")

PYTORCH_JOB = ReplicaSpecsJob(
    PYTORCHJOB_RESOURCE, REPLICA_SPECS_FIELD, REPLICA_TYPES, rank_label=REPLICA_INDEX_LABEL
)
