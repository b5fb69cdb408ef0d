"""The one registry of feature gates: Kueue's names and Kueue's defaults, plus our own.

Gates are set from `--feature-gates A=true,B=false` or the TAS_FEATURE_GATES environment
variable. An unknown gate or a value that is not a boolean is an error that names it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from tas.solver.types import SolverOptions

ENV_VAR = "TAS_FEATURE_GATES"


class Gate(StrEnum):
    """Every gate's name, typed: code asks `gates.enabled(Gate.TAS_PROFILE_MIXED)`."""

    TOPOLOGY_AWARE_SCHEDULING = "TopologyAwareScheduling"
    TAS_PROFILE_MIXED = "TASProfileMixed"
    TAS_FAILED_NODE_REPLACEMENT = "TASFailedNodeReplacement"
    TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST = "TASFailedNodeReplacementFailFast"
    TAS_REPLACE_NODE_ON_POD_TERMINATION = "TASReplaceNodeOnPodTermination"
    TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME = "TASReplaceNodeDueToNotReadyOverFixedTime"
    TAS_REPLACE_NODE_ON_NODE_TAINTS = "TASReplaceNodeOnNodeTaints"
    TAS_BALANCED_PLACEMENT = "TASBalancedPlacement"
    TAS_MULTI_LAYER_TOPOLOGY = "TASMultiLayerTopology"
    TAS_RESPECT_NODE_AFFINITY_PREFERRED = "TASRespectNodeAffinityPreferred"
    TAS_NODE_FEASIBILITY_FOR_ALL_LEVELS = "TASNodeFeasibilityForAllLevels"
    SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS = "SkipReassignmentForPodOwnedWorkloads"
    TAS_MULTIPLE_NODE_REPLACEMENT = "TASMultipleNodeReplacement"
    TAS_NUMA_ZONES = "TASNUMAZones"
    TAS_PLACEMENT_GROUPS = "TASPlacementGroups"
    TAS_PROFILE_FRAGMENTATION_AWARE = "TASProfileFragmentationAware"


@dataclass(frozen=True)
class GateSpec:
    name: Gate
    default: bool
    stage: str  # Alpha / Beta / GA / Deprecated, as Kueue labels it (ours: "Alpha (tas-operator)")
    depends_on: tuple[Gate, ...] = ()
    doc: str = ""


_TAS = (Gate.TOPOLOGY_AWARE_SCHEDULING,)
_REPLACE = (Gate.TOPOLOGY_AWARE_SCHEDULING, Gate.TAS_FAILED_NODE_REPLACEMENT)

GATES: dict[str, GateSpec] = {
    g.name: g
    for g in (
        GateSpec(
            Gate.TOPOLOGY_AWARE_SCHEDULING,
            True,
            "Beta",
            (),
            "Master switch for topology-aware admission.",
        ),
        GateSpec(
            Gate.TAS_PROFILE_MIXED,
            True,
            "Beta",
            _TAS,
            "LeastFreeCapacity for unconstrained requests, BestFit for required/preferred.",
        ),
        GateSpec(
            Gate.TAS_FAILED_NODE_REPLACEMENT,
            True,
            "Beta",
            _TAS,
            "Replace a failed node under a workload.",
        ),
        GateSpec(
            Gate.TAS_FAILED_NODE_REPLACEMENT_FAIL_FAST,
            True,
            "Beta",
            _REPLACE,
            "Try a replacement once; evict the workload when none fits.",
        ),
        GateSpec(
            Gate.TAS_REPLACE_NODE_ON_POD_TERMINATION,
            True,
            "Beta",
            _REPLACE,
            "A NotReady node counts as failed once the workload's pods on it stop.",
        ),
        GateSpec(
            Gate.TAS_REPLACE_NODE_DUE_TO_NOT_READY_OVER_FIXED_TIME,
            False,
            "Deprecated",
            _REPLACE,
            "Legacy: a node NotReady for 30s counts as failed.",
        ),
        GateSpec(
            Gate.TAS_REPLACE_NODE_ON_NODE_TAINTS,
            True,
            "Beta",
            _REPLACE,
            "Untolerated NoSchedule/NoExecute taints count as node failure.",
        ),
        GateSpec(
            Gate.TAS_BALANCED_PLACEMENT,
            False,
            "Alpha",
            _TAS,
            "Balanced placement for preferred requests.",
        ),
        GateSpec(
            Gate.TAS_MULTI_LAYER_TOPOLOGY,
            True,
            "Beta",
            _TAS,
            "The podset-slice-required-topology-constraints annotation (up to 3 layers).",
        ),
        GateSpec(
            Gate.TAS_RESPECT_NODE_AFFINITY_PREFERRED,
            False,
            "Alpha",
            _TAS,
            "Preferred node affinity overrides the domain ordering.",
        ),
        GateSpec(
            Gate.TAS_NODE_FEASIBILITY_FOR_ALL_LEVELS,
            # Alpha and off when Kueue added it; Beta and on in v0.20. Off here, so that
            # placements stay Kueue v0.17's unless asked for.
            False,
            "Alpha",
            _TAS,
            "Taints, nodeSelector and node affinity are checked, and capacity counted, per node "
            "when the lowest topology level is not the hostname.",
        ),
        GateSpec(
            Gate.SKIP_REASSIGNMENT_FOR_POD_OWNED_WORKLOADS,
            True,
            "Beta",
            _TAS,
            "Workloads owned by a single Pod keep their assignment on node failure.",
        ),
        # Beyond Kueue: our own gates, off until proven.
        GateSpec(
            Gate.TAS_MULTIPLE_NODE_REPLACEMENT,
            False,
            "Alpha (tas-operator)",
            _REPLACE,
            "Replace several failed nodes of one workload at once instead of evicting it.",
        ),
        GateSpec(
            Gate.TAS_NUMA_ZONES,
            False,
            "Alpha (tas-operator)",
            _TAS,
            "Count Guaranteed whole-CPU pods per NUMA zone on nodes whose NodeResourceTopology "
            "reports the single-numa-node policy.",
        ),
        GateSpec(
            Gate.TAS_PLACEMENT_GROUPS,
            False,
            "Alpha (tas-operator)",
            _TAS,
            "Placement groups across workloads (tas-operator.io/placement-group annotations, "
            "PlacementGroup objects): affinity, anti-affinity, partitions, exclusive domains.",
        ),
        GateSpec(
            Gate.TAS_PROFILE_FRAGMENTATION_AWARE,
            False,
            "Alpha (tas-operator)",
            _TAS,
            "Required and preferred requests go to the fitting domain whose parents have the "
            "least room, keeping empty blocks whole (instead of BestFit's tightest domain).",
        ),
    )
}


