"""The dominant resource share against Kueue v0.17.0's TestDominantResourceShare
(pkg/cache/scheduler/fair_sharing_test.go), case by case with Kueue's names and expected
rounded shares, dominant resources and borrowing flags; plus its TestIsBorrowingOn.

Kueue counts "example.com/gpu" in units and cpu in milli-units; we count both in milli-units,
which changes no ratio.
"""

from __future__ import annotations

import math

import pytest

from tas.api.models.fairsharing import MAX_WEIGHTED_SHARE
from tas.cache import fairshare
from tas.cache.fairshare import DRS
from tas.cache.projections import cluster_queue_from_object, cohort_from_object
from tas.cache.quota import QuotaTree

GPU = "example.com/gpu"
CPU = "cpu"


def quota(resource: str, nominal: str, borrowing: str = "", lending: str = "") -> dict:
    out = {"name": resource, "nominalQuota": nominal}
    if borrowing:
        out["borrowingLimit"] = borrowing
    if lending:
        out["lendingLimit"] = lending
    return out


def flavor(name: str, *quotas: dict) -> dict:
    return {"name": name, "resources": list(quotas)}


def groups(*flavors: dict) -> list:
    covered = sorted({q["name"] for f in flavors for q in f["resources"]})
    return [{"coveredResources": covered, "flavors": list(flavors)}]


def cq(name: str, *flavors: dict, cohort: str | None = None, weight: str | None = None) -> dict:
    spec: dict = {"namespaceSelector": {}, "resourceGroups": groups(*flavors)}
    if cohort:
        spec["cohortName"] = cohort
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"metadata": {"name": name}, "spec": spec}


def cohort_obj(name: str, *flavors: dict, parent: str = "", weight: str | None = None) -> dict:
    spec: dict = {"resourceGroups": groups(*flavors) if flavors else []}
    if parent:
        spec["parentName"] = parent
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"metadata": {"name": name}, "spec": spec}


def build(cqs: list[dict], cohorts: list[dict], usage: dict) -> QuotaTree:
    """usage: (flavor, resource) -> milli, all in ClusterQueue "cq" (as Kueue's test)."""
    infos = {c["metadata"]["name"]: cluster_queue_from_object(c) for c in cqs}
    cohort_infos = {c["metadata"]["name"]: cohort_from_object(c) for c in cohorts}

    def used(name: str, flavor_name: str) -> dict:
        if name != "cq":
            return {}
        return {r: v for (f, r), v in usage.items() if f == flavor_name}

    return QuotaTree(infos, cohort_infos, used)


def lending_cq(*flavors: dict, weight: str | None = "1") -> dict:
    return cq("lending-cq", *flavors, cohort="test-cohort", weight=weight)


D = "default"
TWO_CPU_FIVE_GPU = flavor(D, quota(CPU, "2"), quota(GPU, "5"))
EIGHT_CPU_FIVE_GPU = flavor(D, quota(CPU, "8"), quota(GPU, "5"))

