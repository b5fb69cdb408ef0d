"""MPIJob as a GenericJob (jobframework/interface.py), as Kueue's
pkg/controller/jobs/mpijob/mpijob_controller.go.

The kind's facts; jobframework.replica_specs does the rest. How mpi-operator (v0.8.0) owns what
it creates from the two templates, once the MPIJob is unsuspended:
- each worker is a pod `<mpijob>-worker-<i>`, its controller reference the MPIJob, labelled
  `training.kubeflow.org/replica-index: i` (i + 1 when `runLauncherAsWorker`);
- the launcher is a batch/v1 Job `<mpijob>-launcher`, its controller reference the MPIJob,
  without the queue-name label; its one pod's controller reference is that Job. The pod
  template is the Launcher's, so the pod carries our Workload annotation, pod set label and
  topology gate; it has the replica index label "0" only when `runLauncherAsWorker`.
  mpi-operator keeps the Job suspended with the MPIJob and, when resuming it, clears its
  startTime and copies the template's labels, annotations, nodeSelector, tolerations and
  scheduling gates into it (so no start-time reset is ours to do).
"""

from __future__ import annotations

from tas.api.frameworks import MPIJOB as MPIJOB_RESOURCE
from tas.jobframework.replica_specs import REPLICA_INDEX_LABEL, ReplicaSpecsJob

REPLICA_SPECS_FIELD = "mpiReplicaSpecs"
LAUNCHER = "Launcher"
WORKER = "Worker"
# Kueue's orderedReplicaTypes: the pod sets' order.
REPLICA_TYPES = (LAUNCHER, WORKER)

MPI_JOB = ReplicaSpecsJob(
    MPIJOB_RESOURCE, REPLICA_SPECS_FIELD, REPLICA_TYPES, rank_label=REPLICA_INDEX_LABEL
)
