"""Kueue's TestFindTopologyAssignments cases for TASRespectNodeAffinityPreferred, as KueueCase
tables: kubernetes-sigs/kueue pkg/cache/scheduler/tas_cache_test.go at ff69552e (the 11 cases
with a nodeAffinity), converted by hand. Names, nodes, requests and expectations are Kueue's.
"""

from tas.solver import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodSetRequest,
    PreferredSchedulingTerm,
    SliceLayer,
    TopologyRequest,
)
from tests.unit.solver.solver_test_helpers import (
    HOST,
    ExpectedPodSet,
    KueueCase,
    assignment,
    kueue_requests,
    node,
)

GATE = {"TASRespectNodeAffinityPreferred": True}
RACK = "cloud.com/topology-rack"
BLOCK = "cloud.com/topology-block"
SWITCH = "cloud.com/topology-switch"
ZONE = "cloud.com/topology-zone"
GI = 2**30


def prefer(*terms: tuple[int, str, str]) -> tuple[PreferredSchedulingTerm, ...]:
    """(weight, key, value) -> `key In [value]` terms, as MakePreferredSchedulingTerms."""
    return tuple(
        PreferredSchedulingTerm(
            weight, NodeSelectorTerm((NodeSelectorRequirement(key, "In", (value,)),))
        )
        for weight, key, value in terms
    )


def _node(name: str, labels: dict[str, str], cpu: str, **more: str):
    return node(name, {HOST: name, **labels}, {"cpu": cpu, "pods": "10", **more})


def _podset(count: int, topology: TopologyRequest, affinity, want, name="main", **requests):
    request = PodSetRequest(
        name,
        count,
        kueue_requests(requests or {"cpu": 1000}),
        topology,
        preferred_affinity=affinity,
    )
    return ExpectedPodSet(request, want=assignment((HOST,), want))


US_WEST = prefer((10, "region", "us-west"))
PREFERRED_TYPE = prefer((10, "type", "preferred"))
FLAT_FIVE = (
    _node("node-1-pref-2", {"type": "preferred"}, "2"),
    _node("node-2-pref-1", {"type": "preferred"}, "1"),
    _node("node-3-nonpref-2", {}, "2"),
    _node("node-4-nonpref-1", {}, "1"),
)
FLAT_UNCONSTRAINED = (
    *FLAT_FIVE[:3],
    _node("node-4-nonpref-1a", {}, "1"),
    _node("node-5-nonpref-1b", {}, "1"),
)
FLAT_PAIRS = (
    *FLAT_FIVE[:2],
    _node("node-3-nonpref-2a", {}, "2"),
    _node("node-4-nonpref-2b", {}, "2"),
    _node("node-5-nonpref-1", {}, "1"),
)
HOST_PAIRS = (SliceLayer(HOST, 2),)