# name: (queues, cohorts, usage, workload request, {node: (rounded, dominant, borrowing)})
CASES = {
    "no cohort": (
        [cq("cq", flavor(D, quota(CPU, "2000"), quota(GPU, "5")))],
        [],
        {(D, CPU): 1_000_000, (D, GPU): 2000},
        None,
        {("cq", "cq"): (0, "", False)},
    ),
    "usage below nominal": (
        [
            cq("cq", TWO_CPU_FIVE_GPU, cohort="test-cohort", weight="1"),
            lending_cq(EIGHT_CPU_FIVE_GPU),
        ],
        [],
        {(D, CPU): 1000, (D, GPU): 2000},
        None,
        {
            ("cq", "cq"): (0, "", False),
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "usage above nominal": (
        [
            cq("cq", TWO_CPU_FIVE_GPU, cohort="test-cohort", weight="1"),
            lending_cq(EIGHT_CPU_FIVE_GPU),
        ],
        [],
        {(D, CPU): 3000, (D, GPU): 7000},
        None,
        {
            ("cq", "cq"): (200, GPU, True),  # (7-5)*1000/10
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "usage slightly above nominal in a cohort with large quotas": (
        [
            cq("cq", flavor(D, quota(GPU, "500")), cohort="test-cohort", weight="1"),
            lending_cq(flavor(D, quota(GPU, "1000")), weight="300"),
        ],
        [],
        {(D, GPU): 501_000},
        None,
        {
            ("cq", "cq"): (1, GPU, True),
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "usage way above nominal in a cohort with large quotas and weights": (
        [
            cq("cq", flavor(D, quota(GPU, "500")), cohort="test-cohort", weight="300"),
            lending_cq(flavor(D, quota(GPU, "1000")), weight="300"),
        ],
        [],
        {(D, GPU): 800_000},
        None,
        {
            ("cq", "cq"): (1, GPU, True),
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "one resource above nominal": (
        [
            cq("cq", TWO_CPU_FIVE_GPU, cohort="test-cohort", weight="1"),
            lending_cq(EIGHT_CPU_FIVE_GPU),
        ],
        [],
        {(D, CPU): 3000, (D, GPU): 3000},
        None,
        {
            ("cq", "cq"): (100, CPU, True),  # (3-2)*1000/10
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "usage with workload above nominal": (
        [
            cq("cq", TWO_CPU_FIVE_GPU, cohort="test-cohort", weight="1"),
            lending_cq(EIGHT_CPU_FIVE_GPU),
        ],
        [],
        {(D, CPU): 1000, (D, GPU): 2000},
        {(D, CPU): 4000, (D, GPU): 4000},
        {
            ("cq", "cq"): (300, CPU, True),  # (1+4-2)*1000/10
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "A resource with zero lendable": (
        [
            cq(
                "cq",
                flavor(D, quota(CPU, "2"), quota(GPU, "2", lending="0")),
                cohort="test-cohort",
                weight="1",
            ),
            lending_cq(flavor(D, quota(CPU, "8"), quota(GPU, "64", lending="0"))),
        ],
        [],
        {(D, CPU): 1000, (D, GPU): 1000},
        {(D, CPU): 4000, (D, GPU): 4000},
        {
            ("cq", "cq"): (300, CPU, True),  # (1+4-2)*1000/10
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "multiple flavors": (
        [
            cq(
                "cq",
                flavor("on-demand", quota(CPU, "20")),
                flavor("spot", quota(CPU, "80")),
                cohort="test-cohort",
                weight="1",
            ),
            lending_cq(flavor(D, quota(CPU, "100"))),
        ],
        [],
        {("on-demand", CPU): 15_000, ("spot", CPU): 5000},
        {("on-demand", CPU): 10_000},
        {
            ("cq", "cq"): (25, CPU, True),  # ((15+10-20)+0)*1000/200
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "above nominal with integer weight": (
        [
            cq("cq", flavor(D, quota(GPU, "5")), cohort="test-cohort", weight="2"),
            lending_cq(flavor(D, quota(GPU, "5"))),
        ],
        [],
        {(D, GPU): 7000},
        None,
        {
            ("cq", "cq"): (100, GPU, True),  # ((7-5)*1000/10)/2
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "above nominal with decimal weight": (
        [
            cq("cq", flavor(D, quota(GPU, "5")), cohort="test-cohort", weight="0.5"),
            lending_cq(flavor(D, quota(GPU, "5"))),
        ],
        [],
        {(D, GPU): 7000},
        None,
        {
            ("cq", "cq"): (400, GPU, True),  # ((7-5)*1000/10)/(1/2)
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "above nominal with zero weight": (
        [
            cq("cq", flavor(D, quota(GPU, "5")), cohort="test-cohort", weight="0"),
            lending_cq(flavor(D, quota(GPU, "10"))),
        ],
        [],
        {(D, GPU): 7000},
        None,
        {
            ("cq", "cq"): (MAX_WEIGHTED_SHARE, GPU, True),
            ("cq", "lending-cq"): (0, "", False),
            ("cohort", "test-cohort"): (0, "", False),
        },
    ),
    "cohort has resource share": (
        [cq("cq", flavor(D, quota(GPU, "5")), cohort="child-cohort", weight="1")],
        [
            cohort_obj("child-cohort", parent="root", weight="2"),
            cohort_obj("root", flavor(D, quota(GPU, "45"))),
        ],
        {(D, GPU): 10_000},
        None,
        {
            ("cq", "cq"): (100, GPU, True),  # (5 / 50) * 1000
            ("cohort", "child-cohort"): (50, GPU, True),  # (5 / 50) * 1000 / 2
            ("cohort", "root"): (0, "", False),
        },
    ),
    "resource share defined for resources only available at the root cohort": (
        [cq("cq", flavor(D, quota(GPU, "0")), cohort="child-cohort", weight="1")],
        [
            cohort_obj("child-cohort", parent="root", weight="2"),
            cohort_obj("root", flavor(D, quota(GPU, "50"))),
        ],
        {(D, GPU): 10_000},
        None,
        {
            ("cq", "cq"): (200, GPU, True),  # (10 / 50) * 1000
            ("cohort", "child-cohort"): (100, GPU, True),  # (10 / 50) * 1000 / 2
            ("cohort", "root"): (0, "", False),
        },
    ),
    "resource share affected by borrowing limit": (
        [cq("cq", flavor(D, quota(GPU, "0")), cohort="child-cohort")],
        [
            cohort_obj("child-cohort", flavor(D, quota(GPU, "0", borrowing="10")), parent="root"),
            cohort_obj("root", flavor(D, quota(GPU, "50"))),
        ],
        {(D, GPU): 10_000},
        None,
        {
            ("cq", "cq"): (1000, GPU, True),  # (10 / 10) * 1000
            ("cohort", "child-cohort"): (200, GPU, True),  # (10 / 50) * 1000
            ("cohort", "root"): (0, "", False),
        },
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dominant_resource_share(name: str) -> None:
    cqs, cohorts, usage, request, want = CASES[name]
    tree = build(cqs, cohorts, usage)
    nodes = [("cq", c["metadata"]["name"]) for c in cqs]
    nodes += [("cohort", n) for n in tree.cohorts()]
    got = {}
    for node in nodes:
        drs = fairshare.share(tree, node, request)
        got[node] = (drs.rounded(), drs.dominant, drs.borrowing)
    assert got == want


# Kueue's TestIsBorrowingOn: borrowed (flavor, resource) pairs against a request.
ON_DEMAND, SPOT = ("on-demand", CPU), ("spot", CPU)


@pytest.mark.parametrize(
    ("borrowed", "requested", "want"),
    [
        pytest.param({ON_DEMAND}, {ON_DEMAND: 1000}, True, id="borrows on requested flavor"),
        pytest.param({SPOT}, {ON_DEMAND: 1000}, False, id="borrows on unrequested flavor only"),
        pytest.param({ON_DEMAND, SPOT}, {SPOT: 1000}, True, id="borrows on both, requests one"),
        pytest.param(set(), {ON_DEMAND: 1000}, False, id="no borrowing"),
        pytest.param({ON_DEMAND}, {}, False, id="nil requestedFRs"),
    ],
)
def test_is_borrowing_on(borrowed: set, requested: dict, want: bool) -> None:
    drs = DRS(ratio=1.0, borrowing=bool(borrowed), borrowed=frozenset(borrowed))
    assert drs.borrowing_on(requested) is want


def test_compare_puts_zero_weight_borrowers_last() -> None:
    """Weight 0 while borrowing is beyond every finite share, and its rounded share is
    2^63-1 (Kueue's API documents weight 0 as an infinite share)."""
    huge = DRS(weight=1e-9, ratio=1000.0, borrowing=True)
    zero = DRS(weight=0.0, ratio=1.0, borrowing=True)
    assert fairshare.compare(zero, huge) == 1
    assert fairshare.compare(huge, zero) == -1
    assert zero.precise() == math.inf and zero.rounded() == MAX_WEIGHTED_SHARE
    not_borrowing = DRS(weight=0.0)
    assert not_borrowing.precise() == 0 and not_borrowing.rounded() == 0
    assert fairshare.compare(fairshare.NEGATIVE, not_borrowing) == -1
