"""The event loop on small traces whose every number is worked out by hand."""

from __future__ import annotations

from tests.unit.offline.simulate.traces import (
    HOST,
    RACK,
    job,
    running_over_time,
    simulate,
    two_racks,
)


def rack_jobs_and_late_small_ones() -> dict:
    """Four 4-cpu hosts in two racks. a and b fill a rack each; c (4 cpu) and d (1 cpu) find
    no room until a leaves at 10, then both start."""
    return two_racks(
        [
            job("a", 0, 4, "2", duration=10, level=RACK),
            job("b", 1, 4, "2", duration=10, level=RACK),
            job("c", 2, 2, "2", duration=5),
            job("d", 3, 1, "1"),  # never leaves
        ]
    )


def test_pods_before_the_first_failure_and_the_totals():
    report = simulate(rack_jobs_and_late_small_ones())
    assert report["podsPlacedBeforeFirstFailure"] == 8  # a and b
    assert report["firstFailure"]["time"] == 2.0
    assert report["firstFailure"]["workload"] == "c"
    assert "fit" in report["firstFailure"]["message"]
    assert report["podsPlaced"] == 11
    assert report["pods"] == 11
    assert (report["workloadsAdmitted"], report["workloadsNeverAdmitted"]) == (4, 0)
    assert report["nodes"] == 4
    assert report["end"] == 15.0  # c leaves at 10 + 5; d never does


def test_the_timeline_follows_every_event():
    timeline = simulate(rack_jobs_and_late_small_ones())["timeline"]
    assert [e["time"] for e in timeline] == [0, 1, 2, 3, 10, 11, 15]
    assert [e["workloadsWaiting"] for e in timeline] == [0, 0, 1, 2, 0, 0, 0]
    assert [e["podsRunning"] for e in timeline] == [4, 8, 8, 8, 7, 3, 1]
    # cpu in use over 16: a; a+b; ...; b+c+d after a leaves; c+d; d
    assert [e["utilisation"]["cpu"] for e in timeline] == [
        0.5,
        1.0,
        1.0,
        1.0,
        13 / 16,
        5 / 16,
        1 / 16,
    ]
    assert timeline[0]["utilisation"]["pods"] == round(4 / 440, 6)  # 110 pods a host


def test_a_departure_lets_the_waiting_workloads_in_at_its_time():
    seen = running_over_time(rack_jobs_and_late_small_ones())
    assert seen[3] == (3.0, {"a", "b"})
    assert seen[4] == (10.0, {"b", "c", "d"})
    report = simulate(rack_jobs_and_late_small_ones())
    assert report["waitSeconds"] == {"median": 0.0, "p90": 8.0, "max": 8.0}  # c 8 s, d 7 s


def test_pending_workloads_are_retried_only_when_capacity_comes_back():
    # first tries of a, b, c, d, then c and d again at 10; none at 3, when only d arrives
    assert simulate(rack_jobs_and_late_small_ones())["decisions"]["count"] == 6


def test_best_effort_a_later_workload_that_fits_goes_ahead():
    seen = running_over_time(
        two_racks(
            [
                job("x", 0, 3, "4", duration=10),  # three of the four hosts
                job("big", 1, 2, "4", duration=5),  # needs two: waits
                job("small", 2, 1, "4", duration=20),  # the fourth host: goes ahead of big
            ]
        )
    )
    assert seen == [
        (0.0, {"x"}),
        (1.0, {"x"}),
        (2.0, {"x", "small"}),
        (10.0, {"small", "big"}),
        (15.0, {"small"}),
        (22.0, set()),
    ]


def fill_then_two_waiting(second_priority: int = 0) -> dict:
    return two_racks(
        [
            job("fill", 0, 4, "4", duration=10),
            job("first", 1, 3, "4", duration=5),
            job("second", 2, 3, "4", duration=5, priority=second_priority),
        ]
    )


def test_fifo_the_earlier_arrival_gets_the_room_first():
    seen = dict(running_over_time(fill_then_two_waiting()))
    assert seen[10.0] == {"first"}
    assert seen[15.0] == {"second"}
    assert seen[20.0] == set()


def test_a_higher_priority_goes_first_whatever_its_arrival():
    seen = dict(running_over_time(fill_then_two_waiting(second_priority=10)))
    assert seen[10.0] == {"second"}
    assert seen[15.0] == {"first"}