CASES = (
    KueueCase(
        "with preferred affinity",
        levels=(RACK, HOST),
        nodes=(
            _node("node-preferred", {RACK: "rack-preferred", "region": "us-west"}, "1"),
            _node("node-other", {RACK: "rack-other", "region": "us-east"}, "1"),
        ),
        podsets=(_podset(1, TopologyRequest(preferred=RACK), US_WEST, [(("node-preferred",), 1)]),),
        gates=GATE,
    ),
    KueueCase(
        "with required and preferred affinity",
        levels=(RACK, HOST),
        nodes=(
            _node(
                "node-preferred", {RACK: "rack-preferred", "region": "us-west", "zone": "us"}, "1"
            ),
            _node("node-other", {RACK: "rack-other", "region": "us-east", "zone": "us"}, "1"),
            _node("node-excluded", {RACK: "rack-excluded", "region": "us-west", "zone": "eu"}, "1"),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    "main",
                    1,
                    kueue_requests({"cpu": 1000}),
                    TopologyRequest(preferred=RACK),
                    required_affinity=(
                        NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("us",)),)),
                    ),
                    preferred_affinity=US_WEST,
                ),
                want=assignment((HOST,), [(("node-preferred",), 1)]),
            ),
        ),
        gates=GATE,
    ),
    KueueCase(
        "with multiple preferred affinities",
        levels=(BLOCK, RACK, HOST),
        nodes=(
            _node("node-a", {BLOCK: "b1", RACK: "r1"}, "1"),
            _node("node-b", {BLOCK: "b1", RACK: "r2"}, "1"),
            _node("node-c", {BLOCK: "b2", RACK: "r1"}, "1"),
        ),
        podsets=(
            _podset(
                1,
                TopologyRequest(preferred=RACK),
                prefer((10, BLOCK, "b1"), (100, RACK, "r1")),
                [(("node-a",), 1)],
            ),
        ),
        gates=GATE,
    ),
    KueueCase(
        "affinity takes precedence over best fit",
        levels=(HOST,),
        nodes=(
            _node("node-better-fit", {"region": "us-east"}, "8"),
            _node("node-has-affinity", {"region": "us-west"}, "2"),
        ),
        podsets=(
            _podset(1, TopologyRequest(preferred=HOST), US_WEST, [(("node-has-affinity",), 1)]),
        ),
        gates=GATE,
    ),
    KueueCase(
        "affinity ordering with required topology level chooses secondary domain if primary "
        "is too small",
        levels=(RACK, HOST),
        nodes=(
            _node("node-preferred-small", {RACK: "rack-preferred", "region": "us-west"}, "2"),
            _node("node-secondary-large-1", {RACK: "rack-secondary", "region": "us-east"}, "4"),
            _node("node-secondary-large-2", {RACK: "rack-secondary", "region": "us-east"}, "4"),
        ),
        podsets=(
            _podset(4, TopologyRequest(required=RACK), US_WEST, [(("node-secondary-large-1",), 4)]),
        ),
        gates=GATE,
    ),
    KueueCase(
        "affinity ordering with preferred inner topology level bubbles up to parent level to "
        "avoid splitting across parent domains",
        levels=(RACK, SWITCH, HOST),
        nodes=(
            _node("node-preferred-small", {RACK: "r1", SWITCH: "s1", "region": "us-west"}, "2"),
            _node("node-secondary-large", {RACK: "r1", SWITCH: "s2", "region": "us-east"}, "4"),
        ),
        podsets=(
            _podset(
                4,
                TopologyRequest(preferred=SWITCH),
                US_WEST,
                [(("node-preferred-small",), 2), (("node-secondary-large",), 2)],
            ),
        ),
        gates=GATE,
    ),
    KueueCase(
        "flat topology, preferred mode, size 5 pods x 1",
        levels=(HOST,),
        nodes=FLAT_FIVE,
        podsets=(
            _podset(
                5,
                TopologyRequest(preferred=HOST),
                PREFERRED_TYPE,
                [(("node-1-pref-2",), 2), (("node-2-pref-1",), 1), (("node-3-nonpref-2",), 2)],
            ),
        ),
        gates=GATE,
    ),
    KueueCase(
        "flat topology, unconstrained mode, size 5 pods x 1",
        levels=(HOST,),
        nodes=FLAT_UNCONSTRAINED,
        podsets=(
            _podset(
                5,
                TopologyRequest(unconstrained=True),
                PREFERRED_TYPE,
                [
                    (("node-1-pref-2",), 2),
                    (("node-2-pref-1",), 1),
                    (("node-4-nonpref-1a",), 1),
                    (("node-5-nonpref-1b",), 1),
                ],
            ),
        ),
        gates={**GATE, "TASProfileMixed": True},
    ),
    KueueCase(
        "flat topology, preferred mode, size 2 pods x 2",
        levels=(HOST,),
        nodes=FLAT_PAIRS,
        podsets=(
            _podset(
                4,
                TopologyRequest(preferred=HOST, slice_layers=HOST_PAIRS),
                PREFERRED_TYPE,
                [(("node-1-pref-2",), 2), (("node-3-nonpref-2a",), 2)],
            ),
        ),
        gates=GATE,
    ),
    KueueCase(
        "flat topology, unconstrained mode, size 2 pods x 2",
        levels=(HOST,),
        nodes=FLAT_PAIRS,
        podsets=(
            _podset(
                4,
                TopologyRequest(unconstrained=True, slice_layers=HOST_PAIRS),
                PREFERRED_TYPE,
                [(("node-1-pref-2",), 2), (("node-3-nonpref-2a",), 2)],
            ),
        ),
        gates={**GATE, "TASProfileMixed": True},
    ),
    KueueCase(
        "LWS with leader and workers; preferred affinity on workers; leader cannot fit on "
        "preferred zone",
        levels=(ZONE, HOST),
        nodes=(
            node(
                "us-west-1",
                {ZONE: "us-west", HOST: "us-west-1"},
                {"cpu": "8", "memory": "32Gi", "pods": "10", "nvidia.com/gpu": "8"},
            ),
            node(
                "us-west-2",
                {ZONE: "us-west", HOST: "us-west-2"},
                {"cpu": "8", "memory": "32Gi", "pods": "10", "nvidia.com/gpu": "8"},
            ),
            node(
                "us-east-1",
                {ZONE: "us-east", HOST: "us-east-1"},
                {"cpu": "32", "memory": "128Gi", "pods": "10"},
            ),
        ),
        podsets=(
            _podset(
                1,
                TopologyRequest(
                    preferred=ZONE, slice_layers=(SliceLayer(HOST, 1),), group_name="g"
                ),
                (),
                [(("us-east-1",), 1)],
                name="leader",
                cpu=16_000,
                memory=64 * GI,
            ),
            _podset(
                2,
                TopologyRequest(
                    preferred=ZONE, slice_layers=(SliceLayer(HOST, 1),), group_name="g"
                ),
                prefer((10, ZONE, "us-west")),
                [(("us-west-1",), 1), (("us-west-2",), 1)],
                name="workers",
                cpu=4_000,
                memory=32 * GI,
                **{"nvidia.com/gpu": 8},
            ),
        ),
        gates=GATE,
    ),
)
