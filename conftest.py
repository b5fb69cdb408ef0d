"""Fixtures shared by integration and e2e tests: one cluster per session, a namespace per test.

The cluster is the local one from e2e/cluster.sh, or the one KUBECONFIG names (kind included).
Unit tests use none of these, so they run without a cluster.
"""

from __future__ import annotations

import os

import pytest
from e2e import topology
from e2e.harness import Cluster, cluster_from_env, wait_for


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return cluster_from_env()


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest):
    name = cluster.create_namespace(
        prefix=request.node.name[:20].lower().replace("_", "-").strip("-")
    )
    yield name
    cluster.delete_namespace(name)


@pytest.fixture(scope="session")
def topology_nodes(cluster: Cluster) -> list[str]:
    """The 8 kwok nodes of Kueue's e2e topology (2 blocks x 2 racks x 2 hosts), Ready."""
    shape = topology.Shape(blocks=2, racks=2, hosts=2)
    cluster.apply(topology.node_list(shape))
    names = [n["metadata"]["name"] for n in topology.nodes(shape)]

    def all_ready() -> bool:
        items = cluster.get_json("nodes", "-l", "type=kwok")["items"]
        ready = {
            n["metadata"]["name"]
            for n in items
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n["status"].get("conditions", [])
            )
            and not any(
                t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints", [])
            )
        }
        return set(names) <= ready

    wait_for(all_ready, timeout=90, what="kwok topology nodes Ready and untainted")
    return names


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failing cluster test, attach the tail of every component's log."""
    outcome = yield
    report = outcome.get_result()
    if (
        report.failed
        and "cluster" in item.fixturenames
        and os.environ.get("TAS_SHOW_LOGS", "1") == "1"
    ):
        cl = item.funcargs.get("cluster")
        if isinstance(cl, Cluster) and cl.local_dir:
            report.sections.append(("cluster logs", cl.logs()))
