"""Kueue's documented examples for the integrations, verbatim, with the queue names of our local
set-up (a LocalQueue `user-queue` in the test's namespace; see conftest.user_queue).

From kubernetes-sigs/kueue site/static/examples: jobs/sample-jobset-tas-{required,sliced,
combined}.yaml, pods-kueue/kueue-pod.yaml, pods-kueue/kueue-pod-group.yaml and
serving-workloads/sample-leaderworkerset-tas.yaml.
"""

from __future__ import annotations

import copy

import yaml


def _jobset(name: str, annotations: dict[str, str], pods: int) -> str:
    lines = "\n".join(f'                {k}: "{v}"' for k, v in annotations.items())
    return f"""# sample-jobset-tas-{name}.yaml
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: jobset-tas-{name}
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  replicatedJobs:
    - name: workers
      replicas: 1
      template:
        spec:
          parallelism: {pods}
          completions: {pods}
          backoffLimit: 0
          template:
            metadata:
              annotations:
{lines}
            spec:
              containers:
                - name: sleep
                  image: busybox
                  resources:
                    requests:
                      cpu: 1
                      memory: "200Mi"
                  command:
                    - sleep
                  args:
                    - 100s
"""


RACK = "cloud.provider.com/topology-rack"
BLOCK = "cloud.provider.com/topology-block"
JOBSET_REQUIRED = _jobset("required", {"kueue.x-k8s.io/podset-required-topology": RACK}, 4)
JOBSET_SLICED = _jobset(
    "sliced",
    {
        "kueue.x-k8s.io/podset-slice-required-topology": RACK,
        "kueue.x-k8s.io/podset-slice-size": "4",
    },
    8,
)
JOBSET_COMBINED = _jobset(
    "combined",
    {
        "kueue.x-k8s.io/podset-required-topology": BLOCK,
        "kueue.x-k8s.io/podset-slice-required-topology": RACK,
        "kueue.x-k8s.io/podset-slice-size": "4",
    },
    8,
)

POD = """apiVersion: v1
kind: Pod
metadata:
  generateName: kueue-sleep-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  containers:
    - name: sleep
      image: busybox
      command:
        - sleep
      args:
        - 3s
      resources:
        requests:
          cpu: 3
  restartPolicy: OnFailure
"""

POD_GROUP = """---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-leader-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the leader pod" && sleep 3']
    resources:
      requests:
        cpu: 3
---
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-worker-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  restartPolicy: Never
  containers:
  - name: sleep
    image: busybox
    command: ["sh", "-c", 'echo "hello world from the worker pod" && sleep 2']
    resources:
      requests:
        cpu: 3
"""

LEADERWORKERSET = """apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: nginx-leaderworkerset
  labels:
    app: nginx
    kueue.x-k8s.io/queue-name: tas-user-queue
spec:
  replicas: 2
  leaderWorkerTemplate:
    leaderTemplate:
      metadata:
        annotations:
          # Require leader to be in the topology domain
          kueue.x-k8s.io/podset-required-topology: "cloud.provider.com/topology-rack"
          # Identify the group to ensure co-location with workers
          kueue.x-k8s.io/podset-group-name: "lws-group"
      spec:
        containers:
        - name: nginx-leader
          image: registry.k8s.io/nginx-slim:0.27
          resources:
            requests:
              cpu: "100m"
          ports:
          - containerPort: 80
    size: 3
    workerTemplate:
      metadata:
        annotations:
          # Require workers to be in the same topology domain
          kueue.x-k8s.io/podset-required-topology: "cloud.provider.com/topology-rack"
          # Identify the group to ensure co-location with leader
          kueue.x-k8s.io/podset-group-name: "lws-group"
      spec:
        containers:
        - name: nginx-worker
          image: registry.k8s.io/nginx-slim:0.27
          resources:
            requests:
              cpu: "200m"
              nvidia.com/gpu: "1"
          ports:
          - containerPort: 80"""


def leaderworkerset(queue: str) -> dict:
    """Kueue's LeaderWorkerSet example with our GPU queue's name. One more change is needed in
    any cluster: Kubernetes refuses a pod that requests `nvidia.com/gpu` without the same limit
    ("Limit must be set for non overcommitable resources"), so the LeaderWorkerSet controller
    could never create the workers as documented; the limit is added."""
    obj = yaml.safe_load(LEADERWORKERSET)
    obj = copy.deepcopy(obj)
    obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    resources = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
        "resources"
    ]
    resources["limits"] = {"nvidia.com/gpu": resources["requests"]["nvidia.com/gpu"]}
    return obj
