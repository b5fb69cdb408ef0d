"""TASNUMAZones: the NodeResourceTopology CRD is installed when absent, retried with a capped
backoff while the API server does not answer, and left alone on a refusal."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from tas.handlers.runtime import Runtime, upstream_crd
from tas.kube import KubeError
from tas.retry import Backoff

NAME = "noderesourcetopologies.topology.node.k8s.io"


class FakeKube:
    def __init__(self, present: bool = False, failures: list[KubeError] | None = None) -> None:
        self.present = present
        self.failures = list(failures or [])
        self.created: list[dict] = []
        self.calls = 0

    async def get(self, path: str):
        self.calls += 1
        assert path.endswith("/" + NAME)
        if self.failures:
            raise self.failures.pop(0)
        return {"metadata": {"name": NAME}} if self.present else None

    async def create(self, path: str, body: dict):
        assert path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        self.created.append(body)
        return body


def install(kube: FakeKube) -> None:
    runtime = SimpleNamespace(kube=kube)
    asyncio.run(Runtime._install_numa_crd(runtime, Backoff(base=0.0, cap=0.0)))


def test_the_upstream_crd_is_the_v1alpha2_one() -> None:
    crd = upstream_crd(NAME)
    assert crd["metadata"]["name"] == NAME
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert versions["v1alpha2"]["served"] and versions["v1alpha2"]["storage"]
    assert crd["spec"]["scope"] == "Cluster"


def test_an_absent_crd_is_installed_a_present_one_left_alone() -> None:
    absent = FakeKube()
    install(absent)
    assert [c["metadata"]["name"] for c in absent.created] == [NAME]
    present = FakeKube(present=True)
    install(present)
    assert present.created == []


def test_no_answer_is_retried_a_refusal_is_not() -> None:
    flaky = FakeKube(failures=[KubeError(0, "no answer"), KubeError(503, "unavailable")])
    install(flaky)
    assert flaky.calls == 3 and len(flaky.created) == 1
    forbidden = FakeKube(failures=[KubeError(403, "forbidden")])
    install(forbidden)
    assert forbidden.calls == 1 and forbidden.created == []
    raced = FakeKube(failures=[KubeError(409, "already exists")])
    install(raced)
    assert raced.created == []
