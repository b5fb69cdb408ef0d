"""Node filters: Kubernetes' toleration and node-affinity rules, as Kueue applies them."""

from __future__ import annotations

import pytest

from tas.solver import NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration
from tas.solver.filters import (
    first_untolerated_taint,
    matches_node_selector,
    matches_required_affinity,
    taint_string,
)

GPU_TAINT = Taint("gpu", "NoSchedule", "a100")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        pytest.param(Toleration("gpu", "Equal", "a100"), True, id="equal key and value"),
        pytest.param(Toleration("gpu", "Equal", "h100"), False, id="equal with other value"),
        pytest.param(Toleration("gpu", "", "a100"), True, id="empty operator means Equal"),
        pytest.param(Toleration("gpu", "Exists"), True, id="exists ignores value"),
        pytest.param(Toleration("", "Exists"), True, id="empty key with exists tolerates all"),
        pytest.param(
            Toleration("gpu", "Exists", effect="NoExecute"), False, id="other effect does not match"
        ),
        pytest.param(
            Toleration("gpu", "Exists", effect="NoSchedule"), True, id="same effect matches"
        ),
        pytest.param(Toleration("cpu", "Exists"), False, id="other key"),
    ],
)
def test_toleration_matching(toleration, tolerated):
    assert (first_untolerated_taint([GPU_TAINT], (toleration,)) is None) is tolerated


@pytest.mark.parametrize(
    ("taint_value", "toleration", "tolerated"),
    [
        pytest.param("5", Toleration("n", "Gt", "4"), True, id="Gt: taint above"),
        pytest.param("5", Toleration("n", "Gt", "5"), False, id="Gt is strict"),
        pytest.param("5", Toleration("n", "Lt", "6"), True, id="Lt: taint below"),
        pytest.param("5", Toleration("n", "Lt", "5"), False, id="Lt is strict"),
        pytest.param("x", Toleration("n", "Gt", "4"), False, id="Gt on a taint not a number"),
        pytest.param("5", Toleration("n", "Lt", "x"), False, id="Lt on a toleration not a number"),
        pytest.param("5", Toleration("n", "Like", "5"), False, id="an unknown operator"),
    ],
)
def test_numeric_toleration_operators(taint_value, toleration, tolerated):
    taint = Taint("n", "NoSchedule", taint_value)
    assert (first_untolerated_taint([taint], (toleration,)) is None) is tolerated


def test_only_no_schedule_and_no_execute_taints_block():
    soft = Taint("soft", "PreferNoSchedule")
    hard = Taint("hard", "NoExecute")
    assert first_untolerated_taint([soft], ()) is None
    assert first_untolerated_taint([soft, hard, GPU_TAINT], ()) == hard


def test_taint_string_matches_kubernetes():
    assert taint_string(GPU_TAINT) == "gpu=a100:NoSchedule"
    assert taint_string(Taint("gpu", "NoExecute")) == "gpu:NoExecute"


def test_node_selector_needs_every_pair():
    labels = {"zone": "a", "pool": "gpu"}
    assert matches_node_selector(labels, {"zone": "a"})
    assert not matches_node_selector(labels, {"zone": "a", "pool": "cpu"})
    assert not matches_node_selector(labels, {"rack": "r1"})


LABELS = {"zone": "a", "gen": "5"}


def term(*requirements: tuple) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        tuple(NodeSelectorRequirement(k, op, tuple(v)) for k, op, v in requirements)
    )


@pytest.mark.parametrize(
    ("terms", "matches"),
    [
        pytest.param((), True, id="no terms: no constraint"),
        pytest.param((term(("zone", "In", ["a", "b"])),), True, id="In"),
        pytest.param((term(("zone", "In", ["b"])),), False, id="In without the value"),
        pytest.param((term(("zone", "NotIn", ["b"])),), True, id="NotIn"),
        pytest.param((term(("rack", "NotIn", ["r1"])),), True, id="NotIn on a missing label"),
        pytest.param((term(("zone", "Exists", [])),), True, id="Exists"),
        pytest.param((term(("rack", "DoesNotExist", [])),), True, id="DoesNotExist"),
        pytest.param((term(("gen", "Gt", ["4"])),), True, id="Gt"),
        pytest.param((term(("gen", "Lt", ["5"])),), False, id="Lt is strict"),
        pytest.param((term(("zone", "Gt", ["1"])),), False, id="Gt on a non-number"),
        pytest.param((term(("zone", "NotIn", ["a"])),), False, id="NotIn with the value"),
        pytest.param((term(("gen", "Lt", ["6"])),), True, id="Lt"),
        pytest.param((term(("gen", "Gt", ["5"])),), False, id="Gt is strict"),
        pytest.param((term(("rack", "Gt", ["1"])),), False, id="Gt on a missing label"),
        pytest.param((term(("gen", "Gt", ["4", "6"])),), False, id="Gt needs exactly one value"),
        pytest.param((term(("gen", "Like", ["5"])),), False, id="an unknown operator"),
        pytest.param(
            (term(("zone", "In", ["a"]), ("gen", "Lt", ["3"])),), False, id="expressions are ANDed"
        ),
        pytest.param(
            (term(("zone", "In", ["b"])), term(("gen", "Gt", ["3"]))), True, id="terms are ORed"
        ),
        pytest.param((NodeSelectorTerm(),), False, id="an empty term matches nothing"),
    ],
)
def test_required_affinity(terms, matches):
    assert matches_required_affinity(LABELS, terms) is matches
