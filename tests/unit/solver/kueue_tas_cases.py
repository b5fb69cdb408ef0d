"""Cases ported from Kueue's TestFindTopologyAssignments.

Source: kubernetes-sigs/kueue pkg/cache/scheduler/tas_cache_test.go at ff69552e. The Go table
was converted mechanically (nodes, requests, topology requests, expected assignments and failure
messages), so every expectation here is Kueue's, not ours. Case names are Kueue's.
Requests are in Kueue's units (see kueue_requests); allocatable are Kubernetes quantities.

Not here: the 11 preferred-node-affinity cases (TASRespectNodeAffinityPreferred: in
kueue_affinity_cases.py), the 8 elastic-workload cases (not implemented), and the 5
node-replacement cases (one is in test_kueue_replacement.py; the others differ only in the
caller-side SkipReassignmentForPodOwnedWorkloads rule).
"""

from tas.solver import PodSetRequest, SliceLayer, Taint, Toleration, TopologyRequest
from tests.unit.solver.solver_test_helpers import (
    AIZONE,
    BLOCK,
    DATACENTER,
    HOST,
    ONE_LEVEL,
    RACK,
    SUBBLOCK,
    THREE_LEVELS,
    TWO_LEVELS,
    ExpectedPodSet,
    KueueCase,
    PriorUsage,
    assignment,
    kueue_requests,
    node,
    pod,
)

