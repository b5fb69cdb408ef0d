"""The client layer: where the API server is (kubeconfig.py), how to log in (credentials.py),
the calls themselves (client.py), list-and-watch of one kind (reflector.py) and how long to
wait before trying again (retry.py).

The client's names are re-exported here, so `from tas.kube import Kube, KubeError` reads as
the one client it is.
"""

from tas.kube.client import (
    CRDS,
    JSON_PATCH,
    KUEUE,
    MERGE,
    STRATEGIC,
    Connection,
    Kube,
    KubeError,
    Ref,
    client_session,
    gather_bounded,
    job_path,
    kueue_path,
    node_path,
    pod_path,
    workload_path,
)

__all__ = [
    "CRDS",
    "JSON_PATCH",
    "KUEUE",
    "MERGE",
    "STRATEGIC",
    "Connection",
    "Kube",
    "KubeError",
    "Ref",
    "client_session",
    "gather_bounded",
    "job_path",
    "kueue_path",
    "node_path",
    "pod_path",
    "workload_path",
]
