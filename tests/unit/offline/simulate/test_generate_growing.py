"""The generator's `growing` shape: mixed gangs and placement groups that grow (services with
rack affinity, training jobs with block affinity), each group's steps soon after its start;
and the solver path and the admission decision place it alike."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from tas.offline.simulate import generate
from tas.offline.simulate.trace import parse_trace
from tests.unit.offline.simulate.test_groups import pods_over_time


def test_growing_groups_have_their_affinity_and_arrive_within_the_growth_window():
    document = generate.trace("growing", 2, 256, workloads=240, load=1.3)
    assert document["featureGates"] == {"TASPlacementGroups": True}
    trace = parse_trace(json.loads(generate.dumps(document)))
    arrivals: dict[str, list[float]] = defaultdict(list)
    for traced in trace.workloads:
        if traced.group is None:
            continue
        kind = traced.group.name.split("-")[0]
        expected = {"svc": generate.RACK, "job": generate.BLOCK}[kind]
        assert traced.group.spec.affinity_topology == expected
        arrivals[traced.group.name].append(traced.arrival)
    assert {name.split("-")[0] for name in arrivals} == {"svc", "job"}
    span = max(t.arrival for t in trace.workloads)
    for times in arrivals.values():
        assert max(times) - min(times) <= span * generate.GROWTH_WINDOW + 1  # rounding
    assert max(len(times) for times in arrivals.values()) >= 4  # they grow


@pytest.mark.parametrize("aware", [False, True], ids=["bestfit", "profile"])
def test_both_ways_of_admitting_place_a_growing_trace_alike(aware):
    """The solver path mirrors the admission decision's, groups and plain workloads alike."""
    document = generate.trace("growing", 3, 256, workloads=80, load=1.5)
    document["featureGates"] |= {"TASProfileFragmentationAware": aware}
    quota = {r: "1Pi" for r in ("cpu", "memory", "nvidia.com/gpu")}
    queued = document | {"clusterQueues": [{"name": "q", "nominalQuota": quota}]}
    seen = [pods_over_time(d) for d in (document, queued)]
    assert seen[0] == seen[1]
    assert len({name for _, running in seen[0] for name in running}) > 40
