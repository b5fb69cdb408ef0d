"""Per-node scheduling filters: taints vs tolerations, nodeSelector, required node affinity;
and the score of preferred node affinity.

Kueue applies these only where each leaf is a single node: when the lowest topology level is
the hostname, or below any lowest level with TASNodeFeasibilityForAllLevels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tas.solver.types import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Taint,
    Toleration,
)

SCHEDULING_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def taint_string(taint: Taint) -> str:
    """Render a taint as Kubernetes does (`key=value:effect`, or `key:effect` without a value)."""
    if taint.value:
        return f"{taint.key}={taint.value}:{taint.effect}"
    return f"{taint.key}:{taint.effect}"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Equal":
        return toleration.value == taint.value
    if operator == "Exists":
        return True
    if operator in ("Gt", "Lt"):
        taint_number, toleration_number = _as_int(taint.value), _as_int(toleration.value)
        if taint_number is None or toleration_number is None:
            return False
        if operator == "Gt":
            return taint_number > toleration_number
        return taint_number < toleration_number
    return False


def first_untolerated_taint(
    taints: Iterable[Taint], tolerations: tuple[Toleration, ...]
) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers (what blocks scheduling)."""
    for taint in taints:
        if taint.effect not in SCHEDULING_TAINT_EFFECTS:
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            return taint
    return None


def matches_node_selector(labels: Mapping[str, str], node_selector: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in node_selector.items())


def matches_required_affinity(
    labels: Mapping[str, str], terms: tuple[NodeSelectorTerm, ...]
) -> bool:
    """Terms are ORed, expressions within a term ANDed; a term without expressions matches
    nothing (as in Kubernetes), and no terms at all means no constraint."""
    if not terms:
        return True
    return any(
        term.match_expressions
        and all(_matches_requirement(labels, req) for req in term.match_expressions)
        for term in terms
    )


def scoring_terms(
    terms: tuple[PreferredSchedulingTerm, ...],
) -> tuple[PreferredSchedulingTerm, ...]:
    """The terms that can score: Kubernetes drops those of weight 0 and those without
    expressions."""
    return tuple(term for term in terms if term.weight and term.preference.match_expressions)


def affinity_score(labels: Mapping[str, str], terms: tuple[PreferredSchedulingTerm, ...]) -> int:
    """The sum of the weights of the scoring terms the node's labels match, as the
    scheduler's NodeAffinity plugin scores a node before normalizing."""
    return sum(
        term.weight
        for term in scoring_terms(terms)
        if all(_matches_requirement(labels, req) for req in term.preference.match_expressions)
    )


def _matches_requirement(labels: Mapping[str, str], requirement: NodeSelectorRequirement) -> bool:
    operator = requirement.operator
    present = requirement.key in labels
    value = labels.get(requirement.key)
    if operator == "In":
        return present and value in requirement.values
    if operator == "NotIn":
        return not present or value not in requirement.values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present or len(requirement.values) != 1:
            return False
        label_number, bound = _as_int(value), _as_int(requirement.values[0])
        if label_number is None or bound is None:
            return False
        return label_number > bound if operator == "Gt" else label_number < bound
    return False


def _as_int(text: str | None) -> int | None:
    try:
        return int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
