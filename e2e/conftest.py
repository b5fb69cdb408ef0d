"""Fixtures for the operator's end-to-end tests: the chart, Kueue's example queues, the operator.

The chart is installed once per session and the operator runs under its ServiceAccount's token,
so every end-to-end test also checks that the chart grants what the operator needs."""

from __future__ import annotations

import pytest

from e2e import chart, jobs
from e2e.harness import ROOT, Cluster, wait_for
from e2e.operator_process import OperatorProcess

CLUSTER_QUEUE = "tas-cluster-queue"


@pytest.fixture(scope="session")
def chart_installed(cluster: Cluster) -> None:
    chart.install(cluster)


def apply_kueue_example(cluster: Cluster) -> None:
    """Kueue's documented TAS setup, applied unchanged (its LocalQueue lives in `default`).
    Its v1beta1 ClusterQueue and LocalQueue are stored through the operator's conversion
    webhook, so an operator must be serving."""
    for name in ("topology.yaml", "resource-flavor.yaml", "cluster-queue.yaml", "local-queue.yaml"):
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kueue-tas" / name))


@pytest.fixture(scope="session")
def operator(cluster: Cluster, chart_installed, topology_nodes):
    """The operator, and Kueue's example queues it admits to."""
    proc = OperatorProcess(
        cluster,
        kubeconfig=chart.service_account_kubeconfig(cluster),
        gates=chart.deployment_gates(cluster),
    )
    proc.start()
    apply_kueue_example(cluster)
    yield proc
    proc.stop()


@pytest.fixture
def operator_swap(cluster: Cluster, operator: OperatorProcess):
    """Swap the session's operator for one started with other arguments (feature gates, a
    kubeconfig through a fault proxy), then put the session's back."""
    started: list[OperatorProcess] = []

    def start(**kwargs) -> OperatorProcess:
        operator.stop()
        other = OperatorProcess(cluster, **{"kubeconfig": operator.kubeconfig, **kwargs})
        other.start()
        started.append(other)
        return other

    yield start
    for other in started:
        other.stop()
    if started:  # only what was stopped is started again (twice would orphan a process)
        operator.start()


@pytest.fixture
def user_queue(cluster: Cluster, namespace: str, operator) -> str:
    """A LocalQueue in the test's namespace, on Kueue's example ClusterQueue."""
    cluster.apply(
        jobs.local_queue("user-queue", CLUSTER_QUEUE),
        namespace,
    )
    return "user-queue"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach the operator's log tail."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and "operator" in item.fixturenames:
        op = item.funcargs.get("operator")
        if isinstance(op, OperatorProcess):
            report.sections.append(("operator log", op.log()[-6000:]))


def wait_deleted(cluster: Cluster, *args: str, timeout: float = 90) -> None:
    wait_for(lambda: not cluster.get_json(*args)["items"], timeout=timeout, what=f"{args} gone")
