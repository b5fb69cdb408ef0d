"""Properties of any small trace: no host is ever over-committed, the utilisation reported is
exactly what the running pods request, and the counts of placed pods add up."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.offline.simulate.traces import BLOCK, HOST, PREFERRED, RACK, REQUIRED, simulate

HOSTS = [("h0", "r0"), ("h1", "r0"), ("h2", "r1"), ("h3", "r1")]


@st.composite
def traces(draw: st.DrawFn) -> dict[str, Any]:
    nodes = []
    for name, rack in HOSTS:
        nodes.append(
            {
                "name": name,
                "labels": {BLOCK: "b0", RACK: rack, HOST: name},
                "allocatable": {
                    "cpu": str(draw(st.integers(1, 6))),
                    "pods": draw(st.integers(2, 5)),
                },
                "usage": {"cpu": f"{draw(st.sampled_from([0, 250, 500]))}m"},
                "ready": draw(st.booleans()) or name != "h3",  # h3 sometimes does not count
            }
        )
    workloads = []
    for index in range(draw(st.integers(1, 8))):
        podset: dict[str, Any] = {
            "name": "main",
            "count": draw(st.integers(1, 4)),
            "requests": {"cpu": f"{draw(st.integers(1, 12)) * 250}m"},
        }
        annotation = draw(
            st.sampled_from(
                [None, (REQUIRED, RACK), (PREFERRED, RACK), (REQUIRED, HOST), (REQUIRED, BLOCK)]
            )
        )
        if annotation:
            podset["annotations"] = {annotation[0]: annotation[1]}
        workload = {
            "name": f"w{index}",
            "arrival": draw(st.integers(0, 10)),
            "priority": draw(st.integers(0, 1)),
            "podSets": [podset],
        }
        duration = draw(st.one_of(st.none(), st.integers(1, 8)))
        if duration is not None:
            workload["duration"] = duration
        workloads.append(workload)
    document = {
        "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
        "nodes": nodes,
        "workloads": workloads,
    }
    if draw(st.booleans()):  # the admission decision, with a quota tighter than the nodes
        quota = draw(st.integers(1, 20))
        document["clusterQueues"] = [{"name": "q", "nominalQuota": {"cpu": str(quota)}}]
    return document


def milli(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(quantity) * 1000


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_no_host_is_overcommitted_and_the_reported_numbers_are_the_running_pods(document):
    nodes = {n["name"]: n for n in document["nodes"] if n["ready"]}
    cpu_of = {w["name"]: milli(w["podSets"][0]["requests"]["cpu"]) for w in document["workloads"]}
    pods_of = {w["name"]: w["podSets"][0]["count"] for w in document["workloads"]}
    events: list[tuple[float, dict[str, int], dict[str, int], set[str]]] = []

    def observe(now, running):
        cpu: dict[str, int] = dict.fromkeys(nodes, 0)
        pods: dict[str, int] = dict.fromkeys(nodes, 0)
        for name, uses in running.items():
            for use in uses:
                assert use.assignment.levels == (HOST,)
                for domain in use.assignment.domains:
                    (host,) = domain.values
                    cpu[host] += domain.count * cpu_of[name]
                    pods[host] += domain.count
        events.append((now, cpu, pods, set(running)))

    report = simulate(document, observe)

    total_cpu = sum(milli(n["allocatable"]["cpu"]) for n in nodes.values())
    total_pods = sum(n["allocatable"]["pods"] for n in nodes.values())
    placed, previous = 0, set()
    assert len(events) == len(report["timeline"])
    for (now, cpu, pods, names), entry in zip(events, report["timeline"], strict=True):
        assert entry["time"] == now
        for host, node in nodes.items():
            assert cpu[host] <= milli(node["allocatable"]["cpu"]) - milli(node["usage"]["cpu"])
            assert pods[host] <= node["allocatable"]["pods"]
        assert entry["utilisation"]["cpu"] == round(sum(cpu.values()) / total_cpu, 6) <= 1
        assert entry["utilisation"]["pods"] == round(sum(pods.values()) / total_pods, 6) <= 1
        assert entry["podsRunning"] == sum(pods.values())
        assert entry["workloadsRunning"] == len(names)
        if "clusterQueues" in document:
            quota = milli(document["clusterQueues"][0]["nominalQuota"]["cpu"])
            assert sum(cpu.values()) <= quota
        placed += sum(pods_of[name] for name in names - previous)  # no preemption here
        previous = names
    assert report["podsPlaced"] == placed
    assert report["workloadsAdmitted"] + report["workloadsNeverAdmitted"] == len(
        document["workloads"]
    )
    assert report["podsPlacedBeforeFirstFailure"] <= report["podsPlaced"]
    if report["firstFailure"] is None:
        assert report["podsPlacedBeforeFirstFailure"] == report["podsPlaced"]
    # whoever is left waiting at the end never got in, and the admitted ones did
    assert report["timeline"][-1]["workloadsWaiting"] == report["workloadsNeverAdmitted"]
