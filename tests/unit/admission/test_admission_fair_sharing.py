"""Admission fair sharing: Kueue v0.17's formulas (pkg/util/admissionfairsharing), its
ordering cases (pkg/cache/queue/cluster_queue_test.go TestFsAdmission) and properties."""

from __future__ import annotations

import math
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.admission import admission_fair_sharing as afs
from tas.api.fairsharing import AdmissionFairSharing
from tas.cache import projections as proj
from tests.unit.admission.fixtures import cluster_queue, make_state, two_racks, workload

USAGE_BASED = "UsageBasedAdmissionFairSharing"


def config(half_life: float = 0.0, interval: float = 300.0, **weights: float):
    return AdmissionFairSharing(
        usage_half_life_seconds=half_life,
        usage_sampling_interval_seconds=interval,
        resource_weights=MappingProxyType(dict(weights)),
    )


def fair_state(mode: str | None, local_queues: dict[str, float | None]):
    """A ClusterQueue `cq` (with admissionScope `mode`) and its LocalQueues in namespace
    `default`, each with its fairSharing.weight (None: unset)."""
    cq = cluster_queue()
    if mode is not None:
        cq["spec"]["admissionScope"] = {"admissionMode": mode}
    state = make_state(two_racks(), cq)
    los = {}
    for name, weight in local_queues.items():
        state.upsert_local_queue("default", name, "cq")
        spec = {"clusterQueue": "cq"}
        if weight is not None:
            spec["fairSharing"] = {"weight": str(weight)}
        los[("default", name)] = {"metadata": {"namespace": "default", "name": name}, "spec": spec}
    return state, los


def pending(name: str, queue: str, priority: int, **kw) -> proj.WorkloadInfo:
    obj = workload(name, pods=1, priority=priority, namespace="default", **kw)
    obj["spec"]["queueName"] = queue
    return proj.workload_from_object(obj)


# ---- Kueue's formulas --------------------------------------------------------------------


def test_a_half_life_of_zero_gives_no_weight_to_new_usage():
    assert afs.alpha_rate(300, 0) == 0.0


def test_after_one_half_life_the_old_usage_halves():
    assert afs.decayed_consumed({"cpu": 4000}, {}, 600, 600) == {"cpu": 2000}
    # and the new usage takes the other half
    assert afs.decayed_consumed({"cpu": 4000}, {"cpu": 2000}, 600, 600) == {"cpu": 3000}


def test_after_two_half_lives_a_quarter_of_the_old_usage_is_left():
    assert afs.decayed_consumed({"gpu": 8000}, {}, 1200, 600) == {"gpu": 2000}


def test_scaling_truncates_to_a_milli_unit_as_kueue_does():
    # Kueue's MulByFloat: int64(milli * f)
    assert afs.scaled({"cpu": 1}, 0.99) == {"cpu": 0}
    assert afs.scaled({"cpu": 3333}, 0.5) == {"cpu": 1666}


def test_entry_penalty_is_one_sampling_interval_of_the_requests():
    # interval = half life: alpha 0.5
    penalty = afs.entry_penalty({"cpu": 4000}, config(half_life=300, interval=300))
    assert penalty == {"cpu": 2000}
    assert afs.entry_penalty({"cpu": 4000}, config(half_life=0)) == {"cpu": 0}


def test_usage_is_weighted_by_resource_and_divided_by_the_local_queue_weight():
    cfg = config(gpu=4.0)
    # (2 cpu * 1 + 1 gpu * 4) / 2
    assert afs.local_queue_usage({"cpu": 2000}, {"gpu": 1000}, 2.0, cfg) == 3.0


def test_a_half_life_of_zero_resets_the_consumed_resources_at_each_sample():
    state, los = fair_state(USAGE_BASED, {"lqA": None})
    now = [1000.0]
    usage = afs.LocalQueueUsage(state, config(half_life=0), lambda: None, clock=lambda: now[0])
    stored = {
        "status": {
            "fairSharing": {
                "admissionFairSharingStatus": {
                    "consumedResources": {"cpu": "8"},
                    "lastUpdate": "2026-01-01T00:00:00Z",
                }
            }
        }
    }
    usage.local_queue(("default", "lqA"), {**los[("default", "lqA")], **stored})
    assert usage.consumed[("default", "lqA")].resources == {"cpu": 8000}
    now[0] += 300
    usage.sample()
    assert usage.consumed[("default", "lqA")].resources == {"cpu": 0}