DEFAULT_NODES = (
    node(
        "b1-r1-x3",
        {BLOCK: "b1", RACK: "r1", HOST: "x3"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x5",
        {BLOCK: "b1", RACK: "r2", HOST: "x5"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x1",
        {BLOCK: "b1", RACK: "r2", HOST: "x1"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x6",
        {BLOCK: "b1", RACK: "r2", HOST: "x6"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r2-x2",
        {BLOCK: "b2", RACK: "r1", HOST: "x2"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r2-x4",
        {BLOCK: "b2", RACK: "r2", HOST: "x4"},
        {"cpu": "2", "memory": "4Gi", "pods": "40"},
    ),
)

SCATTERED_NODES = (
    node(
        "b1-r1-x3",
        {BLOCK: "b1", RACK: "r1", HOST: "x3"},
        {"cpu": "4", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r1-x5",
        {BLOCK: "b1", RACK: "r1", HOST: "x5"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r1-x1",
        {BLOCK: "b1", RACK: "r1", HOST: "x1"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r1-x6",
        {BLOCK: "b2", RACK: "r1", HOST: "x6"},
        {"cpu": "2", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r1-x2",
        {BLOCK: "b2", RACK: "r1", HOST: "x2"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
)

MULTIPOD_NODES = (
    node(
        "b1-r1-x3",
        {BLOCK: "b1", RACK: "r1", HOST: "x3"},
        {"cpu": "10", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x5",
        {BLOCK: "b1", RACK: "r2", HOST: "x5"},
        {"cpu": "10", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x1",
        {BLOCK: "b1", RACK: "r2", HOST: "x1"},
        {"cpu": "10", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x6",
        {BLOCK: "b1", RACK: "r2", HOST: "x6"},
        {"cpu": "10", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r1-x2",
        {BLOCK: "b2", RACK: "r1", HOST: "x2"},
        {"cpu": "10", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r2-x4",
        {BLOCK: "b2", RACK: "r2", HOST: "x4"},
        {"cpu": "20", "memory": "4Gi", "pods": "40"},
    ),
)

BINARY_TREES_NODES = (
    node(
        "b1-r1-x3",
        {BLOCK: "b1", RACK: "r1", HOST: "x3"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r1-x5",
        {BLOCK: "b1", RACK: "r1", HOST: "x5"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x1",
        {BLOCK: "b1", RACK: "r2", HOST: "x1"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b1-r2-x6",
        {BLOCK: "b1", RACK: "r2", HOST: "x6"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r1-x2",
        {BLOCK: "b2", RACK: "r1", HOST: "x2"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r1-x4",
        {BLOCK: "b2", RACK: "r1", HOST: "x4"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r2-x7",
        {BLOCK: "b2", RACK: "r2", HOST: "x7"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
    node(
        "b2-r2-x8",
        {BLOCK: "b2", RACK: "r2", HOST: "x8"},
        {"cpu": "1", "memory": "1Gi", "pods": "10"},
    ),
)

CASES = (
    KueueCase(
        "minimize the number of used racks before optimizing the number of nodes; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "2", "pods": "10"}),
            node("b1-r2-x5", {BLOCK: "b1", RACK: "r2", HOST: "x5"}, {"cpu": "2", "pods": "20"}),
            node("b1-r3-x1", {BLOCK: "b1", RACK: "r3", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("b1-r3-x6", {BLOCK: "b1", RACK: "r3", HOST: "x6"}, {"cpu": "1", "pods": "10"}),
            node("b1-r3-x2", {BLOCK: "b1", RACK: "r3", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
            node("b1-r3-x4", {BLOCK: "b1", RACK: "r3", HOST: "x4"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(
                    ONE_LEVEL, [(("x1",), 1), (("x2",), 1), (("x4",), 1), (("x6",), 1)]
                ),
            ),
        ),
    ),
    KueueCase(
        "choose the node that can accommodate all Pods",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "2", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "1", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=2,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "no annotation; implied default to unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit into single rack; BestFit",
        levels=THREE_LEVELS,
        nodes=SCATTERED_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(),
                ),
                want=assignment(
                    ONE_LEVEL,
                    [(("x1",), 1), (("x3",), 1), (("x5",), 1), (("x2",), 1), (("x6",), 2)],
                ),
            ),
        ),
    ),
    KueueCase(
        "unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they could fit into single rack; BestFit",
        levels=THREE_LEVELS,
        nodes=SCATTERED_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(unconstrained=True),
                ),
                want=assignment(
                    ONE_LEVEL,
                    [(("x1",), 1), (("x3",), 1), (("x5",), 1), (("x2",), 1), (("x6",), 2)],
                ),
            ),
        ),
    ),
    KueueCase(
        "unconstrained; a single pod fits into each host; BestFit",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(unconstrained=True),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "unconstrained; a single pod fits into each host; LeastFreeCapacity; TASProfileMixed",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(unconstrained=True),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        gates={"TASProfileMixed": True},
    ),
    KueueCase(
        "block required; 4 pods fit into one host each; BestFit",
        levels=THREE_LEVELS,
        nodes=BINARY_TREES_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(
                    ONE_LEVEL, [(("x3",), 1), (("x5",), 1), (("x1",), 1), (("x6",), 1)]
                ),
            ),
        ),
    ),
    KueueCase(
        "host required; single Pod fits in the host; BestFit",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "host required; single Pod fits in the host; BestFit; TASProfileMixed",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        gates={"TASProfileMixed": True},
    ),
    KueueCase(
        "host preferred; single Pod fits in the host; BestFit; TASProfileMixed",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        gates={"TASProfileMixed": True},
    ),
    KueueCase(
        "rack required; single Pod fits in a rack; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 1)]),
            ),
        ),
    ),
    KueueCase(
        "rack required; multiple Pods fit in a rack; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=3,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r2"), 3)]),
            ),
        ),
    ),
    KueueCase(
        "block preferred; Pods fit in 2 blocks; BestFit",
        levels=(BLOCK,),
        nodes=(
            node("b1", {BLOCK: "b1"}, {"cpu": "2", "pods": "20"}),
            node("b2", {BLOCK: "b2"}, {"cpu": "1", "pods": "10"}),
            node("b3", {BLOCK: "b3"}, {"cpu": "4", "pods": "40"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=5,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK),
                ),
                want=assignment((BLOCK,), [(("b2",), 1), (("b3",), 4)]),
            ),
        ),
    ),
    KueueCase(
        "rack required; multiple Pods fit in some racks; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=2,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b2", "r2"), 2)]),
            ),
        ),
    ),
    KueueCase(
        "rack required; too many pods to fit in any rack; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                reason='topology "default" allows to fit only 3 out of 4 pod(s)',
            ),
        ),
    ),
    KueueCase(
        "block required; single Pod fits in a block and a single rack; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(TWO_LEVELS, [(("b2", "r1"), 1)]),
            ),
        ),
    ),
    KueueCase(
        "block required; single Pod fits in a block spread across two racks; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 1), (("b1", "r2"), 3)]),
            ),
        ),
    ),
    KueueCase(
        "block required; Pods fit in a block spread across two racks; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 1), (("b1", "r2"), 3)]),
            ),
        ),
    ),
    KueueCase(
        "block required; single Pod which cannot be split; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 4000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; excluded: resource "cpu": 4',
            ),
        ),
    ),
    KueueCase(
        "block required; too many Pods to fit requested; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=5,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                reason='topology "default" allows to fit only 4 out of 5 pod(s)',
            ),
        ),
    ),
    KueueCase(
        "rack required; single Pod requiring memory; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"memory": 1024}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 4)]),
            ),
        ),
    ),
    KueueCase(
        "rack preferred; but only block can accommodate the workload; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 1), (("b1", "r2"), 3)]),
            ),
        ),
    ),
    KueueCase(
        "rack preferred; but only multiple blocks can accommodate the workload; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(
                    TWO_LEVELS, [(("b1", "r1"), 1), (("b1", "r2"), 3), (("b2", "r2"), 2)]
                ),
            ),
        ),
    ),
    KueueCase(
        "block preferred; but only multiple blocks can accommodate the workload; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK),
                ),
                want=assignment(
                    TWO_LEVELS, [(("b1", "r1"), 1), (("b1", "r2"), 3), (("b2", "r2"), 2)]
                ),
            ),
        ),
    ),
    KueueCase(
        "block preferred; but the workload cannot be accommodate in entire topology; BestFit",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=10,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK),
                ),
                reason='topology "default" allows to fit only 7 out of 10 pod(s)',
            ),
        ),
    ),
    KueueCase(
        "only nodes with matching labels are considered; no matching node; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "b1-r1-x3",
                {"zone": "zone-a", HOST: "x3"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
                ready=False,
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason="no topology domains at level: kubernetes.io/hostname",
            ),
        ),
        node_labels={"zone": "zone-b"},
    ),
    KueueCase(
        "only nodes with matching labels are considered; matching node is found; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "b1-r1-x3",
                {"zone": "zone-a", HOST: "x3"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "only nodes with matching levels are considered; no host label on node; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x3", {BLOCK: "b1", RACK: "r1"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                reason="no topology domains at level: cloud.com/topology-rack",
            ),
        ),
    ),
    KueueCase(
        "don't consider unscheduled Pods when computing capacity; BestFit",
        levels=ONE_LEVEL,
        nodes=(node("x3", {HOST: "x3"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 600}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        pods=(pod("test-unscheduled", None, "Pending", {"cpu": "600m"}),),
    ),
    KueueCase(
        "don't consider terminal pods when computing the capacity; BestFit",
        levels=ONE_LEVEL,
        nodes=(node("x3", {HOST: "x3"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 600}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        pods=(
            pod("test-failed", "x3", "Failed", {"cpu": "600m"}),
            pod("test-succeeded", "x3", "Succeeded", {"cpu": "600m"}),
        ),
    ),
    KueueCase(
        "include usage from pending scheduled non-TAS pods, blocked assignment; BestFit",
        levels=ONE_LEVEL,
        nodes=(node("x3", {HOST: "x3"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 600}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
            ),
        ),
        pods=(pod("test-pending", "x3", "Pending", {"cpu": "600m"}),),
    ),
    KueueCase(
        "include usage from running non-TAS pods, blocked assignment; BestFit",
        levels=ONE_LEVEL,
        nodes=(node("x3", {HOST: "x3"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 600}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
            ),
        ),
        pods=(pod("test-running", "x3", "Running", {"cpu": "600m"}),),
    ),
    KueueCase(
        "node allocatable capacity completely used by non-TAS pod; empty remainingCapacity",
        levels=ONE_LEVEL,
        nodes=(node("x3", {HOST: "x3"}, {"cpu": "1", "pods": "1"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 100}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
            ),
        ),
        pods=(pod("running1", "x3", "Running", {"cpu": "1"}),),
    ),
    KueueCase(
        "include usage from non-TAS pods; pod usage",
        levels=ONE_LEVEL,
        nodes=(node("x3", {HOST: "x3"}, {"pods": "10"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=9,
                    requests=kueue_requests({"cpu": 0}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" allows to fit only 8 out of 9 pod(s)',
            ),
        ),
        pods=(pod("running1", "x3", "Running", {}), pod("running2", "x3", "Running", {})),
    ),
    KueueCase(
        "include usage from running non-TAS pods, found free capacity on another node; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node("x3", {HOST: "x3"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),
            node("x5", {HOST: "x5"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 600}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x5",), 1)]),
            ),
        ),
        pods=(pod("test-pod", "x3", "Pending", {"cpu": "600m"}),),
    ),
    KueueCase(
        "no assignment as node is not ready; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "b1-r1-x3",
                {"zone": "zone-a", HOST: "x3"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
                ready=False,
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason="no topology domains at level: kubernetes.io/hostname",
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "no assignment as node is unschedulable; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "b1-r1-x3",
                {"zone": "zone-a", HOST: "x3"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
                unschedulable=True,
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason="no topology domains at level: kubernetes.io/hostname",
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "skip node which has untolerated taint; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "x3",
                {"zone": "zone-a", HOST: "x3"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
                taints=[Taint("example.com/gpu", "NoSchedule", "present")],
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: taint "example.com/gpu=present:NoSchedule": 1',
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "detailed failure message with exclusion stats",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "x1",
                {HOST: "x1"},
                {"cpu": "1", "pods": "10"},
                taints=[Taint("key", "NoSchedule", "value")],
            ),
            node("x2", {HOST: "x2", "zone": "zone-b"}, {"cpu": "1", "pods": "10"}),
            node("x3", {HOST: "x3", "zone": "zone-b"}, {"cpu": "2", "pods": "10"}),
            node("x4", {HOST: "x4", "zone": "zone-a"}, {"cpu": "100m", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                    node_selector={"zone": "zone-a"},
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; excluded: nodeSelector: 2, resource "cpu": 1, taint "key=value:NoSchedule": 1',
            ),
        ),
    ),
    KueueCase(
        "resource exclusion picks most restrictive resource",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "dual-shortage",
                {HOST: "dual-shortage"},
                {"cpu": "500m", "pods": "10", "example.com/gpu": "0"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1',
            ),
        ),
    ),
    KueueCase(
        "allow to schedule on node with tolerated taint; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "b1-r1-x3",
                {"zone": "zone-a", HOST: "x3"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
                taints=[Taint("example.com/gpu", "NoSchedule", "present")],
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                    tolerations=(
                        Toleration(key="example.com/gpu", operator="Equal", value="present"),
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "no assignment as node does not have enough allocatable pods (.status.allocatable['pods']); BestFit",
        levels=ONE_LEVEL,
        nodes=(node("b1-r1-x3", {"zone": "zone-a", HOST: "x3"}, {"cpu": "1000m", "pods": "1"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 300}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1',
            ),
        ),
        pods=(pod("test-running", "b1-r1-x3", "Running", {"cpu": "300m"}),),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "multiple PodSets account assumed pod usage against allocatable pods; BestFit",
        levels=ONE_LEVEL,
        nodes=(node("x1", {HOST: "x1"}, {"cpu": "2", "pods": "1"}),),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="one",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="two",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1',
            ),
        ),
    ),
    KueueCase(
        "skip node which doesn't match node selector, missing label; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node("x3", {"zone": "zone-a", HOST: "x3"}, {"cpu": "1", "memory": "1Gi", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 300}),
                    topology=TopologyRequest(required=HOST),
                    node_selector={"custom-label-1": "custom-value-1"},
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: nodeSelector: 1',
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "skip node which doesn't match node selector, label exists, value doesn't match; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "x3",
                {"zone": "zone-a", HOST: "x3", "custom-label-1": "value-1"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 300}),
                    topology=TopologyRequest(required=HOST),
                    node_selector={"custom-label-1": "value-2"},
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: nodeSelector: 1',
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "allow to schedule on node which matches node; BestFit",
        levels=ONE_LEVEL,
        nodes=(
            node(
                "b1-r1-x3",
                {"zone": "zone-a", HOST: "x3", "custom-label-1": "value-1"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
            ),
            node(
                "b1-r1-x5",
                {"zone": "zone-a", HOST: "x5", "custom-label-1": "value-2"},
                {"cpu": "1", "memory": "1Gi", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                    node_selector={"custom-label-1": "value-2"},
                ),
                want=assignment(ONE_LEVEL, [(("x5",), 1)]),
            ),
        ),
        node_labels={"zone": "zone-a"},
    ),
    KueueCase(
        "block required for podset; host required for slices; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 2), (("x3",), 2), (("x5",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "block required for podset; host required for slices; prioritize more free slice capacity first and then tight fit; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "6", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "5", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "4", "pods": "10"}),
            node("b1-r1-x6", {BLOCK: "b1", RACK: "r1", HOST: "x6"}, {"cpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=12,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 4), (("x3",), 6), (("x6",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "block required for podset; host required for slices; select domains with tight fit; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "2", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 2), (("x5",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "block required for podset; rack required for slices; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "1", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "1", "pods": "10"}),
            node("b1-r2-x1", {BLOCK: "b1", RACK: "r2", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("b1-r2-x6", {BLOCK: "b1", RACK: "r2", HOST: "x6"}, {"cpu": "1", "pods": "10"}),
            node("b1-r2-x2", {BLOCK: "b1", RACK: "r2", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
            node("b2-r1-x4", {BLOCK: "b2", RACK: "r1", HOST: "x4"}, {"cpu": "1", "pods": "10"}),
            node("b2-r1-x7", {BLOCK: "b2", RACK: "r1", HOST: "x7"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 2),)),
                ),
                want=assignment(
                    ONE_LEVEL, [(("x3",), 1), (("x5",), 1), (("x1",), 1), (("x2",), 1)]
                ),
            ),
        ),
    ),
    KueueCase(
        "block preferred for podset; rack required for slices; BestFit",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK, slice_layers=(SliceLayer(RACK, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1), (("x5",), 1), (("x4",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "block required for podset; host required for slices; optimize last domain; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "4", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 2), (("x3",), 4)]),
            ),
        ),
    ),
    KueueCase(
        "block preferred for podset; host required for slices; 2 blocks with unbalanced subdomains; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "3", "pods": "10"}),
            node("b2-r1-x6", {BLOCK: "b2", RACK: "r1", HOST: "x6"}, {"cpu": "6", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=12,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK, slice_layers=(SliceLayer(HOST, 3),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 3), (("x3",), 3), (("x6",), 6)]),
            ),
        ),
    ),
    KueueCase(
        "balanced placement; basic",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
            node(
                "b1-r2-x2",
                {BLOCK: "b1", RACK: "r2", HOST: "x2"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=25,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 13), (("x2",), 12)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; select optmial set of domains",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "15", "pods": "23"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "13", "pods": "23"},
            ),
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"example.com/gpu": "10", "pods": "23"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=23,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 12), (("x2",), 11)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; select optmial set of domains; with slices",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "20", "pods": "25"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"example.com/gpu": "10", "pods": "25"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=25,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK, slice_layers=(SliceLayer(HOST, 5),)),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 15), (("x3",), 10)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; select correct block",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "20", "pods": "22"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "10", "pods": "22"},
            ),
            node(
                "b2-r2-x3",
                {BLOCK: "b2", RACK: "r2", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "22"},
            ),
            node(
                "b2-r2-x4",
                {BLOCK: "b2", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "15", "pods": "22"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=22,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 11), (("x4",), 11)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; cannot chose domains from different blocks",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "14", "pods": "25"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "11", "pods": "25"},
            ),
            node(
                "b2-r2-x3",
                {BLOCK: "b2", RACK: "r2", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
            node(
                "b2-r2-x4",
                {BLOCK: "b2", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "10", "pods": "25"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=25,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 14), (("x2",), 11)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; select correct block; prefer blocks with single rack; with slices",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
            node(
                "b1-r2-x2",
                {BLOCK: "b1", RACK: "r2", HOST: "x2"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
            node(
                "b1-r3-x3",
                {BLOCK: "b1", RACK: "r3", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
            node(
                "b1-r3-x4",
                {BLOCK: "b1", RACK: "r3", HOST: "x4"},
                {"example.com/gpu": "15", "pods": "25"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=25,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK, slice_layers=(SliceLayer(HOST, 5),)),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 15), (("x4",), 10)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; four level topology; slice two levels below balanced level",
        levels=(BLOCK, SUBBLOCK, RACK, HOST),
        nodes=(
            node(
                "b1-sb1-r1-x1",
                {BLOCK: "b1", SUBBLOCK: "sb1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "18", "pods": "20"},
            ),
            node(
                "b1-sb1-r2-x2",
                {BLOCK: "b1", SUBBLOCK: "sb1", RACK: "r2", HOST: "x2"},
                {"example.com/gpu": "8", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x3",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r3", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x4",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r4", HOST: "x4"},
                {"example.com/gpu": "9", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x5",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r4", HOST: "x5"},
                {"example.com/gpu": "7", "pods": "20"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=20,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=SUBBLOCK, slice_layers=(SliceLayer(HOST, 2),)
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 10), (("x4",), 8), (("x5",), 2)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; four level topology; slice one level below balanced level",
        levels=(BLOCK, SUBBLOCK, RACK, HOST),
        nodes=(
            node(
                "b1-sb1-r1-x1",
                {BLOCK: "b1", SUBBLOCK: "sb1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "18", "pods": "20"},
            ),
            node(
                "b1-sb1-r2-x2",
                {BLOCK: "b1", SUBBLOCK: "sb1", RACK: "r2", HOST: "x2"},
                {"example.com/gpu": "8", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x3",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r3", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x4",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r4", HOST: "x4"},
                {"example.com/gpu": "9", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x5",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r4", HOST: "x5"},
                {"example.com/gpu": "7", "pods": "20"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=20,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=SUBBLOCK, slice_layers=(SliceLayer(RACK, 2),)
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 10), (("x4",), 3), (("x5",), 7)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; four level topology; balance on rack level; slice not on the lowest level",
        levels=(BLOCK, SUBBLOCK, RACK),
        nodes=(
            node(
                "b1-sb1-r1-x1",
                {BLOCK: "b1", SUBBLOCK: "sb1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "18", "pods": "20"},
            ),
            node(
                "b1-sb1-r2-x2",
                {BLOCK: "b1", SUBBLOCK: "sb1", RACK: "r2", HOST: "x2"},
                {"example.com/gpu": "8", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x3",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r3", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "20"},
            ),
            node(
                "b1-sb1-r3-x4",
                {BLOCK: "b1", SUBBLOCK: "sb2", RACK: "r4", HOST: "x4"},
                {"example.com/gpu": "15", "pods": "20"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=20,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=SUBBLOCK, slice_layers=(SliceLayer(RACK, 2),)
                    ),
                ),
                want=assignment(
                    (BLOCK, SUBBLOCK, RACK), [(("b1", "sb2", "r3"), 10), (("b1", "sb2", "r4"), 10)]
                ),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; three level topology; balance on the same level as slice",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "15", "pods": "22"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "13", "pods": "22"},
            ),
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"example.com/gpu": "10", "pods": "22"},
            ),
            node(
                "b1-r2-x4",
                {BLOCK: "b1", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "20", "pods": "22"},
            ),
            node(
                "b1-r2-x5",
                {BLOCK: "b1", RACK: "r2", HOST: "x5"},
                {"example.com/gpu": "8", "pods": "22"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=22,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=HOST, slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 12), (("x3",), 10)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; three level topology; balance on the lowest level",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "20", "pods": "22"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "8", "pods": "22"},
            ),
            node(
                "b1-r2-x3",
                {BLOCK: "b1", RACK: "r2", HOST: "x3"},
                {"example.com/gpu": "15", "pods": "22"},
            ),
            node(
                "b1-r2-x4",
                {BLOCK: "b1", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "13", "pods": "22"},
            ),
            node(
                "b1-r2-x5",
                {BLOCK: "b1", RACK: "r2", HOST: "x5"},
                {"example.com/gpu": "10", "pods": "22"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=22,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 11), (("x4",), 11)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; leader worker set",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "20", "pods": "24"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "15", "pods": "24"},
            ),
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"example.com/gpu": "12", "pods": "24"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=RACK, slice_layers=(SliceLayer(HOST, 0),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=25,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=RACK, slice_layers=(SliceLayer(HOST, 5),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 15), (("x3",), 10)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; prioritize (using entropy) balanced domains; second rack wins",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "10", "pods": "20"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b1-r2-x3",
                {BLOCK: "b1", RACK: "r2", HOST: "x3"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b1-r2-x4",
                {BLOCK: "b1", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b1-r2-x5",
                {BLOCK: "b1", RACK: "r2", HOST: "x5"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=15,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 5), (("x4",), 5), (("x5",), 5)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; prioritize (using entropy) balanced domains; first rack wins",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "8", "pods": "24"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "8", "pods": "24"},
            ),
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"example.com/gpu": "8", "pods": "24"},
            ),
            node(
                "b1-r2-x4",
                {BLOCK: "b1", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "16", "pods": "24"},
            ),
            node(
                "b1-r2-x5",
                {BLOCK: "b1", RACK: "r2", HOST: "x5"},
                {"example.com/gpu": "8", "pods": "24"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=24,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 8), (("x2",), 8), (("x3",), 8)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; two level topology; balance on the highest level",
        levels=(RACK, HOST),
        nodes=(
            node("r1-x1", {RACK: "r1", HOST: "x1"}, {"example.com/gpu": "21", "pods": "22"}),
            node("r1-x2", {RACK: "r1", HOST: "x2"}, {"example.com/gpu": "9", "pods": "22"}),
            node("r2-x3", {RACK: "r2", HOST: "x3"}, {"example.com/gpu": "11", "pods": "22"}),
            node("r2-x4", {RACK: "r2", HOST: "x4"}, {"example.com/gpu": "10", "pods": "22"}),
            node("r2-x5", {RACK: "r2", HOST: "x5"}, {"example.com/gpu": "10", "pods": "22"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=23,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 12), (("x3",), 11)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; select correct block taking into account pruning",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b1-r2-x3",
                {BLOCK: "b1", RACK: "r2", HOST: "x3"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b1-r2-x4",
                {BLOCK: "b1", RACK: "r2", HOST: "x4"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b2-r3-x5",
                {BLOCK: "b2", RACK: "r3", HOST: "x5"},
                {"example.com/gpu": "10", "pods": "20"},
            ),
            node(
                "b2-r3-x6",
                {BLOCK: "b2", RACK: "r3", HOST: "x6"},
                {"example.com/gpu": "4", "pods": "20"},
            ),
            node(
                "b2-r3-x7",
                {BLOCK: "b2", RACK: "r3", HOST: "x7"},
                {"example.com/gpu": "4", "pods": "20"},
            ),
            node(
                "b2-r3-x8",
                {BLOCK: "b2", RACK: "r3", HOST: "x8"},
                {"example.com/gpu": "4", "pods": "20"},
            ),
            node(
                "b2-r4-x9",
                {BLOCK: "b2", RACK: "r4", HOST: "x9"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
            node(
                "b2-r5-x10",
                {BLOCK: "b2", RACK: "r5", HOST: "x10"},
                {"example.com/gpu": "5", "pods": "20"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=20,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK),
                ),
                want=assignment(
                    ONE_LEVEL, [(("x1",), 5), (("x2",), 5), (("x3",), 5), (("x4",), 5)]
                ),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; should not prune domain",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "6", "pods": "24"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "5", "pods": "24"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=RACK, slice_layers=(SliceLayer(HOST, 0),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=10,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 5), (("x2",), 5)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; leader worker set does not reserve leader space on every node",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "7", "pods": "12"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"example.com/gpu": "5", "pods": "12"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=RACK, slice_layers=(SliceLayer(HOST, 0),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=10,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 5), (("x2",), 5)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "balanced placement; fallback to BestFit when leader worker set cannot meet threshold",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"example.com/gpu": "3", "pods": "12"},
            ),
            node(
                "b1-r2-x2",
                {BLOCK: "b1", RACK: "r2", HOST: "x2"},
                {"example.com/gpu": "3", "pods": "12"},
            ),
            node(
                "b1-r3-x3",
                {BLOCK: "b1", RACK: "r3", HOST: "x3"},
                {"example.com/gpu": "8", "pods": "12"},
            ),
            node(
                "b2-r1-x4",
                {BLOCK: "b2", RACK: "r1", HOST: "x4"},
                {"example.com/gpu": "11", "pods": "12"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"example.com/gpu": 5}),
                    topology=TopologyRequest(
                        preferred=BLOCK, slice_layers=(SliceLayer(HOST, 0),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=7,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(preferred=BLOCK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 3), (("x2",), 1), (("x3",), 3)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "block required for podset; rack required for slices; podset fits in a block, but slices do not fit in racks",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "2", "pods": "10"}),
            node("b1-r2-x5", {BLOCK: "b1", RACK: "r2", HOST: "x5"}, {"cpu": "2", "pods": "10"}),
            node("b1-r3-x1", {BLOCK: "b1", RACK: "r3", HOST: "x1"}, {"cpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 3),)),
                ),
                reason='topology "default" doesn\'t allow to fit any of 2 slice(s)',
            ),
        ),
    ),
    KueueCase(
        "block required for podset; rack required for slices; only 1 out of 2 slices fit the topology",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r2-x5", {BLOCK: "b1", RACK: "r2", HOST: "x5"}, {"cpu": "1", "pods": "10"}),
            node("b1-r3-x1", {BLOCK: "b1", RACK: "r3", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("b1-r4-x6", {BLOCK: "b1", RACK: "r4", HOST: "x6"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 3),)),
                ),
                reason='topology "default" allows to fit only 1 out of 2 slice(s)',
            ),
        ),
    ),
    KueueCase(
        "block required for podset; rack required for slices; podset fits in both blocks, but slices fit in only one block",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "2", "pods": "10"}),
            node("b1-r2-x5", {BLOCK: "b1", RACK: "r2", HOST: "x5"}, {"cpu": "2", "pods": "10"}),
            node("b1-r3-x1", {BLOCK: "b1", RACK: "r3", HOST: "x1"}, {"cpu": "2", "pods": "10"}),
            node("b2-r4-x6", {BLOCK: "b2", RACK: "r4", HOST: "x6"}, {"cpu": "3", "pods": "10"}),
            node("b2-r5-x2", {BLOCK: "b2", RACK: "r5", HOST: "x2"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 3),)),
                ),
                want=assignment(ONE_LEVEL, [(("x6",), 3), (("x2",), 3)]),
            ),
        ),
    ),
    KueueCase(
        "slice required topology level cannot be above the main required topology level",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST, slice_layers=(SliceLayer(BLOCK, 1),)),
                ),
                reason="podset slice topology cloud.com/topology-block is above the podset topology kubernetes.io/hostname",
            ),
        ),
    ),
    KueueCase(
        "slice size is required when slice topology is requested",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(HOST, 0),)),
                ),
                reason="slice topology requested, but slice size not provided",
            ),
        ),
    ),
    KueueCase(
        "cannot request not existing slice topology",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=BLOCK, slice_layers=(SliceLayer("not-existing-topology-level", 1),)
                    ),
                ),
                reason="no requested topology level for slices: not-existing-topology-level",
            ),
        ),
    ),
    KueueCase(
        "no topology for podset; host required for slices; BestFit",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x5", {BLOCK: "b1", RACK: "r1", HOST: "x5"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 2), (("x3",), 2), (("x5",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "no topology for podset; host required for slices; multiple blocks; BestFit",
        levels=THREE_LEVELS,
        nodes=SCATTERED_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(slice_layers=(SliceLayer(HOST, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 4), (("x6",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "no topology for podset; rack required for slices; multiple blocks; BestFit",
        levels=THREE_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=4,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(slice_layers=(SliceLayer(RACK, 2),)),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1), (("x5",), 1), (("x4",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with overlapping domain",
        levels=(BLOCK,),
        nodes=(
            node("b1", {BLOCK: "b1"}, {"cpu": "2", "pods": "10"}),
            node("b2", {BLOCK: "b2"}, {"cpu": "2", "pods": "10"}),
            node("b3", {BLOCK: "b3"}, {"cpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="podset1",
                    count=3,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK),
                ),
                want=assignment((BLOCK,), [(("b1",), 2), (("b2",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="podset2",
                    count=3,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK),
                ),
                want=assignment((BLOCK,), [(("b2",), 1), (("b3",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group",
        levels=(BLOCK,),
        nodes=(
            node(
                "b1",
                {BLOCK: "b1"},
                {"cpu": "2", "example.com/gpu": "2", "memory": "2Gi", "pods": "10"},
            ),
            node("b2", {BLOCK: "b2"}, {"cpu": "5", "example.com/gpu": "4", "pods": "10"}),
            node("b3", {BLOCK: "b3"}, {"cpu": "2", "example.com/gpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment((BLOCK,), [(("b2",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=4,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment((BLOCK,), [(("b2",), 4)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for grouped podsets preserves worker capacity when placing leader",
        levels=(RACK, HOST),
        nodes=(
            node("h1", {RACK: "r1", HOST: "h1"}, {"cpu": "2", "pods": "10"}),
            node("h2", {RACK: "r1", HOST: "h2"}, {"cpu": "4", "pods": "10"}),
            node("h3", {RACK: "r1", HOST: "h3"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h3",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=4,
                    requests=kueue_requests({"cpu": 2000}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h1",), 1), (("h2",), 2), (("h3",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for sliced grouped podsets preserves worker capacity when placing leader",
        levels=(RACK, HOST),
        nodes=(
            node("h1", {RACK: "r1", HOST: "h1"}, {"cpu": "2", "pods": "10"}),
            node("h2", {RACK: "r1", HOST: "h2"}, {"cpu": "4", "pods": "10"}),
            node("h3", {RACK: "r1", HOST: "h3"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h3",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=8,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=RACK, slice_layers=(SliceLayer(HOST, 2),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("h1",), 2), (("h2",), 4), (("h3",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for preferred grouped podsets preserves capacity across domains",
        levels=ONE_LEVEL,
        nodes=(
            node("h1", {HOST: "h1"}, {"cpu": "8", "pods": "10"}),
            node("h2", {HOST: "h2"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=HOST, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h2",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=5,
                    requests=kueue_requests({"cpu": 2000}),
                    topology=TopologyRequest(preferred=HOST, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h1",), 4), (("h2",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for unconstrained grouped podsets spreads leader and worker across domains with TASProfileMixed",
        levels=ONE_LEVEL,
        nodes=(
            node("h1", {HOST: "h1"}, {"cpu": "1", "pods": "10"}),
            node("h2", {HOST: "h2"}, {"example.com/gpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(unconstrained=True, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=1,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(unconstrained=True, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("h2",), 1)]),
            ),
        ),
        gates={"TASProfileMixed": True},
    ),
    KueueCase(
        "find topology assignment for grouped podsets preserves leader below the slice level",
        levels=(RACK, HOST),
        nodes=(
            node("leader-host", {RACK: "r1", HOST: "leader-host"}, {"cpu": "1", "pods": "10"}),
            node(
                "worker-host",
                {RACK: "r1", HOST: "worker-host"},
                {"example.com/gpu": "1", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=RACK, slice_layers=(SliceLayer(RACK, 1),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("leader-host",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=1,
                    requests=kueue_requests({"example.com/gpu": 1}),
                    topology=TopologyRequest(
                        required=RACK, slice_layers=(SliceLayer(RACK, 1),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("worker-host",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group with domains that can tightly fit leader and workers",
        levels=(BLOCK,),
        nodes=(
            node("b1", {BLOCK: "b1"}, {"cpu": "2", "example.com/gpu": "2", "pods": "10"}),
            node("b2", {BLOCK: "b2"}, {"cpu": "8", "example.com/gpu": "8", "pods": "10"}),
            node("b3", {BLOCK: "b3"}, {"cpu": "2", "example.com/gpu": "2", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment((BLOCK,), [(("b2",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=4,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 2}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment((BLOCK,), [(("b2",), 4)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for grouped podsets skips domain where only workers fit without leader",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "small-used",
                {BLOCK: "b1", RACK: "small", HOST: "small-used"},
                {"cpu": "2800m", "pods": "10"},
            ),
            node(
                "small-free",
                {BLOCK: "b1", RACK: "small", HOST: "small-free"},
                {"cpu": "2800m", "pods": "10"},
            ),
            node(
                "large-free",
                {BLOCK: "b1", RACK: "large", HOST: "large-free"},
                {"cpu": "6", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 2500}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("large-free",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=1,
                    requests=kueue_requests({"cpu": 2500}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("large-free",), 1)]),
            ),
        ),
        pods=(pod("filler", "small-used", "Running", {"cpu": "2500m"}),),
    ),
    KueueCase(
        "find topology assignment for grouped podsets skips domain where mixed-size workers only fit without leader",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "small-used",
                {BLOCK: "b1", RACK: "small", HOST: "small-used"},
                {"cpu": "2800m", "pods": "10"},
            ),
            node(
                "small-free",
                {BLOCK: "b1", RACK: "small", HOST: "small-free"},
                {"cpu": "2800m", "pods": "10"},
            ),
            node(
                "large-free",
                {BLOCK: "b1", RACK: "large", HOST: "large-free"},
                {"cpu": "6", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 2500}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("large-free",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=2,
                    requests=kueue_requests({"cpu": 500}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("large-free",), 2)]),
            ),
        ),
        pods=(pod("filler", "small-used", "Running", {"cpu": "2500m"}),),
    ),
    KueueCase(
        "find topology assignment for grouped podsets keeps tight domain when leader and workers fit together",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "small-used",
                {BLOCK: "b1", RACK: "small", HOST: "small-used"},
                {"cpu": "2800m", "pods": "10"},
            ),
            node(
                "small-free",
                {BLOCK: "b1", RACK: "small", HOST: "small-free"},
                {"cpu": "2800m", "pods": "10"},
            ),
            node(
                "large-free",
                {BLOCK: "b1", RACK: "large", HOST: "large-free"},
                {"cpu": "6", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("small-free",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("small-free",), 1)]),
            ),
        ),
        pods=(pod("filler", "small-used", "Running", {"cpu": "2500m"}),),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group - no fit",
        levels=(BLOCK,),
        nodes=(
            node("b1", {BLOCK: "b1"}, {"cpu": "1", "example.com/gpu": "0", "pods": "10"}),
            node("b2", {BLOCK: "b2"}, {"cpu": "4", "example.com/gpu": "4", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                reason='topology "default" allows to fit only 4 out of 4 pod(s). Total nodes: 2; excluded: resource "example.com/gpu": 1',
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=4,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                reason='topology "default" allows to fit only 4 out of 4 pod(s). Total nodes: 2; excluded: resource "example.com/gpu": 1',
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group - optimizes domain for both leader and workers",
        levels=(BLOCK,),
        nodes=(
            node("b1", {BLOCK: "b1"}, {"cpu": "11", "example.com/gpu": "8", "pods": "10"}),
            node("b2", {BLOCK: "b2"}, {"cpu": "4", "example.com/gpu": "4", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment((BLOCK,), [(("b1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=4,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment((BLOCK,), [(("b1",), 4)]),
            ),
        ),
    ),
    KueueCase(
        "BestFit: podset group workers spread across hosts",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"cpu": "20", "example.com/gpu": "4", "pods": "10"},
            ),
            node(
                "b1-r1-x2",
                {BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"cpu": "20", "example.com/gpu": "2", "pods": "10"},
            ),
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"cpu": "20", "example.com/gpu": "2", "pods": "10"},
            ),
            node(
                "b1-r1-x4",
                {BLOCK: "b1", RACK: "r1", HOST: "x4"},
                {"cpu": "20", "example.com/gpu": "2", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(preferred=BLOCK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=6,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(
                        preferred=BLOCK, slice_layers=(SliceLayer(HOST, 2),), group_name="sameGroup"
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 4), (("x2",), 2)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group - leader does not fit anywhere",
        levels=(BLOCK,),
        nodes=(
            node("b1", {BLOCK: "b1"}, {"cpu": "4", "example.com/gpu": "4", "pods": "10"}),
            node("b2", {BLOCK: "b2"}, {"cpu": "4", "example.com/gpu": "4", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 10000}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                reason='topology "default" allows to fit only 4 out of 4 pod(s)',
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=4,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                reason='topology "default" allows to fit only 4 out of 4 pod(s)',
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group - multiple hosts",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"cpu": "2", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b1-r1-x5",
                {BLOCK: "b1", RACK: "r1", HOST: "x5"},
                {"cpu": "2", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b1-r1-x1",
                {BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"cpu": "2", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r4-x6",
                {BLOCK: "b2", RACK: "r4", HOST: "x6"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r5-x2",
                {BLOCK: "b2", RACK: "r5", HOST: "x2"},
                {"cpu": "2", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r6-x4",
                {BLOCK: "b2", RACK: "r6", HOST: "x4"},
                {"cpu": "2", "pods": "10", "example.com/gpu": "1"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 2000}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=2,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1), (("x5",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "find topology assignment for two podsets with the same group requesting same resources and nodes in the same rack",
        levels=THREE_LEVELS,
        nodes=(
            node(
                "b1-r1-x3",
                {BLOCK: "b1", RACK: "r1", HOST: "x3"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b1-r1-x5",
                {BLOCK: "b1", RACK: "r1", HOST: "x5"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b1-r2-x1",
                {BLOCK: "b1", RACK: "r2", HOST: "x1"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b1-r2-x6",
                {BLOCK: "b1", RACK: "r2", HOST: "x6"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r3-x2",
                {BLOCK: "b2", RACK: "r3", HOST: "x2"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r3-x4",
                {BLOCK: "b2", RACK: "r3", HOST: "x4"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r4-x7",
                {BLOCK: "b2", RACK: "r4", HOST: "x7"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
            node(
                "b2-r4-x8",
                {BLOCK: "b2", RACK: "r4", HOST: "x8"},
                {"cpu": "1", "pods": "10", "example.com/gpu": "1"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x3",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=2,
                    requests=kueue_requests({"cpu": 1000, "example.com/gpu": 1}),
                    topology=TopologyRequest(required=BLOCK, group_name="sameGroup"),
                ),
                want=assignment(ONE_LEVEL, [(("x5",), 1), (("x1",), 1)]),
            ),
        ),
    ),
    KueueCase(
        "multiple podsets: rack required for both, different resource requests; BestFit",
        levels=TWO_LEVELS,
        nodes=MULTIPOD_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="podset1",
                    count=2,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 2)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="podset2",
                    count=1,
                    requests=kueue_requests({"memory": 1024}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 1)]),
            ),
        ),
    ),
    KueueCase(
        "multiple podsets: block required for one, unconstrained for another; TASProfileMixed",
        levels=THREE_LEVELS,
        nodes=MULTIPOD_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="podset1",
                    count=8,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 8)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="podset2",
                    count=2,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(unconstrained=True),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 2)]),
            ),
        ),
        gates={"TASProfileMixed": True},
    ),
    KueueCase(
        "temporary state cleanup prevents leakage across PodSets",
        levels=ONE_LEVEL,
        nodes=(
            node("n1", {HOST: "x1"}, {"cpu": "4", "memory": "4Gi", "pods": "10"}),
            node("n2", {HOST: "x2"}, {"cpu": "4", "memory": "4Gi", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="ps1",
                    count=1,
                    requests=kueue_requests({"cpu": 1000, "memory": 1000}),
                    topology=TopologyRequest(),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="ps2",
                    count=1,
                    requests=kueue_requests({"cpu": 1000, "memory": 1000}),
                    topology=TopologyRequest(),
                    node_selector={"never": "match"},
                ),
                reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 2; excluded: nodeSelector: 2',
            ),
        ),
    ),
    KueueCase(
        "multi-layer topology: block required; rack slices of 4; host slices of 2; TASMultiLayerTopology",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("b1-r1-x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "4", "pods": "10"}),
            node("b1-r2-x3", {BLOCK: "b1", RACK: "r2", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r2-x4", {BLOCK: "b1", RACK: "r2", HOST: "x4"}, {"cpu": "4", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=8,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=BLOCK, slice_layers=(SliceLayer(RACK, 4), SliceLayer(HOST, 2))
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 4), (("x3",), 2), (("x4",), 2)]),
            ),
        ),
        gates={"TASMultiLayerTopology": True},
    ),
    KueueCase(
        "multi-layer topology: no feature gate; additional layers ignored",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("b1-r1-x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "4", "pods": "10"}),
            node("b1-r2-x3", {BLOCK: "b1", RACK: "r2", HOST: "x3"}, {"cpu": "3", "pods": "10"}),
            node("b1-r2-x4", {BLOCK: "b1", RACK: "r2", HOST: "x4"}, {"cpu": "4", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=8,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 4),)),
                ),
                want=assignment(
                    ONE_LEVEL, [(("x1",), 1), (("x2",), 3), (("x3",), 3), (("x4",), 1)]
                ),
            ),
        ),
    ),
    KueueCase(
        "multi-layer topology: host slice rounding makes rack slice impossible",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "3", "pods": "10"}),
            node("b1-r1-x3", {BLOCK: "b1", RACK: "r1", HOST: "x3"}, {"cpu": "0", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=6,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=BLOCK, slice_layers=(SliceLayer(RACK, 6), SliceLayer(HOST, 2))
                    ),
                ),
                reason='topology "default" doesn\'t allow to fit; 0/1 slice(s) fit on level cloud.com/topology-rack; 2/3 slice(s) fit on level kubernetes.io/hostname. Total nodes: 3; excluded: resource "cpu": 1',
            ),
        ),
        gates={"TASMultiLayerTopology": True},
    ),
    KueueCase(
        "multi-layer topology: small host kills rack slices despite enough total capacity",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "7", "pods": "10"}),
            node("b1-r1-x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "4", "pods": "10"}),
            node("b1-r2-x3", {BLOCK: "b1", RACK: "r2", HOST: "x3"}, {"cpu": "7", "pods": "10"}),
            node("b1-r2-x4", {BLOCK: "b1", RACK: "r2", HOST: "x4"}, {"cpu": "3", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=16,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=BLOCK, slice_layers=(SliceLayer(RACK, 8), SliceLayer(HOST, 4))
                    ),
                ),
                reason='topology "default" doesn\'t allow to fit; 1/2 slice(s) fit on level cloud.com/topology-rack; 3/4 slice(s) fit on level kubernetes.io/hostname',
            ),
        ),
        gates={"TASMultiLayerTopology": True},
    ),
    KueueCase(
        "multi-layer topology: enough hostname slices but not enough rack slices",
        levels=THREE_LEVELS,
        nodes=(
            node("b1-r1-x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "4", "pods": "10"}),
            node("b1-r2-x2", {BLOCK: "b1", RACK: "r2", HOST: "x2"}, {"cpu": "4", "pods": "10"}),
            node("b1-r3-x3", {BLOCK: "b1", RACK: "r3", HOST: "x3"}, {"cpu": "4", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=12,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=BLOCK, slice_layers=(SliceLayer(RACK, 6), SliceLayer(HOST, 2))
                    ),
                ),
                reason='topology "default" doesn\'t allow to fit; 0/2 slice(s) fit on level cloud.com/topology-rack; 6/6 slice(s) fit on level kubernetes.io/hostname',
            ),
        ),
        gates={"TASMultiLayerTopology": True},
    ),
    KueueCase(
        "multi-layer topology: 3-layer negative case with small hosts cascading up",
        levels=(DATACENTER, BLOCK, RACK, HOST),
        nodes=(
            node(
                "dc1-b1-r1-x1",
                {DATACENTER: "dc1", BLOCK: "b1", RACK: "r1", HOST: "x1"},
                {"cpu": "4", "pods": "10"},
            ),
            node(
                "dc1-b1-r1-x2",
                {DATACENTER: "dc1", BLOCK: "b1", RACK: "r1", HOST: "x2"},
                {"cpu": "4", "pods": "10"},
            ),
            node(
                "dc1-b1-r2-x3",
                {DATACENTER: "dc1", BLOCK: "b1", RACK: "r2", HOST: "x3"},
                {"cpu": "4", "pods": "10"},
            ),
            node(
                "dc1-b1-r2-x4",
                {DATACENTER: "dc1", BLOCK: "b1", RACK: "r2", HOST: "x4"},
                {"cpu": "4", "pods": "10"},
            ),
            node(
                "dc1-b2-r3-x5",
                {DATACENTER: "dc1", BLOCK: "b2", RACK: "r3", HOST: "x5"},
                {"cpu": "4", "pods": "10"},
            ),
            node(
                "dc1-b2-r3-x6",
                {DATACENTER: "dc1", BLOCK: "b2", RACK: "r3", HOST: "x6"},
                {"cpu": "4", "pods": "10"},
            ),
            node(
                "dc1-b2-r4-x7",
                {DATACENTER: "dc1", BLOCK: "b2", RACK: "r4", HOST: "x7"},
                {"cpu": "1", "pods": "10"},
            ),
            node(
                "dc1-b2-r4-x8",
                {DATACENTER: "dc1", BLOCK: "b2", RACK: "r4", HOST: "x8"},
                {"cpu": "1", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=24,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(
                        required=DATACENTER,
                        slice_layers=(
                            SliceLayer(BLOCK, 12),
                            SliceLayer(RACK, 6),
                            SliceLayer(HOST, 3),
                        ),
                    ),
                ),
                reason='topology "default" doesn\'t allow to fit; 1/2 slice(s) fit on level cloud.com/topology-block; 3/4 slice(s) fit on level cloud.com/topology-rack; 6/8 slice(s) fit on level kubernetes.io/hostname',
            ),
        ),
        gates={"TASMultiLayerTopology": True},
    ),
    KueueCase(
        "optimize the last domain for LWS using BestFit",
        levels=("cloud.com/topology-zone", RACK, HOST),
        nodes=(
            node(
                "dom1-node",
                {"cloud.com/topology-zone": "dom1", RACK: "rack1", HOST: "dom1-node"},
                {"cpu": "10", "memory": "10Gi", "pods": "10"},
            ),
            node(
                "dom2-node",
                {"cloud.com/topology-zone": "dom2", RACK: "rack2", HOST: "dom2-node"},
                {"cpu": "6", "memory": "10Gi", "pods": "10"},
            ),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="leader",
                    count=1,
                    requests=kueue_requests({"cpu": 1000, "memory": 1073741824}),
                    topology=TopologyRequest(
                        required="cloud.com/topology-zone",
                        slice_layers=(SliceLayer(RACK, 1),),
                        group_name="lws",
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("dom2-node",), 1)]),
            ),
            ExpectedPodSet(
                PodSetRequest(
                    name="workers",
                    count=5,
                    requests=kueue_requests({"cpu": 1000, "memory": 1073741824}),
                    topology=TopologyRequest(
                        required="cloud.com/topology-zone",
                        slice_layers=(SliceLayer(RACK, 1),),
                        group_name="lws",
                    ),
                ),
                want=assignment(ONE_LEVEL, [(("dom2-node",), 5)]),
            ),
        ),
    ),
    KueueCase(
        "sibling-flavor usage on the shared hostname reduces remaining capacity",
        levels=(BLOCK, HOST),
        nodes=(
            node("b1-x1", {BLOCK: "b1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("b1-x2", {BLOCK: "b1", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="main",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x2",), 1)]),
            ),
        ),
        prior_usage=(PriorUsage(("x1",), 1, {"cpu": 1000}),),
    ),
    KueueCase(
        "non-hostname-leaf topology: nil aggregatedDomainUsages preserves per-flavor behavior",
        levels=TWO_LEVELS,
        nodes=DEFAULT_NODES,
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="main",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b1", "r1"), 1)]),
            ),
        ),
    ),
    KueueCase(
        "non-hostname-leaf topology: prior c.usage must be applied even when aggregatedDomainUsages is non-nil empty",
        levels=TWO_LEVELS,
        nodes=(
            node("b1-r1", {BLOCK: "b1", RACK: "r1"}, {"cpu": "1", "pods": "10"}),
            node("b1-r2", {BLOCK: "b1", RACK: "r2"}, {"cpu": "1", "pods": "10"}),
            node("b2-r1", {BLOCK: "b2", RACK: "r1"}, {"cpu": "1", "pods": "10"}),
            node("b2-r2", {BLOCK: "b2", RACK: "r2"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="main",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=RACK),
                ),
                want=assignment(TWO_LEVELS, [(("b2", "r1"), 1)]),
            ),
        ),
        prior_usage=(
            PriorUsage(("b1", "r1"), 1, {"cpu": 1000}),
            PriorUsage(("b1", "r2"), 1, {"cpu": 1000}),
        ),
    ),
    KueueCase(
        "stable tie break on identical nodes: TASBalancedPlacement enabled",
        levels=THREE_LEVELS,
        nodes=(
            node("x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
            node("x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "stable tie break on identical nodes: TASBalancedPlacement disabled",
        levels=THREE_LEVELS,
        nodes=(
            node("x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
            node("x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
        ),
        gates={"TASBalancedPlacement": False},
    ),
    KueueCase(
        "stable tie break on identical nodes: reversed order, TASBalancedPlacement enabled",
        levels=THREE_LEVELS,
        nodes=(
            node("x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
        ),
        gates={"TASBalancedPlacement": True},
    ),
    KueueCase(
        "stable tie break on identical nodes: reversed order, TASBalancedPlacement disabled",
        levels=THREE_LEVELS,
        nodes=(
            node("x1", {BLOCK: "b1", RACK: "r1", HOST: "x1"}, {"cpu": "1", "pods": "10"}),
            node("x2", {BLOCK: "b1", RACK: "r1", HOST: "x2"}, {"cpu": "1", "pods": "10"}),
        ),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=1,
                    requests=kueue_requests({"cpu": 1000}),
                    topology=TopologyRequest(required=HOST),
                ),
                want=assignment(ONE_LEVEL, [(("x1",), 1)]),
            ),
        ),
        gates={"TASBalancedPlacement": False},
    ),
)


def _gb200_nodes() -> tuple:
    """1 datacenter x 2 AI zones x 2 blocks x 2 racks, 18 two-GPU nodes per rack (Kueue builds
    these in a loop, so this case is ported by hand)."""
    racks = [
        ("aizone0", "block0", "r0"),
        ("aizone0", "block0", "r1"),
        ("aizone0", "block1", "r2"),
        ("aizone0", "block1", "r3"),
        ("aizone1", "block2", "r4"),
        ("aizone1", "block2", "r5"),
        ("aizone1", "block3", "r6"),
        ("aizone1", "block3", "r7"),
    ]
    return tuple(
        node(
            f"{block}-{rack}-{zone}-n{i}",
            {DATACENTER: "dc0", AIZONE: zone, BLOCK: block, RACK: rack},
            {"nvidia.com/gpu": "2", "pods": "110"},
        )
        for zone, block, rack in racks
        for i in range(18)
    )


_GB200_LEVELS = (DATACENTER, AIZONE, BLOCK, RACK)

CASES += (
    KueueCase(
        "multi-layer topology: mimic a real-world GB200 cluster, with NVL36 arch (2GPUs/node); "
        "dc required; aizone slices of 48; rack slices of 16; TASMultiLayerTopology",
        levels=_GB200_LEVELS,
        nodes=_gb200_nodes(),
        podsets=(
            ExpectedPodSet(
                PodSetRequest(
                    name="",
                    count=96,
                    requests=kueue_requests({"nvidia.com/gpu": 2}),
                    topology=TopologyRequest(
                        required=DATACENTER,
                        slice_layers=(SliceLayer(AIZONE, 48), SliceLayer(RACK, 16)),
                    ),
                ),
                want=assignment(
                    _GB200_LEVELS,
                    [
                        (("dc0", "aizone0", "block0", "r0"), 16),
                        (("dc0", "aizone0", "block0", "r1"), 16),
                        (("dc0", "aizone0", "block1", "r2"), 16),
                        (("dc0", "aizone1", "block2", "r4"), 16),
                        (("dc0", "aizone1", "block2", "r5"), 16),
                        (("dc0", "aizone1", "block3", "r6"), 16),
                    ],
                ),
            ),
        ),
        gates={"TASMultiLayerTopology": True},
    ),
)
