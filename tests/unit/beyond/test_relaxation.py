"""Wait, then relax (gate TASTopologyRelaxation): the annotation's rules, the stage a pod set
is in at a time, the decision and its message, and the loop's timer."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission.decide import decide
from tas.admission.loop import AdmissionLoop
from tas.api.annotations import TopologyRequestError
from tas.api.constants import PODSET_REQUIRED_TOPOLOGY, PODSET_TOPOLOGY_RELAXATION
from tas.api.relaxation import Stage, parse_duration, parse_relaxation, relax
from tas.api.topologyassignment import v1beta2_to_v1beta1
from tas.cache import projections as proj
from tas.solver.types import PodSetRequest, TopologyRequest
from tests.unit.admission.fixtures import BLOCK, HOST, RACK, make_state, node, workload
from tests.unit.admission.test_loop import FakeWriter, add
from tests.unit.gates import gates
from tests.unit.solver_properties.test_invariants import clusters

GATE = {"TASTopologyRelaxation": True}
CREATED = datetime(2026, 1, 1)


def annotations(text: str | None, required: str | None = RACK, **more: str) -> dict[str, str]:
    out = dict(more)
    if required is not None:
        out[PODSET_REQUIRED_TOPOLOGY] = required
    if text is not None:
        out[PODSET_TOPOLOGY_RELAXATION] = text
    return out


VALID = [
    ("one-stage", f"{BLOCK} after 10m", ((BLOCK, 600),)),
    ("two-stages", f"{BLOCK} after 10m, unconstrained after 30m", ((BLOCK, 600), (None, 1800))),
    ("hours-minutes-seconds", f"{BLOCK} after 1h2m3s", ((BLOCK, 3723),)),
    ("spaces-around", f"  {BLOCK}   after   5s ,unconstrained after 6s ", ((BLOCK, 5), (None, 6))),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_annotations_give_their_stages(text, expected):
    stages = parse_relaxation(annotations(text))
    assert stages[0] == Stage(RACK, timedelta(0))
    assert [(s.level, s.after.total_seconds()) for s in stages[1:]] == list(expected)


INVALID = [
    ("needs-required", f"{BLOCK} after 10m", None, {}, "needs"),
    ("not-a-list", "block in 10 minutes", RACK, {}, "LEVEL after DURATION"),
    ("bad-duration", f"{BLOCK} after 10 m", RACK, {}, "LEVEL after DURATION"),
    ("unit-unknown", f"{BLOCK} after 10d", RACK, {}, "not a duration"),
    ("zero-wait", f"{BLOCK} after 0s", RACK, {}, "not a duration above 0"),
    ("not-later", f"{BLOCK} after 10m, unconstrained after 5m", RACK, {}, "not later"),
    ("after-unconstrained", f"unconstrained after 1m, {BLOCK} after 2m", RACK, {}, "the last"),
    ("required-again", f"{RACK} after 1m", RACK, {}, "twice"),
    ("bad-level", "-x- after 1m", RACK, {}, "level"),
    ("empty-entry", f"{BLOCK} after 1m,", RACK, {}, "LEVEL after DURATION"),
    ("with-group", f"{BLOCK} after 1m", RACK, {"kueue.x-k8s.io/podset-group-name": "g"}, "group"),
    ("too-long", "x" * 3000, RACK, {}, "at most"),
]


@pytest.mark.parametrize(
    "text, required, more, problem", [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_annotations_are_refused_naming_it(text, required, more, problem):
    with pytest.raises(TopologyRequestError) as caught:
        parse_relaxation(annotations(text, required, **more))
    assert PODSET_TOPOLOGY_RELAXATION in str(caught.value)
    assert problem in str(caught.value)


STAGES = parse_relaxation(annotations(f"{BLOCK} after 10m, unconstrained after 30m"))
POD_SET = PodSetRequest("main", 4, {"cpu": 1000}, TopologyRequest(required=RACK))
WHEN = [
    # id, seconds waited, stage index, required now, unconstrained now, next stage at
    ("at-queueing", 0, 0, RACK, False, 600),
    ("just-before", 599, 0, RACK, False, 600),
    ("at-the-wait", 600, 1, BLOCK, False, 1800),
    ("last-stage", 1800, 2, None, True, None),
    ("long-after", 86400, 2, None, True, None),
]


@pytest.mark.parametrize(
    "waited, index, required, unconstrained, next_at",
    [c[1:] for c in WHEN],
    ids=[c[0] for c in WHEN],
)
def test_stage_by_time_waited(waited, index, required, unconstrained, next_at):
    relaxed, progress = relax(POD_SET, STAGES, CREATED, CREATED + timedelta(seconds=waited))
    assert progress.index == index and progress.total == 3
    assert relaxed.topology.required == required
    assert relaxed.topology.unconstrained is unconstrained
    expected = None if next_at is None else CREATED + timedelta(seconds=next_at)
    assert progress.next_at == expected


@given(
    st.lists(st.integers(1, 10_000), min_size=1, max_size=5, unique=True), st.integers(0, 60_000)
)
def test_stage_is_the_last_whose_wait_has_passed(waits, waited):
    waits = sorted(waits)
    levels = [f"example.com/l{i}" for i in range(len(waits))]
    text = ", ".join(f"{lv} after {w}s" for lv, w in zip(levels, waits, strict=True))
    stages = parse_relaxation(annotations(text, required="example.com/base"))
    pod_set = PodSetRequest("main", 1, {}, TopologyRequest(required="example.com/base"))
    relaxed, progress = relax(pod_set, stages, CREATED, CREATED + timedelta(seconds=waited))
    passed = [w for w in waits if w <= waited]
    assert progress.index == len(passed)
    assert relaxed.topology.required == (levels[len(passed) - 1] if passed else "example.com/base")
    if progress.next_at is not None:  # the next stage begins after now, at its wait
        assert progress.next_at > CREATED + timedelta(seconds=waited)


@given(st.text(max_size=80))
def test_any_text_is_parsed_or_refused_naming_the_annotation(text):
    try:
        stages = parse_relaxation(annotations(text))
    except TopologyRequestError as exc:
        assert PODSET_TOPOLOGY_RELAXATION in str(exc)
        return
    waits = [s.after for s in stages]
    assert waits == sorted(set(waits))  # strictly later, one after another


@pytest.mark.parametrize("text", ["", "m", "1x", "-1s", "1.5", "1h 30m"])
def test_durations_that_are_not_go_style_are_none(text):
    assert parse_duration(text) is None


def two_blocks() -> list[dict]:
    """Two blocks of two racks of two 4-cpu nodes."""
    return [
        node(f"{b}{r}n{i}", b, f"{b}{r}")
        for b in ("b1", "b2")
        for r in ("r1", "r2")
        for i in (1, 2)
    ]


def relaxing_workload(pods: int, text: str) -> dict:
    obj = workload("w", pods=pods, annotations_request={"required": RACK})
    obj["spec"]["podSets"][0]["template"]["metadata"] = {"annotations": annotations(text)}
    return obj


def test_waits_at_the_rack_then_is_admitted_at_the_block():
    state = make_state(two_blocks())
    wl = proj.workload_from_object(relaxing_workload(12, f"{BLOCK} after 10m"))
    cq = state.cluster_queues["cq"]
    with gates(**GATE):
        early = decide(state, wl, cq, now=CREATED + timedelta(minutes=9))
        late = decide(state, wl, cq, now=CREATED + timedelta(minutes=10))
    assert not early.admitted and not early.invalid
    assert "stage 1 of 2 (required " + RACK in early.message
    assert "stage 2 (required " + BLOCK + ") begins at 2026-01-01T00:10:00Z" in early.message
    assert early.relax_at == CREATED + timedelta(minutes=10)
    assert late.admitted, late.message
    stored = late.admission["podSetAssignments"][0]["topologyAssignment"]
    hosts = {d["values"][0] for d in v1beta2_to_v1beta1(stored)["domains"]}
    assert len({h[:2] for h in hosts}) == 1  # one block, however many racks


def test_gate_off_the_annotation_changes_nothing():
    state = make_state(two_blocks())
    relaxing = proj.workload_from_object(relaxing_workload(12, f"{BLOCK} after 10m"))
    plain = proj.workload_from_object(relaxing_workload(12, f"{BLOCK} after 10m"))
    plain = proj.WorkloadInfo(**{**plain.__dict__, "relaxations": {}})
    later = CREATED + timedelta(hours=1)
    one = decide(state, relaxing, state.cluster_queues["cq"], now=later)
    two = decide(state, plain, state.cluster_queues["cq"], now=later)
    assert one == two and not one.admitted and one.relax_at is None


def test_a_stage_level_the_topology_lacks_is_invalid_naming_the_annotation():
    state = make_state(two_blocks())
    wl = proj.workload_from_object(relaxing_workload(2, "example.com/zone after 1m"))
    with gates(**GATE):
        d = decide(state, wl, state.cluster_queues["cq"], now=CREATED)
    assert d.invalid and PODSET_TOPOLOGY_RELAXATION in d.message and "example.com/zone" in d.message


def test_a_stage_below_the_one_before_is_invalid():
    state = make_state(two_blocks())
    obj = relaxing_workload(2, f"{HOST} after 1m")
    wl = proj.workload_from_object(obj)
    with gates(**GATE):
        d = decide(state, wl, state.cluster_queues["cq"], now=CREATED)
    assert d.invalid and "is not above" in d.message


def test_an_unreadable_annotation_becomes_the_workloads_condition_not_a_crash():
    state = make_state(two_blocks())
    wl = proj.workload_from_object(relaxing_workload(2, "soon"))
    assert wl.relaxation_error and PODSET_TOPOLOGY_RELAXATION in wl.relaxation_error
    with gates(**GATE):
        d = decide(state, wl, state.cluster_queues["cq"], now=CREATED)
    assert d.invalid and PODSET_TOPOLOGY_RELAXATION in d.message


def test_the_loop_decides_again_when_the_timer_of_the_next_stage_fires():
    state = make_state(two_blocks())
    now = datetime.utcnow().replace(microsecond=0)
    obj = relaxing_workload(12, f"{BLOCK} after 1s")
    obj["metadata"]["creationTimestamp"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    add(state, obj)
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)

    async def go():
        await loop.cycle()
        await loop.drain()
        first = [s for _, s in writer.statuses]
        assert first and "admission" not in first[-1]
        assert ("ns", "w") in loop._decide_timers  # a timer, not a poll
        await loop.cycle()  # nothing changed: not decided again before the timer
        await loop.drain()
        assert len(writer.statuses) == len(first)
        for _ in range(5):  # woken by the timer (or earlier by a write; then again by it)
            if any("admission" in s for _, s in writer.statuses):
                break
            await asyncio.wait_for(loop._wake.wait(), timeout=5)
            loop._wake.clear()
            await loop.cycle()
            await loop.drain()
        return first

    with gates(**GATE):
        first = asyncio.run(go())
    message = first[-1]["conditions"][0]["message"]
    assert "stage 1 of 2" in message
    assert any("admission" in s for _, s in writer.statuses)


# ---- tas simulate --------------------------------------------------------------------------


def relaxing_trace(gate: bool, queues: bool, text: str = f"{BLOCK} after 60s") -> dict:
    """One block of two racks of two 4-cpu hosts; a 12-pod Job required in a rack (8 cpus)."""
    document = {
        "topology": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
        "pool": {"blocks": 1, "racksPerBlock": 2, "hostsPerRack": 2, "allocatable": {"cpu": "4"}},
        "workloads": [
            {
                "name": "wide",
                "arrival": 10,
                "podSets": [
                    {
                        "name": "main",
                        "count": 12,
                        "requests": {"cpu": "1"},
                        "annotations": annotations(text),
                    }
                ],
            }
        ],
        "featureGates": {"TASTopologyRelaxation": gate},
    }
    if queues:
        document["clusterQueues"] = [{"name": "cq", "nominalQuota": {"cpu": "100"}}]
    return document


@pytest.mark.parametrize("queues", [False, True], ids=["solver", "clusterQueues"])
@pytest.mark.parametrize("gate", [False, True], ids=["gate-off", "gate-on"])
def test_simulate_admits_at_the_next_stage_after_the_wait(gate, queues):
    from tas.offline.simulate import trace as tracefile
    from tas.offline.simulate.run import simulate

    admitted_at: dict[str, float] = {}

    def observe(now, running):
        for name in running:
            admitted_at.setdefault(name, now)

    report = simulate(tracefile.parse_trace(relaxing_trace(gate, queues)), observe)
    if gate:
        assert admitted_at == {"wide": 70.0}  # woken at its stage, nothing else happened
    else:
        assert admitted_at == {} and report["workloadsNeverAdmitted"] == 1


@pytest.mark.parametrize(
    "text, problem",
    [("soon", "LEVEL after DURATION"), ("example.com/zone after 1m", "not a level")],
    ids=["unreadable", "unknown-level"],
)
def test_a_bad_relaxation_in_a_trace_is_an_error_naming_the_field(text, problem):
    from tas.offline.fields import ScenarioError
    from tas.offline.simulate import trace as tracefile

    with pytest.raises(ScenarioError) as caught:
        tracefile.parse_trace(relaxing_trace(True, False, text))
    assert PODSET_TOPOLOGY_RELAXATION in str(caught.value) and problem in str(caught.value)


# ---- properties on random topologies ---------------------------------------------------------


@st.composite
def relaxing_scenarios(draw):
    cluster = draw(clusters())
    upper = cluster.levels[:-1]
    start = draw(st.integers(0, len(cluster.levels) - 1))
    higher = list(reversed(cluster.levels[:start]))  # the stages' levels, each above the last
    chosen = higher[: draw(st.integers(0, len(higher)))]
    texts = [f"{level} after {i + 1}m" for i, level in enumerate(chosen)]
    if draw(st.booleans()):
        texts.append(f"unconstrained after {len(chosen) + 1}m")
    if not texts:
        texts = ["unconstrained after 1m"]
    stages = parse_relaxation(annotations(", ".join(texts), required=cluster.levels[start]))
    count = draw(st.integers(1, 12))
    cpu = draw(st.sampled_from([250, 500, 1000, 2000]))
    pod_set = PodSetRequest("main", count, {"cpu": cpu}, TopologyRequest(required=stages[0].level))
    waited = draw(st.integers(0, 5 * 60))
    return cluster, upper, pod_set, stages, waited


@settings(max_examples=60, deadline=None)
@given(relaxing_scenarios())
def test_a_relaxed_placement_honours_its_stage_and_over_commits_nothing(scenario):
    from tas.solver.snapshot import TopologySnapshot

    cluster, _, pod_set, stages, waited = scenario
    relaxed, progress = relax(pod_set, stages, CREATED, CREATED + timedelta(seconds=waited))
    placement = TopologySnapshot(cluster.levels, cluster.nodes).find_assignments([relaxed])
    if not placement.admitted:
        return
    stage = stages[progress.index]
    by_name = cluster.by_name
    [placed] = placement.podsets
    hosts = {d.values[-1]: d.count for d in placed.assignment.domains}
    assert sum(hosts.values()) == pod_set.count
    if stage.level is not None:
        depth = cluster.levels.index(stage.level) + 1
        domains = {tuple(by_name[h].labels[lv] for lv in cluster.levels[:depth]) for h in hosts}
        assert len(domains) == 1  # the stage's level is honoured
    for host, count in hosts.items():
        node = by_name[host]
        used = node.usage.get("cpu", 0) + count * pod_set.requests["cpu"]
        assert used <= node.allocatable["cpu"]
