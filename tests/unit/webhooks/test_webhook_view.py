"""The frozen copy of the cache the webhooks read: built on the operator's loop, published
by one reference assignment, never the live cache; rebuilt soon after a change, within a
budget of the loop's time, and by a backstop for changes no listener reports."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas import integrations
from tas.config import Settings
from tas.kube import Kube
from tas.kube.kubeconfig import Connection
from tas.runtime.runtime import Runtime
from tas.webhooks import view
from tas.webhooks.view import CacheView, ViewPublisher

uids = st.sets(st.text(alphabet="abcdef0123456789-", min_size=1, max_size=12), max_size=30)


@settings(max_examples=50, deadline=None)
@given(owners=uids, later=uids, asked=st.text(max_size=12))
def test_a_view_answers_from_its_copy_whatever_the_source_does_after(owners, later, asked):
    source = set(owners)
    refs = {("ns", "rt"): {"spec": {"n": 1}}}
    frozen = CacheView.of(source, {"trainjobs": refs})
    source |= later  # the cache moves on; the copy does not
    refs[("ns", "other")] = {"spec": {}}
    assert frozen.managed_owner(asked) == (bool(asked) and asked in owners)
    assert frozen.lookup("trainjobs", ("ns", "other")) is None
    assert frozen.lookup("trainjobs", ("ns", "rt")) == {"spec": {"n": 1}}


def test_a_view_cannot_be_changed_in_place() -> None:
    frozen = CacheView.of({"a"}, {"trainjobs": {("ns", "rt"): {}}})
    with pytest.raises(AttributeError):
        frozen.managed_owners.add("b")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        frozen.looked_up["trainjobs"][("ns", "x")] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        frozen.looked_up["other"] = {}  # type: ignore[index]
    with pytest.raises(AttributeError):
        frozen.managed_owners = frozenset()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("uid", "expected"),
    [(None, False), ("", False), ("known", True), ("unknown", False)],
    ids=["no-controller", "empty", "known", "unknown"],
)
def test_a_managed_owner_is_one_in_the_copy(uid, expected) -> None:
    assert CacheView.of({"known"}, {}).managed_owner(uid) is expected


class Source:
    """A cache stand-in that counts the copies made of it."""

    def __init__(self, cost: float = 0.0) -> None:
        self.owners: set[str] = set()
        self.builds = 0
        self.cost = cost

    def build(self) -> CacheView:
        self.builds += 1
        time.sleep(self.cost)
        return CacheView.of(self.owners, {})


def test_many_changes_in_one_turn_of_the_loop_make_one_copy() -> None:
    source = Source()
    publisher = ViewPublisher(source.build)

    async def go():
        for i in range(100):
            source.owners.add(f"u{i}")
            publisher.changed()
        assert source.builds == 0  # not before the loop turns
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(go())
    assert source.builds == 1
    assert publisher.current.managed_owners == frozenset(f"u{i}" for i in range(100))


def test_copies_take_at_most_their_budget_of_the_loop() -> None:
    source = Source(cost=0.01)  # a large cache: 10 ms a copy
    publisher = ViewPublisher(source.build)

    async def go():
        publisher.publish()
        start = time.monotonic()
        deadline = start + 0.35
        while time.monotonic() < deadline:
            publisher.changed()  # changes all the time
            await asyncio.sleep(0.001)
        return time.monotonic() - start

    elapsed = asyncio.run(go())
    # Each copy (10 ms) is followed by 10 ms / BUDGET = 100 ms without one.
    spacing = source.cost / view.BUDGET
    assert source.builds - 1 <= elapsed / spacing + 1


def test_a_change_outside_a_loop_is_copied_at_once() -> None:
    source = Source()
    publisher = ViewPublisher(source.build)
    source.owners.add("u")
    publisher.changed()
    assert publisher.current.managed_owner("u")


def test_the_backstop_copies_changes_no_listener_reported(monkeypatch) -> None:
    monkeypatch.setattr(view, "BACKSTOP_SECONDS", 0.02)
    source = Source()
    publisher = ViewPublisher(source.build)

    async def go():
        task = asyncio.create_task(publisher.run())
        await asyncio.sleep(0.005)
        first = publisher.current
        source.owners.add("linked")  # an owner link: no listener hears of it
        await asyncio.sleep(0.1)
        publisher.changed()  # one pending when stopped: cancelled with it
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return first

    first = asyncio.run(go())
    assert not first.managed_owner("linked")
    assert publisher.current.managed_owner("linked")
    assert publisher._scheduled is None


# ---- the runtime's copy --------------------------------------------------------------------------


def test_the_runtime_publishes_workload_owners_and_owner_links() -> None:
    """What the pod webhook asks (is this controller admitted with an owner?) answered from
    the copy as the runtime's own `managed_owner` answers it from the cache."""

    async def go():
        kube = Kube(Connection(server="http://127.0.0.1:9", ssl=False))
        rt = Runtime(
            Settings(leader_elect=False, integrations=integrations.parse("batch/job")), kube=kube
        )
        try:
            rt.state.workload_by_owner["job-uid"] = ("ns", "wl")
            rt.state.link_owner("child-uid", "parent-uid")
            rt.webhook_view.changed()
            stale = rt.webhook_view.current
            await asyncio.sleep(0.01)
            return stale, rt.webhook_view.current, rt
        finally:
            await kube.close()

    stale, fresh, rt = asyncio.run(go())
    assert not stale.managed_owner("job-uid")  # published on the loop, not in the listener
    for uid in ("job-uid", "child-uid", "parent-uid", "other", None):
        assert fresh.managed_owner(uid) == rt.managed_owner(uid), uid
