"""Each framework's real controller, built from its Go module, runs out of cluster on the local
control plane and reconciles an object of its kind: the ground the integrations' own e2e tests
stand on. No queue name, so our operator (if one runs) leaves the objects alone.

`make e2e-integrations` builds the controllers (e2e/build-bins.sh integrations) and runs these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from e2e import integrations
from e2e.harness import Cluster, wait_for

pytestmark = pytest.mark.integrations

NAME = "smoke"


def _container(name: str) -> dict:
    return {"spec": {"containers": [{"name": name, "image": "registry.example/none:1"}]}}


def _replica(replicas: int, container: str) -> dict:
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": _container(container)}


@dataclass(frozen=True)
class Case:
    controller: str
    manifest: dict
    made: tuple[str, ...]  # `kubectl get` arguments listing what the controller makes
    count: int  # how many of them


CASES = [
    Case(
        "training-operator",
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": NAME},
            "spec": {
                "runPolicy": {"suspend": False},
                "pytorchReplicaSpecs": {
                    "Master": _replica(1, "pytorch"),
                    "Worker": _replica(2, "pytorch"),
                },
            },
        },
        ("pods", "-l", f"training.kubeflow.org/job-name={NAME}"),
        3,
    ),
    Case(
        "mpi-operator",
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": NAME},
            "spec": {
                "runPolicy": {"suspend": False},
                "slotsPerWorker": 1,
                "mpiReplicaSpecs": {
                    "Launcher": _replica(1, "launcher"),
                    "Worker": _replica(2, "worker"),
                },
            },
        },
        ("pods", "-l", f"training.kubeflow.org/job-name={NAME}"),
        3,
    ),
    Case(
        "kuberay",
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": NAME},
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": _container("ray-head")},
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": 2,
                        "minReplicas": 0,
                        "maxReplicas": 2,
                        "rayStartParams": {},
                        "template": _container("ray-worker"),
                    }
                ],
            },
        },
        ("pods", "-l", f"ray.io/cluster={NAME}"),
        3,
    ),
    Case(
        "trainer",
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": NAME},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
        },
        ("jobsets.jobset.x-k8s.io", NAME),  # a TrainJob runs as a JobSet of its own name
        1,
    ),
    Case(
        "appwrapper",
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "metadata": {"name": NAME},
            "spec": {
                "suspend": False,
                "components": [
                    {
                        "template": {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "metadata": {"name": f"{NAME}-job"},
                            "spec": {
                                "template": {
                                    "spec": {
                                        "restartPolicy": "Never",
                                        **_container("main")["spec"],
                                    }
                                }
                            },
                        }
                    }
                ],
            },
        },
        ("jobs.batch", f"{NAME}-job"),
        1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.controller for c in CASES])
def test_controller_reconciles_its_kind(
    cluster: Cluster, namespace: str, topology_nodes, case: Case
):
    if not integrations.built(cluster, case.controller):
        pytest.fail(f"the {case.controller} controller is not built: run `make e2e-integrations`")
    controller = integrations.Controller(cluster, case.controller).start()
    try:
        cluster.apply(case.manifest, namespace=namespace)

        def made() -> bool:
            listed = cluster.kubectl("get", *case.made, "-n", namespace, "-o", "name", check=False)
            return len(listed.stdout.split()) == case.count

        wait_for(made, timeout=120, what=f"{case.controller} to make {case.count} {case.made}")
        # Deleted while its controller runs: AppWrapper's finalizer would hold the namespace.
        kind = case.manifest["kind"].lower()
        cluster.kubectl("delete", kind, NAME, "-n", namespace, "--timeout=60s")
    except Exception:
        print(controller.log()[-4000:])
        raise
    finally:
        controller.stop()
