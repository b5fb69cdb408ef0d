"""QuotaTree against Kueue v0.15.0's TestAvailable (pkg/cache/scheduler/resource_test.go).

Each case builds ClusterQueues and Cohorts as Kueue objects (plain dicts), applies per-queue
usage, and checks, for every (flavor, resource) a queue has quota for, what it can admit now
(`available`) and the most it could ever admit (`potential`). Kueue checks three moments:
before any usage (available equals potential), with usage, and after the usage is removed
again (available equals potential once more). Quantities are milli-units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from tas.cache.projections import cluster_queue_from_object, cohort_from_object
from tas.cache.quota import QuotaTree, quotas_of

RED_CPU = ("red", "cpu")
BLUE_CPU = ("blue", "cpu")

Usage = Mapping[str, Mapping[tuple[str, str], int]]  # cq -> (flavor, resource) -> milli


# ---- Kueue-shaped objects -------------------------------------------------------------------


def flavor(name: str, resource: str, nominal: str, borrowing: str = "", lending: str = "") -> dict:
    """One flavor's quota for one resource; an empty limit is left unset, as in Kueue's
    `MakeFlavorQuotas(name).Resource(resource, nominal, borrowingLimit, lendingLimit)`."""
    quota = {"name": resource, "nominalQuota": nominal}
    if borrowing:
        quota["borrowingLimit"] = borrowing
    if lending:
        quota["lendingLimit"] = lending
    return {"name": name, "resources": [quota]}


def group(*flavors: dict) -> dict:
    """A resource group covering the resources its first flavor lists."""
    covered = [r["name"] for r in flavors[0]["resources"]] if flavors else []
    return {"coveredResources": covered, "flavors": list(flavors)}


def red_cpu(nominal: str, borrowing: str = "", lending: str = "") -> dict:
    return group(flavor("red", "cpu", nominal, borrowing, lending))


def cluster_queue(name: str, *groups: dict, cohort: str | None = None) -> dict:
    spec: dict = {"namespaceSelector": {}, "resourceGroups": list(groups)}
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": name}, "spec": spec}


def cohort(name: str, *groups: dict, parent: str | None = None) -> dict:
    spec: dict = {"resourceGroups": list(groups)}
    if parent:
        spec["parentName"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def usage_of(usage: Usage):
    def lookup(cq: str, flavor_name: str) -> dict[str, int]:
        return {res: v for (f, res), v in usage.get(cq, {}).items() if f == flavor_name}

    return lookup


def make_tree(cqs: list[dict], cohorts: list[dict], usage: Usage | None = None) -> QuotaTree:
    cq_infos = {info.name: info for info in map(cluster_queue_from_object, cqs)}
    cohort_infos = {info.name: info for info in map(cohort_from_object, cohorts)}
    return QuotaTree(cq_infos, cohort_infos, usage_of(usage or {}))


# ---- Kueue's cases --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    cqs: list[dict]
    want_available: Usage
    want_potential: Usage
    cohorts: list[dict] = field(default_factory=list)
    usage: Usage = field(default_factory=dict)


CASES = [
    Case(
        id="base cqs",
        cqs=[
            cluster_queue("cq1", red_cpu("0")),
            cluster_queue("cq2", group(flavor("red", "cpu", "5"), flavor("blue", "cpu", "10"))),
        ],
        usage={"cq1": {RED_CPU: 1_000}, "cq2": {RED_CPU: 2_500, BLUE_CPU: 1_000}},
        want_available={"cq1": {RED_CPU: 0}, "cq2": {RED_CPU: 2_500, BLUE_CPU: 9_000}},
        want_potential={"cq1": {RED_CPU: 0}, "cq2": {RED_CPU: 5_000, BLUE_CPU: 10_000}},
    ),
    Case(
        id="cqs with cohort",
        cqs=[
            cluster_queue("cq1", red_cpu("10"), cohort="cohort"),
            cluster_queue("cq2", red_cpu("10", "", "9"), cohort="cohort"),
        ],
        cohorts=[cohort("cohort", red_cpu("10"))],
        usage={"cq1": {RED_CPU: 1_000}, "cq2": {RED_CPU: 500}},
        # The pool holds 29 (cq2 keeps 1 for itself); 1.5 is used, 0.5 of it from cq2's own 1.
        want_available={"cq1": {RED_CPU: 28_000}, "cq2": {RED_CPU: 28_500}},
        want_potential={"cq1": {RED_CPU: 29_000}, "cq2": {RED_CPU: 30_000}},
    ),
    Case(
        id="cq borrows from cohort",
        cqs=[cluster_queue("cq1", red_cpu("10"), cohort="cohort")],
        cohorts=[cohort("cohort", red_cpu("10"))],
        usage={"cq1": {RED_CPU: 11_000}},
        want_available={"cq1": {RED_CPU: 9_000}},
        want_potential={"cq1": {RED_CPU: 20_000}},
    ),
    Case(
        id="cq oversubscription spills into cohort",
        cqs=[
            cluster_queue("cq1", red_cpu("10"), cohort="cohort"),
            cluster_queue("cq2", red_cpu("10", "0", "0"), cohort="cohort"),
        ],
        cohorts=[cohort("cohort", red_cpu("10"))],
        usage={"cq1": {RED_CPU: 31_000}},
        # cq2 neither lends nor borrows, yet cq1's overuse beyond the whole cohort's quota
        # leaves cq2 nothing, so the tree as a whole is not over-admitted further.
        want_available={"cq1": {RED_CPU: 0}, "cq2": {RED_CPU: 0}},
        want_potential={"cq1": {RED_CPU: 20_000}, "cq2": {RED_CPU: 10_000}},
    ),
    Case(
        id="lending and borrowing limits respected",
        # The cohort holds 40 in all: cq3 keeps 5 of its 10 for itself, so cq1 reaches 35;
        # cq2 may borrow only 2; cq3 reaches everything.
        cqs=[
            cluster_queue("cq1", red_cpu("10"), cohort="cohort"),
            cluster_queue("cq2", red_cpu("10", "2"), cohort="cohort"),
            cluster_queue("cq3", red_cpu("10", "", "5"), cohort="cohort"),
        ],
        cohorts=[cohort("cohort", red_cpu("10"))],
        usage={"cq1": {RED_CPU: 20_000}, "cq2": {RED_CPU: 10_000}, "cq3": {RED_CPU: 6_000}},
        want_available={
            "cq1": {RED_CPU: 4_000},  # 35 - (20 + 10 + the 1 cq3 uses beyond its kept 5)
            "cq2": {RED_CPU: 2_000},  # its borrowing limit caps the 4 left
            "cq3": {RED_CPU: 4_000},  # 40 - 36
        },
        want_potential={
            "cq1": {RED_CPU: 35_000},
            "cq2": {RED_CPU: 12_000},
            "cq3": {RED_CPU: 40_000},
        },
    ),
    Case(
        id="hierarchical cohort",
        # root <- left <- cq1; root <- right <- cq2 (cq2 keeps all its quota)
        cqs=[
            cluster_queue("cq1", red_cpu("10"), cohort="left"),
            cluster_queue("cq2", red_cpu("10", "", "0"), cohort="right"),
        ],
        cohorts=[
            cohort("root"),
            cohort("left", red_cpu("10"), parent="root"),
            cohort("right", red_cpu("10"), parent="root"),
        ],
        usage={"cq1": {RED_CPU: 10_000}, "cq2": {RED_CPU: 5_000}},
        want_available={
            "cq1": {RED_CPU: 20_000},  # 30 reachable (cq2's quota is not) - 10 used
            "cq2": {RED_CPU: 25_000},  # 40 - 15
        },
        want_potential={"cq1": {RED_CPU: 30_000}, "cq2": {RED_CPU: 40_000}},
    ),
    Case(
        id="hierarchical cohort respects borrowing limit",
        # root <- left (borrows at most 5) <- left-cq1, left-cq2 (borrows at most 5);
        # root <- right <- right-cq
        cqs=[
            cluster_queue("left-cq1", red_cpu("10"), cohort="left"),
            cluster_queue("left-cq2", red_cpu("10", "5"), cohort="left"),
            cluster_queue("right-cq", red_cpu("10"), cohort="right"),
        ],
        cohorts=[
            cohort("root"),
            cohort("left", red_cpu("10", "5"), parent="root"),
            cohort("right", red_cpu("10"), parent="root"),
        ],
        want_available={
            "left-cq1": {RED_CPU: 35_000},  # left's 30 and the 5 it may borrow above
            "left-cq2": {RED_CPU: 15_000},  # its 10 and the 5 it may borrow
            "right-cq": {RED_CPU: 50_000},  # everything under root
        },
        want_potential={
            "left-cq1": {RED_CPU: 35_000},
            "left-cq2": {RED_CPU: 15_000},
            "right-cq": {RED_CPU: 50_000},
        },
    ),
    Case(
        id="hierarchical cohort respects lending limit",
        # root (with root-cq) <- left (lends at most 5) <- left-cq1 (lends at most 5),
        # left-cq2; root <- right <- right-cq
        cqs=[
            cluster_queue("left-cq1", red_cpu("10", "", "5"), cohort="left"),
            cluster_queue("left-cq2", red_cpu("10"), cohort="left"),
            cluster_queue("right-cq", red_cpu("0"), cohort="right"),
            cluster_queue("root-cq", red_cpu("0"), cohort="root"),
        ],
        cohorts=[
            cohort("root"),
            cohort("left", red_cpu("0", "", "5"), parent="root"),
            cohort("right", red_cpu("0"), parent="root"),
        ],
        want_available={
            "left-cq1": {RED_CPU: 20_000},
            "left-cq2": {RED_CPU: 15_000},  # its own 10 and the 5 left-cq1 lends
            "right-cq": {RED_CPU: 5_000},  # the 5 left lends to root
            "root-cq": {RED_CPU: 5_000},
        },
        want_potential={
            "left-cq1": {RED_CPU: 20_000},
            "left-cq2": {RED_CPU: 15_000},
            "right-cq": {RED_CPU: 5_000},
            "root-cq": {RED_CPU: 5_000},
        },
    ),
]


def measure(tree: QuotaTree, case: Case) -> tuple[dict, dict]:
    """available and potential of every queue, for each (flavor, resource) it has quota for."""
    available: dict = {}
    potential: dict = {}
    for obj in case.cqs:
        info = cluster_queue_from_object(obj)
        frs = quotas_of(info.resource_groups)
        available[info.name] = {fr: tree.available(info.name, fr) for fr in frs}
        potential[info.name] = {fr: tree.potential(info.name, fr) for fr in frs}
    return available, potential


by_case = pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])


@by_case
def test_available_before_usage(case: Case) -> None:
    available, potential = measure(make_tree(case.cqs, case.cohorts), case)
    assert available == case.want_potential
    assert potential == case.want_potential


@by_case
def test_available_with_usage(case: Case) -> None:
    available, potential = measure(make_tree(case.cqs, case.cohorts, case.usage), case)
    assert available == case.want_available
    assert potential == case.want_potential


@by_case
def test_available_after_usage_removed(case: Case) -> None:
    tree = make_tree(case.cqs, case.cohorts, case.usage)
    for cq, per_fr in case.usage.items():
        for fr, value in per_fr.items():
            tree.shift(cq, fr, -value)
    available, potential = measure(tree, case)
    assert available == case.want_potential
    assert potential == case.want_potential


# ---- path, borrowed, cycles -----------------------------------------------------------------


def hierarchy() -> QuotaTree:
    """root <- left <- cq1; root <- right <- cq2; lone (no cohort); cq3 in a cohort that has
    no Cohort object."""
    return make_tree(
        [
            cluster_queue("cq1", red_cpu("10"), cohort="left"),
            cluster_queue("cq2", red_cpu("10", "", "4"), cohort="right"),
            cluster_queue("cq3", red_cpu("10"), cohort="implicit"),
            cluster_queue("lone", red_cpu("10")),
        ],
        [
            cohort("root"),
            cohort("left", red_cpu("10"), parent="root"),
            cohort("right", parent="root"),
        ],
        {"cq1": {RED_CPU: 13_000}, "cq2": {RED_CPU: 7_000}, "lone": {RED_CPU: 12_000}},
    )


@pytest.mark.parametrize(
    ("cq", "want"),
    [
        ("cq1", "/root/left/cq1"),
        ("cq2", "/root/right/cq2"),
        ("cq3", "/implicit/cq3"),
        ("lone", "/lone"),
    ],
)
def test_path_runs_from_the_root_cohort_to_the_queue(cq: str, want: str) -> None:
    assert hierarchy().path(cq) == want


@pytest.mark.parametrize(
    ("cq", "fr", "want"),
    [
        ("cq1", RED_CPU, 3_000),  # 13 used on a nominal 10
        ("cq2", RED_CPU, 0),  # within its nominal (its lending limit does not matter)
        ("cq3", RED_CPU, 0),  # no usage
        ("lone", RED_CPU, 2_000),  # beyond nominal without a cohort: still counted
        ("cq1", BLUE_CPU, 0),  # no quota, no usage
    ],
)
def test_borrowed_is_usage_beyond_nominal(cq: str, fr: tuple[str, str], want: int) -> None:
    assert hierarchy().borrowed(cq, fr) == want


def test_borrowed_follows_shifted_usage() -> None:
    tree = hierarchy()
    tree.shift("cq1", RED_CPU, -3_000)
    assert tree.borrowed("cq1", RED_CPU) == 0
    tree.shift("cq2", RED_CPU, 5_000)
    assert tree.borrowed("cq2", RED_CPU) == 2_000


def test_no_cycle_in_a_well_formed_tree() -> None:
    tree = hierarchy()
    assert not any(tree.has_cycle(cq) for cq in ("cq1", "cq2", "cq3", "lone"))


def test_cohort_parent_cycle() -> None:
    # a <-> b form a loop; c hangs below the loop; d is a separate root; self loops on itself.
    tree = make_tree(
        [
            cluster_queue("in-a", red_cpu("10"), cohort="a"),
            cluster_queue("in-b", red_cpu("10"), cohort="b"),
            cluster_queue("in-c", red_cpu("10"), cohort="c"),
            cluster_queue("in-d", red_cpu("10"), cohort="d"),
            cluster_queue("in-self", red_cpu("10"), cohort="self"),
            cluster_queue("lone", red_cpu("10")),
        ],
        [
            cohort("a", red_cpu("5"), parent="b"),
            cohort("b", red_cpu("5"), parent="a"),
            cohort("c", parent="a"),
            cohort("d", red_cpu("5")),
            cohort("self", parent="self"),
        ],
    )
    assert tree.has_cycle("in-a")
    assert tree.has_cycle("in-b")
    assert tree.has_cycle("in-c")  # its chain of parents loops, as Kueue's HasCycle finds
    assert tree.has_cycle("in-self")
    assert not tree.has_cycle("in-d")
    assert not tree.has_cycle("lone")
    assert not tree.has_cycle("unknown")
    # the well-formed part of the forest is untouched by the loop
    assert tree.path("in-d") == "/d/in-d"
    assert tree.available("in-d", RED_CPU) == 15_000
