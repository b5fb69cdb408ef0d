"""spec.active, as Kueue's workload controller acts on it (what `kubectl kueue stop workload`
and `resume workload` write): an inactive workload is never admitted; an admitted one is
evicted (reason Deactivated) and its quota comes back once its pods are gone, with
Requeued=False; made active again it is requeued (Requeued=True, reason Reactivated) and
admitted again."""

from __future__ import annotations

from tas.admission.loop import AdmissionLoop
from tas.cache import projections as proj
from tas.workload import transitions
from tests.unit.admission.fixtures import RACK, make_state, two_racks, workload
from tests.unit.admission.test_loop import FakeWriter, add, admitted, cycle


class Stored:
    """The Workload as the API server holds it: every write the loop makes lands on it."""

    def __init__(self, state, obj: dict) -> None:
        self.state, self.obj = state, obj
        add(state, obj)

    def write(self, status: dict) -> None:
        self.obj.setdefault("status", {}).update(status)
        self.obj["status"] = {k: v for k, v in self.obj["status"].items() if v is not None}
        add(self.state, self.obj)

    def set_active(self, active: bool) -> None:
        self.obj["spec"]["active"] = active
        self.obj["metadata"]["generation"] += 1
        add(self.state, self.obj)

    @property
    def info(self) -> proj.WorkloadInfo:
        return self.state.workloads[("ns", self.obj["metadata"]["name"])]

    def condition(self, type_: str) -> dict:
        return self.info.condition(type_) or {}


def land(writer: FakeWriter, stored: Stored) -> None:
    for name, status in writer.statuses:
        if name == stored.obj["metadata"]["name"]:
            stored.write(status)
    writer.statuses.clear()


def test_an_inactive_workload_is_never_admitted():
    state = make_state(two_racks())
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    wl = workload("w", pods=2, annotations_request={"required": RACK})
    wl["spec"]["active"] = False
    stored = Stored(state, wl)
    assert not stored.info.pending
    cycle(loop)
    assert admitted(writer) == []
    stored.set_active(True)
    cycle(loop)
    assert admitted(writer) == ["w"]


def test_deactivation_evicts_releases_and_reactivation_readmits():
    state = make_state(two_racks())
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    stored = Stored(state, workload("w", pods=4, annotations_request={"required": RACK}))
    cycle(loop)
    land(writer, stored)
    assert stored.info.admitted and state.charges().get(stored.info.key)

    stored.set_active(False)  # kubectl kueue stop workload
    cycle(loop)
    land(writer, stored)
    evicted = stored.condition("Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Deactivated")
    assert evicted["message"] == "The workload is deactivated"
    assert ("w", "EvictedDueToDeactivated") in writer.events
    assert stored.info.has_quota  # until the Job's pods are gone

    stored.write(transitions.released(stored.info))  # the integration, once pods are gone
    requeued = stored.condition("Requeued")
    assert (requeued["status"], requeued["reason"]) == ("False", "Deactivated")
    assert not stored.info.has_quota and not stored.info.pending
    assert state.charges().get(stored.info.key) is None
    cycle(loop)
    assert admitted(writer) == []  # inactive: not queued

    stored.set_active(True)  # kubectl kueue resume workload
    cycle(loop)
    land(writer, stored)
    requeued = stored.condition("Requeued")
    assert (requeued["status"], requeued["reason"]) == ("True", "Reactivated")
    cycle(loop)
    assert admitted(writer) == ["w"]


def test_an_evicted_workload_is_not_evicted_again_when_deactivated():
    state = make_state(two_racks())
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer)
    stored = Stored(state, workload("w", pods=2, annotations_request={"required": RACK}))
    cycle(loop)
    land(writer, stored)
    stored.write(transitions.evicted(stored.info, "node gone"))
    stored.set_active(False)
    cycle(loop)
    assert writer.statuses == []


def test_release_requeues_after_preemption_and_node_failures_only():
    """Kueue's rule for Requeued when the quota is released."""
    state = make_state(two_racks())
    stored = Stored(state, workload("w", pods=1))
    for reason, requeued in (
        ("Preempted", "True"),
        ("NodeFailures", "True"),
        ("Deactivated", "False"),
    ):
        stored.obj["status"] = {}
        stored.write(transitions.evicted(stored.info, f"because {reason}", reason))
        status = transitions.released(stored.info)
        by_type = {c["type"]: c for c in status["conditions"]}
        assert (by_type["Requeued"]["status"], by_type["Requeued"]["reason"]) == (requeued, reason)
        assert by_type["QuotaReserved"]["message"] == f"because {reason}"
        assert status["admission"] is None
