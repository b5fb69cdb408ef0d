"""The admission loop with placement groups: the group (its partitions) is written before the
member's admission, a failed group write releases everything the decision assumed, and group
statuses follow members coming and going."""

from __future__ import annotations

from tas.admission.loop import AdmissionLoop
from tas.api.constants import (
    PLACEMENT_GROUP,
    PLACEMENT_GROUP_PARTITION_TOPOLOGY,
    PLACEMENT_GROUP_PARTITIONS,
)
from tas.cache.projections import placement_group_from_object
from tas.kube import KubeError
from tas.solver.types import SolverOptions
from tests.unit.admission.fixtures import RACK, make_state, node, workload
from tests.unit.admission.test_loop import FakeWriter, add, admitted, cycle

SHARDS = {
    PLACEMENT_GROUP: "shards",
    PLACEMENT_GROUP_PARTITIONS: "2",
    PLACEMENT_GROUP_PARTITION_TOPOLOGY: RACK,
}


class GroupWriter(FakeWriter):
    def __init__(self):
        super().__init__()
        self.order: list[tuple[str, str]] = []
        self.groups: dict[tuple[str, str], dict] = {}
        self.group_fails: Exception | None = None

    async def write_placement_group(self, namespace, name, spec, status):
        if self.group_fails is not None:
            raise self.group_fails
        self.order.append(("group", name))
        self.groups[(namespace, name)] = {"spec": spec, "status": status}

    async def write_status(self, wl, status):
        written = await super().write_status(wl, status)
        if written and "admission" in status:
            self.order.append(("admission", wl.name))
        return written


def member(name: str, pods: int) -> dict:
    obj = workload(name, pods=pods)
    obj["spec"]["podSets"][0]["template"]["metadata"] = {"annotations": dict(SHARDS)}
    return obj


def setup():
    state = make_state(
        [node(f"{r}-h{h}", "b1", r, "4") for r in ("r1", "r2", "r3") for h in (1, 2)]
    )
    state.options = SolverOptions(placement_groups=True)
    writer = GroupWriter()
    return state, writer, AdmissionLoop(state, writer)


def test_the_group_is_written_before_the_admission_with_its_partitions():
    state, writer, loop = setup()
    add(state, member("a", 5))
    cycle(loop)
    assert admitted(writer) == ["a"]
    # (the cycle's end writes the group's status too: the member is assumed by then)
    assert writer.order.index(("group", "shards")) < writer.order.index(("admission", "a"))
    status = writer.groups[("ns", "shards")]["status"]
    assert sorted(p["pods"] for p in status["partitions"]) == [2, 3]
    racks = [tuple(d) for p in status["partitions"] for d in p["domains"]]
    assert len(racks) == len(set(racks)) >= 2
    assert writer.groups[("ns", "shards")]["spec"] == {"partitions": 2, "partitionTopology": RACK}


def test_a_failed_group_write_releases_the_admission_and_its_partitions():
    state, writer, loop = setup()
    writer.group_fails = KubeError(403, "forbidden")
    add(state, member("a", 5))
    cycle(loop)
    assert admitted(writer) == []
    assert not state.is_assumed(("ns", "a"))
    assert not state.assumed_partitions[("ns", "shards")]
    assert not state.charges()


def test_the_status_follows_a_member_leaving():
    state, writer, loop = setup()
    obj = member("a", 4)
    add(state, obj)
    cycle(loop)
    obj["status"] = dict(writer.statuses[-1][1])
    add(state, obj)  # the watch shows the admission
    state.delete_workload("ns", "a")  # the member finished and is gone
    cycle(loop)
    status = writer.groups[("ns", "shards")]["status"]
    assert status["members"] == [] and status["pods"] == 0
    assert all(p["domains"] == [] for p in status["partitions"])


def test_a_rack_released_by_a_departed_member_takes_the_partition_decided_for_it():
    """x fills r1, so member a's partition 1 opens r2; the object says so. Both leave, and the
    object still gives r2 to partition 1 when b (2 pods) is decided: its partition 1 goes to
    r1 (beside y, the tightest) and partition 2 to the released r2. The group written before
    b's admission must say what the planner decided: one pod in each partition."""
    state, writer, loop = setup()
    x = workload("x", pods=2, cpu="4")
    add(state, x)
    cycle(loop)
    a = member("a", 1)
    add(state, a)
    cycle(loop)
    assert admitted(writer) == ["x", "a"]
    written = writer.groups[("ns", "shards")]
    state.upsert_placement_group(
        placement_group_from_object({"metadata": {"namespace": "ns", "name": "shards"}, **written})
    )
    (released,) = state.placement_groups[("ns", "shards")].partitions
    state.delete_workload("ns", "x")
    state.delete_workload("ns", "a")  # the object is not rewritten yet: the watch lags
    add(state, workload("y", pods=1))
    cycle(loop)
    add(state, member("b", 2))
    cycle(loop)
    assert admitted(writer)[-1] == "b"
    partitions = writer.groups[("ns", "shards")]["status"]["partitions"]
    assert [p["pods"] for p in partitions] == [1, 1]
    assert [tuple(d) for d in partitions[1]["domains"]] == [released]
