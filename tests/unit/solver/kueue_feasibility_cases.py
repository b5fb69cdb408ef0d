"""Kueue's cases for TASNodeFeasibilityForAllLevels (every node a leaf below a lowest level
other than the hostname), as KueueCase tables.

Sources, kubernetes-sigs/kueue:
- pkg/cache/scheduler/tas_cache_test.go at 4a369fff1e ("TAS: Inject a virtual hostname level
  so all arithmetic runs per node", PR 14191 before it was gated): three new cases. With the
  level injected, every earlier non-hostname case kept its expectation but one message
  (CHANGED_MESSAGES).
- test/integration/singlecluster/tas/tas_test.go at d64cfa4388 ("Non-hostname topology evaluates
  feasibility and capacity per node"): three workloads on a tainted rack.

One expectation is ours, derived from Kueue's final rule (note on the case): PR 14191 as merged
bounds a usage domain by its own remaining capacity rather than charging its nodes an even
share of its usage, as 4a369fff1e did.
"""

from tas.solver import PodSetRequest, Taint, TopologyRequest
from tests.unit.solver.kueue_tas_cases import DEFAULT_NODES
from tests.unit.solver.solver_test_helpers import (
    BLOCK,
    RACK,
    TWO_LEVELS,
    ExpectedPodSet,
    KueueCase,
    PriorUsage,
    assignment,
    kueue_requests,
    node,
)

# Kueue's non-hostname cases whose expectation the virtual level changed: name -> message.
CHANGED_MESSAGES = {
    "block required; single Pod which cannot be split; BestFit": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 6; excluded: '
        'resource "cpu": 6'
    ),
}


def _one_podset(count: int, cpu: int, topology: TopologyRequest, **want) -> tuple:
    request = PodSetRequest("main", count, kueue_requests({"cpu": cpu}), topology)
    return (ExpectedPodSet(request, **want),)


def _integration_node(name: str, rack: str, cpu: str, *, tainted: bool = False):
    return node(
        name,
        {"node-group": "tas", BLOCK: "b1", RACK: rack},
        {"cpu": cpu, "memory": "4Gi", "pods": "10"},
        taints=(Taint("gpu", "NoSchedule", "true"),) if tainted else (),
    )


# Rack r1 has a large tainted node and a small untainted one; rack r2 two small untainted ones.
INTEGRATION_NODES = (
    _integration_node("vh-r1-n1", "r1", "4", tainted=True),
    _integration_node("vh-r1-n2", "r1", "1"),
    _integration_node("vh-r2-n1", "r2", "1"),
    _integration_node("vh-r2-n2", "r2", "1"),
)

CASES = (
    KueueCase(
        "rack required; Pod fits in the rack's aggregated capacity but on no single node; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=_one_podset(
            1,
            2500,
            TopologyRequest(required=RACK),
            reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 6; '
            'excluded: resource "cpu": 6',
        ),
    ),
    KueueCase(
        "unconstrained; all nodes needed; non-hostname lowest level; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=_one_podset(
            7,
            1000,
            TopologyRequest(unconstrained=True),
            want=assignment(
                TWO_LEVELS,
                [(("b1", "r1"), 1), (("b1", "r2"), 3), (("b2", "r1"), 1), (("b2", "r2"), 2)],
            ),
        ),
    ),
    KueueCase(
        "rack required; usage on a multi-node rack bounds the rack, not its nodes; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        prior_usage=(
            PriorUsage(("b1", "r2"), 1, {"cpu": 1500}),
            PriorUsage(("b2", "r2"), 1, {"cpu": 1500}),
        ),
        podsets=_one_podset(
            2,
            750,
            TopologyRequest(required=RACK),
            want=assignment(TWO_LEVELS, [(("b1", "r2"), 2)]),
        ),
        note="Kueue's case at 4a369fff1e with the merged rule: b1/r2 keeps 1.5 of its 3 cpus "
        "(2 pods), b2/r2 0.5 of 2 (none); with an even share per node (0.5 cpu each) Kueue "
        "then expected 'allows to fit only 1 out of 2 pod(s)'.",
    ),
    KueueCase(
        "should not admit a workload which fits a rack's aggregate but no feasible node",
        levels=TWO_LEVELS,
        nodes=INTEGRATION_NODES,
        node_labels={"node-group": "tas"},
        podsets=_one_podset(
            1,
            2000,
            TopologyRequest(required=RACK),
            reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; '
            'excluded: resource "cpu": 3, taint "gpu=true:NoSchedule": 1',
        ),
        note="Kueue's integration test checks only that it stays pending; the message is "
        "Kueue's format with this cluster's counts.",
    ),
    KueueCase(
        "should admit a workload on the feasible node of a partially tainted rack",
        levels=TWO_LEVELS,
        nodes=INTEGRATION_NODES,
        node_labels={"node-group": "tas"},
        podsets=_one_podset(
            1,
            1000,
            TopologyRequest(required=RACK),
            want=assignment(TWO_LEVELS, [(("b1", "r1"), 1)]),
        ),
        note="Kueue's integration test checks the levels; the domain is BestFit's: r1's one "
        "untainted node holds exactly the pod, r2 holds two.",
    ),
    KueueCase(
        "should admit pods across a rack's nodes when no single node fits all of them",
        levels=TWO_LEVELS,
        nodes=INTEGRATION_NODES,
        node_labels={"node-group": "tas"},
        podsets=_one_podset(
            2,
            1000,
            TopologyRequest(required=RACK),
            want=assignment(TWO_LEVELS, [(("b1", "r2"), 2)]),
        ),
    ),
)