def test_sampling_decays_towards_the_admitted_usage():
    state, los = fair_state(USAGE_BASED, {"lqA": None})
    now = [0.0]
    usage = afs.LocalQueueUsage(state, config(half_life=600), lambda: None, clock=lambda: now[0])
    usage.local_queue(("default", "lqA"), los[("default", "lqA")])
    running = workload("run", pods=2, cpu="2", namespace="default")
    running["spec"]["queueName"] = "lqA"
    running["status"] = _admitted_status()
    state.upsert_workload(proj.workload_from_object(running))
    now[0] = 600.0
    usage.sample()
    assert usage.consumed[("default", "lqA")].resources == {"cpu": 2000}  # half of 4 cpu
    assert usage.consumed[("default", "lqA")].last_update == 600.0


def _admitted_status() -> dict:
    return {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": "tas"}, "count": 2}],
        },
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
    }


# ---- Kueue's ordering cases (TestFsAdmission) ------------------------------------------

FS_ADMISSION = {
    "workloads are ordered by LQ usage, instead of priorities": dict(
        mode=USAGE_BASED,
        lqs={"lqA": 1, "lqB": 1},
        cfg=config(),
        consumed={"lqA": {"cpu": 2000}, "lqB": {"cpu": 1000}},
        wls=[("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)],
        want="wlB-low",
    ),
    "workloads are ordered by LQ usage with respect to resource weights": dict(
        mode=USAGE_BASED,
        lqs={"lqA": 1, "lqB": 1},
        cfg=config(cpu=0.0, gpu=1.0),
        consumed={
            "lqA": {"cpu": 1000, "gpu": 10000},
            "lqB": {"cpu": 1000000, "gpu": 1000},
        },
        wls=[("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)],
        want="wlB-low",
    ),
    "workloads are ordered by LQ usage with respect to LQs' fair sharing weights": dict(
        mode=USAGE_BASED,
        lqs={"lqA": 1, "lqB": 2},
        cfg=config(),
        consumed={"lqA": {"cpu": 10000}, "lqB": {"cpu": 6000}},
        wls=[("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)],
        want="wlB-low",
    ),
    "workloads with the same LQ usage are ordered by priority": dict(
        mode=USAGE_BASED,
        lqs={"lqA": 1},
        cfg=config(),
        consumed={"lqA": {"cpu": 10000}},
        wls=[("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)],
        want="wlA-high",
    ),
    "workloads with NoFairSharing CQ are ordered by priority": dict(
        mode="NoAdmissionFairSharing",
        lqs={"lqA": None},
        cfg=config(),
        consumed={},
        wls=[("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)],
        want="wlA-high",
    ),
    "workloads with no FS config are ordered by priority": dict(
        mode="NoAdmissionFairSharing",
        lqs={"lqA": None},
        cfg=None,
        consumed={},
        wls=[("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)],
        want="wlA-high",
    ),
}


@pytest.mark.parametrize("case", FS_ADMISSION.values(), ids=FS_ADMISSION.keys())
def test_fs_admission(case):
    from tas.admission.decide import pending_order

    state, los = fair_state(case["mode"], case["lqs"])
    usage = afs.LocalQueueUsage(state, case["cfg"], lambda: None)
    for key, obj in los.items():
        usage.local_queue(key, obj)
    for name, resources in case["consumed"].items():
        usage.consumed[("default", name)] = afs.Consumed(dict(resources), 0.0)
    wls = [pending(name, lq, prio) for name, lq, prio in case["wls"]]
    ordered = usage.order(state.cluster_queues["cq"], pending_order(wls))
    assert ordered[0].name == case["want"]


def test_an_admission_moves_its_local_queue_behind_at_once():
    """Kueue's entry penalty: the next workload comes from the other LocalQueue."""
    from tas.admission.decide import pending_order

    state, los = fair_state(USAGE_BASED, {"lqA": None, "lqB": None})
    usage = afs.LocalQueueUsage(state, config(half_life=300, interval=300), lambda: None)
    for key, obj in los.items():
        usage.local_queue(key, obj)
    usage.consumed[("default", "lqA")] = afs.Consumed({"cpu": 1000}, 0.0)
    usage.consumed[("default", "lqB")] = afs.Consumed({"cpu": 1500}, 0.0)
    wls = [pending(f"a{i}", "lqA", 0, created=f"2026-01-01T00:00:0{i}Z") for i in range(3)] + [
        pending(f"b{i}", "lqB", 0, created=f"2026-01-01T00:01:0{i}Z") for i in range(3)
    ]
    ordered = usage.order(state.cluster_queues["cq"], pending_order(wls))
    first = ordered[0]
    assert first.name == "a0"
    usage.assumed(first)  # 1 cpu, penalty 0.5: lqA's usage 1.5, lqB's 1.5: a tie
    second = ordered[1]
    assert second.name == "a1"  # ties keep Kueue's usual order (a1 is older)
    usage.assumed(second)  # lqA 2.0 > lqB 1.5
    assert ordered[2].name == "b0"
    assert [w.name for w in ordered][3:] == ["b1", "b2", "a2"]  # no admission meanwhile


def test_a_failed_admission_takes_its_penalty_back_and_a_stored_one_is_folded_in():
    state, los = fair_state(USAGE_BASED, {"lqA": None})
    usage = afs.LocalQueueUsage(state, config(half_life=300, interval=300), lambda: None)
    usage.local_queue(("default", "lqA"), los[("default", "lqA")])
    wl = pending("a", "lqA", 0, cpu="2")
    state.upsert_workload(wl)
    usage.assumed(wl)
    assert usage.penalties[("default", "lqA")] == {"cpu": 1000}
    usage.settle()  # not assumed in the cache (the write failed): taken back
    assert usage.penalties[("default", "lqA")] == {}
    assert usage.consumed[("default", "lqA")].resources == {}
    stored = workload("b", pods=2, cpu="2", namespace="default")
    stored["spec"]["queueName"] = "lqA"
    usage.assumed(proj.workload_from_object(stored))  # 4 cpu: penalty 2 cpu
    stored["status"] = _admitted_status()
    state.upsert_workload(proj.workload_from_object(stored))  # the watch shows it stored
    usage.settle()
    assert usage.penalties[("default", "lqA")] == {}
    assert usage.consumed[("default", "lqA")].resources == {"cpu": 2000}


def test_a_restart_goes_on_from_the_stored_status():
    state, los = fair_state(USAGE_BASED, {"lqA": None})
    usage = afs.LocalQueueUsage(state, config(half_life=600), lambda: None, clock=lambda: 50.0)
    obj = dict(los[("default", "lqA")])
    obj["status"] = {
        "fairSharing": {
            "admissionFairSharingStatus": {
                "consumedResources": {"cpu": "1500m", "memory": "2Gi"},
                "lastUpdate": "2026-01-01T00:00:00Z",
            }
        }
    }
    usage.local_queue(("default", "lqA"), obj)
    status = usage.status(("default", "lqA"))
    assert status["admissionFairSharingStatus"]["consumedResources"] == {
        "cpu": "1500m",
        "memory": "2Gi",
    }
    assert usage.consumed[("default", "lqA")].last_update == 50.0  # sampled from now on


def test_no_status_when_admission_fair_sharing_is_off():
    state, los = fair_state(USAGE_BASED, {"lqA": None})
    usage = afs.LocalQueueUsage(state, None, lambda: None)
    usage.local_queue(("default", "lqA"), los[("default", "lqA")])
    assert usage.status(("default", "lqA")) is None


def test_a_bad_weight_is_named_and_defaults_to_one(caplog):
    state, los = fair_state(USAGE_BASED, {"lqA": None})
    usage = afs.LocalQueueUsage(state, config(), lambda: None)
    obj = {**los[("default", "lqA")], "spec": {"fairSharing": {"weight": "lots"}}}
    usage.local_queue(("default", "lqA"), obj)
    assert usage.weights[("default", "lqA")] == 1.0
    assert "spec.fairSharing.weight" in caplog.text


# ---- properties ---------------------------------------------------------------------------

resources = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 10**9), max_size=3
)


@settings(max_examples=60, deadline=None)
@given(
    consumed=st.lists(resources, min_size=1, max_size=4),
    weights=st.lists(st.sampled_from([0, 0.5, 1, 3]), min_size=4, max_size=4),
    priorities=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=12),
)
def test_the_order_is_the_base_order_sorted_stably_by_usage(consumed, weights, priorities):
    """With no admission meanwhile, the order is a total order consistent with usage: usage
    never decreases along it, and equal usages keep Kueue's usual order."""
    from tas.admission.decide import pending_order

    names = [f"lq{i}" for i in range(len(consumed))]
    state, los = fair_state(USAGE_BASED, {n: w for n, w in zip(names, weights, strict=False)})
    usage = afs.LocalQueueUsage(state, config(), lambda: None)
    for key, obj in los.items():
        usage.local_queue(key, obj)
    for name, res in zip(names, consumed, strict=True):
        usage.consumed[("default", name)] = afs.Consumed(res, 0.0)
    wls = [
        pending(f"w{i}", names[lq % len(names)], prio) for i, (prio, lq) in enumerate(priorities)
    ]
    base = pending_order(wls)
    got = list(usage.order(state.cluster_queues["cq"], base))
    assert sorted(w.name for w in got) == sorted(w.name for w in wls)
    rank = {w.name: i for i, w in enumerate(base)}
    keys = [(usage.usage(("default", w.queue_name)), rank[w.name]) for w in got]
    assert keys == sorted(keys)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["assume", "settle", "sample", "admit"]), st.integers(1, 8)),
        max_size=20,
    ),
    half_life=st.sampled_from([0.0, 1.0, 300.0]),
)
def test_usage_is_never_negative(steps, half_life):
    state, los = fair_state(USAGE_BASED, {"lqA": None, "lqB": 2})
    now = [0.0]
    usage = afs.LocalQueueUsage(
        state, config(half_life=half_life, interval=60), lambda: None, clock=lambda: now[0]
    )
    for key, obj in los.items():
        usage.local_queue(key, obj)
    for n, (step, cpu) in enumerate(steps):
        now[0] += 37.0
        lq = "lqA" if n % 2 else "lqB"
        if step == "assume":
            usage.assumed(pending(f"w{n}", lq, 0, cpu=str(cpu)))
        elif step == "admit":
            obj = workload(f"w{n}", pods=2, cpu=str(cpu), namespace="default")
            obj["spec"]["queueName"] = lq
            obj["status"] = _admitted_status()
            state.upsert_workload(proj.workload_from_object(obj))
        elif step == "settle":
            usage.settle()
        else:
            usage.sample()
        for key in los:
            assert usage.usage(key) >= 0
            assert all(v >= 0 for v in usage.consumed[key].resources.values())
            assert all(v >= 0 for v in usage.penalties.get(key, {}).values())


@settings(max_examples=60, deadline=None)
@given(consumed=resources, penalty=resources, weight=st.sampled_from([0.5, 1.0, 4.0]))
def test_a_resource_of_weight_zero_counts_for_nothing(consumed, penalty, weight):
    cfg = config(cpu=0.0)
    with_cpu = afs.local_queue_usage(consumed, penalty, weight, cfg)
    without = afs.local_queue_usage(
        {r: v for r, v in consumed.items() if r != "cpu"},
        {r: v for r, v in penalty.items() if r != "cpu"},
        weight,
        cfg,
    )
    assert math.isclose(with_cpu, without)


# ---- in the admission loop ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "want"),
    [(config(half_life=300, interval=300), ["b1", "b2"]), (None, ["a1", "a2"])],
    ids=["on: the queue that used less first", "off: the older first"],
)
def test_the_loop_admits_from_the_local_queue_that_used_less(cfg, want):
    from tas.admission.loop import AdmissionLoop
    from tests.unit.admission.test_loop import FakeWriter, add, admitted, cycle

    state, los = fair_state(USAGE_BASED, {"a": None, "b": None})
    state.upsert_namespace("default", {})
    writer = FakeWriter()
    loop = AdmissionLoop(state, writer, admission_fair_sharing=cfg)
    used = {"fairSharing": {"admissionFairSharingStatus": {"consumedResources": {"cpu": "10"}}}}
    loop.fair.local_queue(("default", "a"), {**los[("default", "a")], "status": used})
    loop.fair.local_queue(("default", "b"), los[("default", "b")])
    for i, (name, lq) in enumerate([("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")]):
        obj = workload(
            name, pods=2, cpu="4", namespace="default", created=f"2026-01-01T00:0{i}:00Z"
        )
        obj["spec"]["queueName"] = lq
        add(state, obj)
    cycle(loop)
    assert admitted(writer) == want
    fair = writer.lq[("default", "a")].get("fairSharing")
    if cfg is None:
        assert fair is None
    else:
        assert fair["admissionFairSharingStatus"]["consumedResources"] == {"cpu": "10"}
        assert writer.lq[("default", "b")]["fairSharing"]["admissionFairSharingStatus"]


def test_a_decision_taken_again_charges_one_penalty():
    state, _ = fair_state(USAGE_BASED, {"lqA": None})
    usage = afs.LocalQueueUsage(state, config(half_life=300, interval=300), lambda: None)
    wl = pending("a", "lqA", 0, cpu="2")
    usage.assumed(wl)
    usage.assumed(wl)  # its write conflicted and it was decided again before any settling
    assert usage.penalties[("default", "lqA")] == {"cpu": 1000}


@pytest.mark.parametrize(
    ("weight", "want"),
    [("2", 1.0), ("500m", 4.0), ("0", math.inf), ("-1", 2.0)],
    ids=["heavier", "lighter", "zero: last once it used anything", "negative: refused, 1"],
)
def test_a_local_queue_weight_divides_its_usage(weight, want):
    state, _ = fair_state(USAGE_BASED, {"lqA": None})
    usage = afs.LocalQueueUsage(state, config(), lambda: None)
    usage.local_queue(("default", "lqA"), {"spec": {"fairSharing": {"weight": weight}}})
    usage.consumed[("default", "lqA")] = afs.Consumed({"cpu": 2000}, 0.0)
    assert usage.usage(("default", "lqA")) == want
