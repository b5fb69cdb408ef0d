"""plan() against a plain reference of the ungater's pod-to-domain mapping.

Random assignments over 1-3 levels whose lower-level names repeat under every parent (rack "r0"
in each block, host "h0" in each rack), random pods (gated with or without a completion index,
already ungated onto a domain of the assignment or of another block, finished, or sent by us
and not yet seen), and random unhealthy hosts. The reference spells the rules out one by one,
with slots as a list and selectors compared label by label:

- a finished pod holds nothing; a pod we sent holds the domain we sent it to; an ungated pod
  holds the domain whose every level label its nodeSelector carries; no domain over its count,
  and a domain on an unhealthy host holds nobody new;
- when every gated pod has a completion index, pod i takes the i-th slot (slots in assignment
  order) if that slot's domain has room; the others, and every pod when some have no index
  (then in name order), take the first domain with room, in assignment order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tas.cache.projections import PodInfo
from tas.solver.types import DomainAssignment, TopologyAssignment
from tas.ungater.plan import plan
from tas.ungater.ranks import RankRule

LEVELS = ("example.com/block", "example.com/rack", "kubernetes.io/hostname")
JOB_INDEX = "batch.kubernetes.io/job-completion-index"  # an Indexed Job's pod set


@st.composite
def cases(draw):
    depth = draw(st.integers(1, 3))
    levels = LEVELS[-depth:] if draw(st.booleans()) else LEVELS[:depth]
    # every path of the given fan-out: lower names repeat under each parent
    paths = [()]
    for level in range(depth):
        fanout = draw(st.integers(1, 3))
        paths = [(*path, f"{'brh'[level]}{i}") for path in paths for i in range(fanout)]
    chosen = draw(st.lists(st.sampled_from(paths), min_size=1, max_size=6, unique=True))
    domains = tuple(DomainAssignment(values, draw(st.integers(1, 3))) for values in sorted(chosen))
    topology = TopologyAssignment(levels=levels, domains=domains)
    outside = [p for p in paths if p not in chosen] + [("zz",) * depth]
    pods = []
    expected = {}
    for number in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["gated", "gated", "on", "outside", "finished", "sent"]))
        index = draw(st.none() | st.integers(0, 12))
        on = None
        if kind in ("on", "finished"):
            on = draw(st.sampled_from(chosen))
        elif kind == "outside":
            on = draw(st.sampled_from(outside))
        pod = PodInfo(
            namespace="ns",
            name=f"p{draw(st.integers(0, 99)):02d}-{number}",
            uid=f"uid-{number}",
            node_name=None,
            phase="Failed" if kind == "finished" and draw(st.booleans()) else "Pending",
            requests={},
            workload="wl",
            pod_set="main",
            gated=on is None,
            node_selector=dict(zip(levels, on, strict=True)) if on else {},
            index_labels={} if index is None else {JOB_INDEX: index},
            deleting=False,
        )
        if kind == "sent":
            expected[pod.uid] = draw(st.sampled_from([*chosen, outside[0]]))
        pods.append(pod)
    hosts = sorted({values[-1] for values in chosen})
    unhealthy = set(draw(st.lists(st.sampled_from(hosts), max_size=2)))
    return topology, pods, expected, unhealthy


def reference(topology, pods, expected, unhealthy):
    """The mapping, rule by rule: [(pod name, domain values, nodeSelector)] in the order given."""
    levels = topology.levels
    room = []
    for domain in topology.domains:
        room.append(0 if domain.values[-1] in unhealthy else domain.count)

    def holder(pod):
        """Which domain (position) a pod already holds, or None."""
        if pod.uid in expected:
            for position, domain in enumerate(topology.domains):
                if domain.values == expected[pod.uid]:
                    return position
            return None
        for position, domain in enumerate(topology.domains):
            if all(
                pod.node_selector.get(level) == value
                for level, value in zip(levels, domain.values, strict=True)
            ):
                return position
        return None

    waiting = []
    for pod in pods:
        if pod.phase in ("Succeeded", "Failed"):
            continue
        if pod.uid not in expected and pod.gated:
            waiting.append(pod)
            continue
        position = holder(pod)
        if position is not None and room[position] > 0:
            room[position] -= 1

    out = []

    def give(pod, position):
        room[position] -= 1
        values = topology.domains[position].values
        out.append((pod.name, values, {level: values[i] for i, level in enumerate(levels)}))

    slots = []
    for position, domain in enumerate(topology.domains):
        slots.extend([position] * domain.count)
    rest = []
    indexes = [pod.index_labels.get(JOB_INDEX) for pod in waiting]
    # Ranked only when every waiting pod has its own index in range (Kueue's rule); else greedy.
    if all(i is not None and i < len(slots) for i in indexes) and len(set(indexes)) == len(indexes):
        for pod in sorted(waiting, key=lambda p: p.index_labels[JOB_INDEX]):
            rank = pod.index_labels[JOB_INDEX]
            if room[slots[rank]] > 0:
                give(pod, slots[rank])
            else:
                rest.append(pod)
    else:
        rest = sorted(waiting, key=lambda p: p.name)
    for pod in rest:
        free = [position for position in range(len(room)) if room[position] > 0]
        if not free:
            break
        give(pod, free[0])
    return out


def count(topology) -> int:
    return sum(d.count for d in topology.domains)


@settings(max_examples=120, deadline=None)
@given(cases())
def test_plan_matches_the_plain_reference(case):
    topology, pods, expected, unhealthy = case
    got = [
        (u.pod.name, u.domain, u.node_selector)
        for u in plan(topology, pods, expected, unhealthy, RankRule(JOB_INDEX, count(topology)))
    ]
    assert got == reference(topology, pods, expected, unhealthy)
    # and whatever the order: no domain gets more pods than assigned
    taken = {}
    for _, values, _ in got:
        taken[values] = taken.get(values, 0) + 1
    counts = {d.values: d.count for d in topology.domains}
    assert all(taken[values] <= counts[values] for values in taken)
