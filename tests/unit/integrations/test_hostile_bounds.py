"""One tenant object cannot take admission down: numbers a tenant writes (a pod group's total
count, a LeaderWorkerSet's replicas) are bounded before anything is built per unit of them,
long loops give way to the event loop, and what the controllers cannot make is said on the
object. Memory is checked by what is allocated (tracemalloc), never by timing."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api.constants import INT32_MAX
from tas.cache import projections as proj
from tas.integrations.leaderworkerset import webhook as lws_webhook
from tas.integrations.leaderworkerset import workload as L
from tas.integrations.leaderworkerset.controller import LeaderWorkerSetController
from tas.integrations.pod import group as g
from tas.integrations.pod import pod as p
from tas.integrations.pod import webhook
from tas.integrations.pod.controller import PodController
from tas.kube import KubeError
from tas.pacing import YIELD_EVERY, paced
from tests.unit.integrations.builders import RecordingKube, leaderworkerset, pod, state

COUNT = "kueue.x-k8s.io/pod-group-total-count"
FAST = {"kueue.x-k8s.io/pod-group-fast-admission": "true"}
BIG = 10**7  # today's [pod] * total: 76 MiB for this one pod group (999,999,999 is 7.5 GiB)


def peak_bytes(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---- pod groups ----------------------------------------------------------------------------------


def fast_pod(total: int | str) -> dict:
    obj = pod("web-0", group="grp", annotations=FAST)
    obj["metadata"]["annotations"][COUNT] = str(total)
    return obj


def test_a_fast_admission_group_costs_nothing_per_pod_it_counts():
    group = g.Group("ns", "grp", "grp", (fast_pod(BIG),))
    workload: dict = {}
    peak = peak_bytes(lambda: workload.update(g.group_workload(group)))
    [ps] = workload["spec"]["podSets"]
    assert ps["count"] == BIG
    assert peak < 2**20  # one pod's template, not a slot per counted pod


def test_a_fast_admission_group_of_the_largest_count_is_created_by_its_controller():
    kube = RecordingKube()
    controller = PodController(state(), kube, writer=None)

    async def go():
        for key in controller.upsert(fast_pod(INT32_MAX)):
            await controller.sync(key)

    peak = peak_bytes(lambda: asyncio.run(go()))
    [created] = kube.created
    assert created["spec"]["podSets"][0]["count"] == INT32_MAX
    assert peak < 4 * 2**20


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("1", True),
        (str(INT32_MAX), True),
        (str(INT32_MAX + 1), False),  # a pod set's count is an int32
        ("9" * 10_000, False),  # bounded before int(), which refuses over 4,300 digits
        ("²", False),  # str.isdigit() says yes, int() no
        ("٣", False),  # int() reads 3: not what Kueue's strconv.Atoi reads
        ("+3", False),
        ("3 ", False),
        ("0", False),
    ],
    ids=[
        "one",
        "int32-max",
        "over-int32",
        "ten-thousand-digits",
        "superscript",
        "arabic",
        "sign",
        "space",
        "zero",
    ],
)
def test_the_total_count_is_ascii_digits_within_a_pod_sets_count(text, accepted):
    obj = fast_pod(text)
    assert (p.total_count(obj) is not None) is accepted
    errors = webhook.validate(obj)
    assert (not errors) is accepted, errors
    if not accepted:
        assert COUNT in errors[0] and str(INT32_MAX) in errors[0]


# Any text; digits of every script (Unicode Nd and No: "٣", "²"); numbers of any size; and
# the int32 edge.
COUNTS = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(categories=("Nd", "No")), min_size=1, max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=INT32_MAX - 3, max_value=INT32_MAX + 3).map(str),
)


@settings(max_examples=300, deadline=None)
@given(COUNTS)
def test_any_total_count_is_read_or_refused_never_raised(text):
    obj = fast_pod(text)
    value = p.total_count(obj)
    errors = webhook.validate(obj)
    ascii_number = text.isascii() and text.isdigit() and 1 <= int(text) <= INT32_MAX
    assert (value is not None) is ascii_number
    assert (value == int(text)) if ascii_number else bool(errors)


def test_a_group_whose_count_no_pod_set_can_have_is_said_on_its_pod_and_skipped():
    kube = RecordingKube()
    controller = PodController(state(), kube, writer=None)

    async def go():
        for _ in range(3):  # synced on every change: said once
            for key in controller.upsert(fast_pod(INT32_MAX + 1)):
                await controller.sync(key)

    asyncio.run(go())
    assert kube.created == []
    [(name, reason, message)] = kube.events
    assert (name, reason) == ("web-0", "ErrWorkloadCompose")
    assert COUNT in message and str(INT32_MAX) in message


def test_a_pod_made_behind_the_webhooks_may_still_let_go_of_its_finalizer():
    """Updates are refused only for a problem the pod did not have: our finalizer can be
    removed from a pod whose count was never valid (else it, and its namespace, stay for good),
    but no update may make a pod worse."""
    invalid = fast_pod("99999999999")
    finalized = fast_pod("99999999999")
    finalized["metadata"]["finalizers"] = []
    assert webhook.validate(finalized, {"metadata": invalid["metadata"]}) == []
    [error] = webhook.validate(fast_pod("88888888888"), {"metadata": invalid["metadata"]})
    assert COUNT in error
    [error] = webhook.validate(fast_pod("99999999999"), {"metadata": fast_pod(3)["metadata"]})
    assert COUNT in error


def test_an_incomplete_groups_deleted_pods_are_let_go_and_then_forgotten():
    """Kueue finalizes a group's inactive pods before it looks at whether the group is whole:
    a pod deleted from a group that never formed leaves, and so does what was kept for it."""
    kube = RecordingKube()
    controller = PodController(state(), kube, writer=None)
    deleted = pod("p0", group="grp", total=3, deleting=True)

    async def go():
        for key in controller.upsert(deleted):
            await controller.sync(key)
        finalized = [path for path, body in kube.patches if body["metadata"]["finalizers"] is None]
        assert finalized == ["/api/v1/namespaces/ns/pods/p0"]
        for key in controller.forget("ns", "p0"):  # the watch shows it gone
            await controller.sync(key)

    asyncio.run(go())
    assert not controller.groups and not controller._incomplete_reported


# ---- LeaderWorkerSets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "old", "field"),
    [
        (leaderworkerset(replicas=INT32_MAX), None, "spec.replicas"),
        (leaderworkerset(replicas=1001), None, "spec.replicas"),
        (leaderworkerset(replicas=-1), None, "spec.replicas"),
        (leaderworkerset(replicas="2"), None, "spec.replicas"),
        (leaderworkerset(replicas=2000), leaderworkerset(replicas=10), "spec.replicas"),
        (leaderworkerset(size=0), None, "spec.leaderWorkerTemplate.size"),
        (leaderworkerset(size=INT32_MAX + 1), None, "spec.leaderWorkerTemplate.size"),
    ],
    ids=[
        "int32-max",
        "one-over",
        "negative",
        "not-a-number",
        "scaled-up-past",
        "size-0",
        "size-over-int32",
    ],
)
def test_the_webhook_refuses_numbers_past_the_bound_naming_the_field_and_the_bound(obj, old, field):
    [error] = lws_webhook.validate(obj, old, max_replicas=1000)
    assert error.startswith(f"{field}: Invalid value")
    assert ("1000" if field == "spec.replicas" else str(INT32_MAX)) in error


@pytest.mark.parametrize(
    ("obj", "old"),
    [
        (leaderworkerset(replicas=1000), None),
        (leaderworkerset(replicas=0), None),
        (leaderworkerset(replicas=1500), leaderworkerset(replicas=3000)),  # scaling down
        (leaderworkerset(replicas=3000), leaderworkerset(replicas=3000)),  # relabelled only
    ],
    ids=["at-the-bound", "zero", "over-a-lowered-bound-scaling-down", "over-it-unchanged"],
)
def test_an_object_within_the_bound_or_not_growing_past_it_passes(obj, old):
    assert lws_webhook.validate(obj, old, max_replicas=1000) == []


def count_calls(monkeypatch, module, name: str, limit: int) -> list[int]:
    """Count calls of module.name, failing the test at `limit` (before today's loop would
    run for hours)."""
    calls = [0]
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls[0] += 1
        assert calls[0] <= limit, f"{name} called per replica"
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_a_leaderworkerset_past_the_bound_gets_an_event_and_nothing_per_replica(monkeypatch):
    names = count_calls(monkeypatch, L, "group_workload_name", limit=10)
    kube = RecordingKube()
    controller = LeaderWorkerSetController(state(), kube, {}, max_replicas=1000)

    async def go():
        for _ in range(3):  # synced again on every change: one event per cause
            for key in controller.upsert(leaderworkerset(replicas=INT32_MAX)):
                await controller.sync(key)

    asyncio.run(go())
    assert names[0] == 0 and kube.created == []
    [(name, reason, message)] = kube.events
    assert (name, reason) == ("lws", "ErrWorkloadCompose")
    assert "spec.replicas" in message and "1000" in message


def test_a_leaderworkersets_pod_sets_are_built_once_for_all_its_groups(monkeypatch):
    built = count_calls(monkeypatch, L, "pod_sets", limit=1_000)
    kube = RecordingKube()
    controller = LeaderWorkerSetController(state(), kube, {})
    asyncio.run(controller.sync(controller.upsert(leaderworkerset(replicas=50))[0]))
    assert len(kube.created) == 50
    assert len({w["metadata"]["name"] for w in kube.created}) == 50
    assert built[0] == 1


def test_naming_a_leaderworkersets_groups_gives_way_to_the_loop():
    """Every group's Workload already exists: nothing awaits an API call, yet the lease
    renewal and the webhooks (other tasks on the loop) still run while the names are made."""
    st_ = state()
    obj = leaderworkerset(replicas=1000)
    controller = LeaderWorkerSetController(st_, RecordingKube(), {})
    for index in range(1000):
        workload = proj.workload_from_object(
            {
                "metadata": {
                    "name": L.group_workload_name(obj, index),
                    "namespace": "ns",
                    "ownerReferences": [
                        {
                            "apiVersion": "leaderworkerset.x-k8s.io/v1",
                            "kind": "LeaderWorkerSet",
                            "name": "lws",
                            "uid": "lws-uid",
                        }
                    ],
                },
                "spec": {"podSets": [{"name": "main", "count": 3, "template": {}}]},
            }
        )
        st_.upsert_workload(workload)
        controller.workload_changed(workload)
    ticks = [0]

    async def ticker():
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    async def go():
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks[0]
        await controller.sync(controller.upsert(obj)[0])
        during = ticks[0] - before
        task.cancel()
        return during

    assert asyncio.run(go()) >= 1000 // YIELD_EVERY


def test_a_workload_the_api_server_refuses_is_said_on_its_owner():
    refused = KubeError(422, 'Workload.kueue.x-k8s.io "x" is invalid: spec.podSets[0].count')
    kube = RecordingKube(refuse=refused)
    controller = LeaderWorkerSetController(state(), kube, {})
    asyncio.run(controller.sync(controller.upsert(leaderworkerset(replicas=5))[0]))
    [(name, reason, message)] = kube.events  # the first refusal stops the rest
    assert (name, reason) == ("lws", "ErrWorkloadCompose")
    assert "refused by the API server" in message and "spec.podSets[0].count" in message


def test_paced_gives_way_every_so_many_items():
    async def go():
        switches = [0]

        async def other():
            while True:
                switches[0] += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(other())
        await asyncio.sleep(0)
        start = switches[0]
        items = [i async for i in paced(range(10 * YIELD_EVERY))]
        task.cancel()
        return items, switches[0] - start

    items, switches = asyncio.run(go())
    assert items == list(range(10 * YIELD_EVERY))
    assert switches == 9  # after items 256, 512, ...: never before the first


def test_a_workload_refused_because_its_namespace_is_going_is_not_retried_nor_said():
    """The owner goes with its namespace: no event (it could not be recorded there) and no
    error for the caller's retry, which would only send the same create again."""
    terminating = KubeError(403, "being terminated", causes=("NamespaceTerminating",))
    kube = RecordingKube(refuse=terminating)
    controller = LeaderWorkerSetController(state(), kube, {})
    asyncio.run(controller.sync(controller.upsert(leaderworkerset(replicas=5))[0]))
    assert kube.events == [] and kube.created == []


def test_a_workload_forbidden_for_another_reason_is_raised_for_the_retry():
    kube = RecordingKube(refuse=KubeError(403, "rbac says no"))
    controller = LeaderWorkerSetController(state(), kube, {})
    with pytest.raises(KubeError):
        asyncio.run(controller.sync(controller.upsert(leaderworkerset(replicas=5))[0]))