class FeatureGateError(ValueError):
    """An unknown gate name or a value that is not true/false."""


@dataclass(frozen=True)
class FeatureGates:
    """An immutable set of gate values; unknown names are rejected at construction."""

    values: Mapping[str, bool]

    def enabled(self, name: Gate) -> bool:
        if name not in GATES:
            raise FeatureGateError(f"unknown feature gate {name!r}")
        if not self.values.get(name, GATES[name].default):
            return False
        return all(self.enabled(dep) for dep in GATES[name].depends_on)

    def as_dict(self) -> dict[str, bool]:
        return {str(name): self.enabled(name) for name in GATES}

    def solver_options(self) -> SolverOptions:
        """The gates that change placement, as the solver takes them (it never reads gates)."""
        return SolverOptions(
            profile_mixed=self.enabled(Gate.TAS_PROFILE_MIXED),
            balanced_placement=self.enabled(Gate.TAS_BALANCED_PLACEMENT),
            placement_groups=self.enabled(Gate.TAS_PLACEMENT_GROUPS),
            fragmentation_aware=self.enabled(Gate.TAS_PROFILE_FRAGMENTATION_AWARE),
            respect_node_affinity_preferred=self.enabled(Gate.TAS_RESPECT_NODE_AFFINITY_PREFERRED),
            node_feasibility_all_levels=self.enabled(Gate.TAS_NODE_FEASIBILITY_FOR_ALL_LEVELS),
        )


def defaults() -> FeatureGates:
    return FeatureGates({})


def from_mapping(values: Mapping[str, object]) -> FeatureGates:
    """Gates from a mapping such as a scenario's `featureGates`; values must be booleans."""
    parsed: dict[str, bool] = {}
    for name, value in values.items():
        if name not in GATES:
            raise FeatureGateError(
                f"unknown feature gate {name!r} (known: {', '.join(sorted(GATES))})"
            )
        if isinstance(value, bool):
            parsed[name] = value
        elif isinstance(value, str) and value.lower() in ("true", "false"):
            parsed[name] = value.lower() == "true"
        else:
            raise FeatureGateError(f"feature gate {name!r}: value {value!r} is not true or false")
    return FeatureGates(parsed)


def parse(spec: str) -> FeatureGates:
    """Parse `A=true,B=false` as kube components do."""
    values: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise FeatureGateError(f"feature gate {item!r}: expected NAME=true|false")
        values[name.strip()] = value.strip()
    return from_mapping(values)


def from_env_and_flag(flag: str | None, environ: Mapping[str, str] = os.environ) -> FeatureGates:
    """The environment variable first, then the flag, so the flag wins on conflicts."""
    merged = dict(parse(environ.get(ENV_VAR, "")).values)
    merged.update(parse(flag or "").values)
    return FeatureGates(merged)