def test_fragmentation_is_the_free_cpu_in_racks_that_cannot_host_the_median_request():
    """f takes 3 cpu of one host for good: its rack keeps 1 + 4 cpu free, room for one 3-cpu
    pod, not the two of the median request (r1, two 3-cpu pods in one rack): 5 of 13 free
    cpu are stranded. While r1 or r2 runs in the other rack, all the free cpu is."""
    report = simulate(
        two_racks(
            [
                job("f", 0, 1, "3", level=HOST),
                job("r1", 1, 2, "3", duration=1, level=RACK),
                job("r2", 3, 2, "3", duration=1, level=RACK),
            ]
        )
    )
    assert report["fragmentationReference"] == {
        "workload": "r1",
        "podSet": "main",
        "count": 2,
        "requests": {"cpu": "3"},
        "level": RACK,
    }
    fractions = [e["fragmentation"]["cpu"] for e in report["timeline"]]
    assert fractions == [round(5 / 13, 6), 1.0, round(5 / 13, 6), 1.0, round(5 / 13, 6)]


def test_a_workload_that_never_fits_stays_pending():
    report = simulate(two_racks([job("huge", 0, 5, "4", level=RACK), job("ok", 1, 1, "1")]))
    assert (report["workloadsAdmitted"], report["workloadsNeverAdmitted"]) == (1, 1)
    assert report["podsPlacedBeforeFirstFailure"] == 0
    assert report["timeline"][-1]["workloadsWaiting"] == 1


def test_no_failure_means_every_placed_pod_counts_before_it():
    report = simulate(two_racks([job("a", 0, 2, "1", duration=1), job("b", 5, 2, "1")]))
    assert report["firstFailure"] is None
    assert report["podsPlacedBeforeFirstFailure"] == report["podsPlaced"] == 4


QUEUE = {"name": "q", "nominalQuota": {"cpu": "8"}}


def test_with_cluster_queues_quota_holds_a_workload_until_a_departure_returns_it():
    document = two_racks(
        [job("w1", 0, 2, "4", duration=10), job("w2", 1, 1, "1", duration=5)],
        clusterQueues=[QUEUE],
    )
    report = simulate(document)
    assert report["admission"] == "clusterQueues"
    assert report["firstFailure"]["workload"] == "w2"
    assert "insufficient unused quota for cpu" in report["firstFailure"]["message"]
    assert dict(running_over_time(document))[10.0] == {"w2"}
    assert report["podsPlaced"] == 3


def test_a_preempted_workload_is_queued_again_and_readmitted_when_room_returns():
    queue = {
        "name": "q",
        "nominalQuota": {"cpu": "16"},
        "preemption": {"withinClusterQueue": "LowerPriority"},
    }
    document = two_racks(
        [
            job("low", 0, 4, "4", duration=100),
            job("high", 1, 2, "4", duration=10, priority=10),
        ],
        clusterQueues=[queue],
    )
    assert running_over_time(document) == [
        (0.0, {"low"}),
        (1.0, {"high"}),
        (11.0, {"low"}),  # runs its whole duration again, as a restarted Job does
        (111.0, set()),
    ]
    report = simulate(document)
    assert report["evictions"] == 1
    assert report["podsPlaced"] == 4 + 2 + 4
    assert report["workloadsAdmitted"] == 2
    assert report["firstFailure"] is None  # high's first try preempted and was admitted


def test_numa_zones_come_back_when_their_pods_leave():
    def node(name: str) -> dict:
        zones = [{"name": f"node-{i}", "available": {"cpu": "4"}} for i in range(2)]
        return {
            "name": name,
            "labels": {RACK: "r1", HOST: name},
            "allocatable": {"cpu": "32", "memory": "64Gi"},
            "numa": {"zones": zones},
        }

    def guaranteed(name: str, arrival: float, pods: int, duration: float) -> dict:
        container = {"name": "main", "resources": {"limits": {"cpu": "3", "memory": "1Gi"}}}
        podset = {"name": "main", "count": pods, "containers": [container]}
        return {"name": name, "arrival": arrival, "duration": duration, "podSets": [podset]}

    document = {
        "topology": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        "featureGates": {"TASNUMAZones": True},
        "nodes": [node("h0"), node("h1")],
        "workloads": [guaranteed("all-zones", 0, 4, 10), guaranteed("one-more", 1, 1, 10)],
    }
    seen = dict(running_over_time(document))
    assert seen[1.0] == {"all-zones"}  # every zone is taken: cpu alone would have fit
    assert seen[10.0] == {"one-more"}
