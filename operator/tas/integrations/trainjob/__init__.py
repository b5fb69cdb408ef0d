"""TrainJob (`trainer.kubeflow.org/trainjob`, Kubeflow Trainer v2), as Kueue's
pkg/controller/jobs/trainjob.

A TrainJob names a runtime (a ClusterTrainingRuntime, or a TrainingRuntime in its namespace)
whose JobSet template the Trainer controller turns into the TrainJob's JobSet. Kueue builds
the Workload's pod sets from that JobSet as the Trainer would build it, and starts the
TrainJob through a runtime patch of its own (manager `kueue.x-k8s.io/manager`).

- runtime.py: the child JobSet's replicatedJobs from the TrainJob and its runtime object
  (runtime patches merged, pod counts from the ML policy and `spec.trainer`), and which runtime
  a TrainJob names. Pure: the caller fetches the runtime.
- controller.py: the TrainJob as a GenericJob (a pod set per replicatedJob, ranked as a
  JobSet's; started by Kueue's runtime patch, then unsuspended); built with a runtime lookup.
- webhook.py: Kueue's runtime patch added and the TrainJob suspended at creation; the topology
  annotations of every replicatedJob validated against the runtime.

Pods are owned TrainJob -> JobSet (same name) -> Jobs -> pods.
"""
