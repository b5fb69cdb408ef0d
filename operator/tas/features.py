"""The one registry of feature gates: Kueue's names and Kueue's defaults, plus our own.

Gates are set from `--feature-gates A=true,B=false` or the TAS_FEATURE_GATES environment
variable. An unknown gate or a value that is not a boolean is an error that names it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

ENV_VAR = "TAS_FEATURE_GATES"


@dataclass(frozen=True)
class Gate:
    name: str
    default: bool
    stage: str  # Alpha / Beta / GA / Deprecated, as Kueue labels it (ours: "Alpha (tas-operator)")
    depends_on: tuple[str, ...] = ()
    doc: str = ""


_TAS = ("TopologyAwareScheduling",)
_REPLACE = ("TopologyAwareScheduling", "TASFailedNodeReplacement")

GATES: dict[str, Gate] = {
    g.name: g
    for g in (
        Gate(
            "TopologyAwareScheduling",
            True,
            "Beta",
            (),
            "Master switch for topology-aware admission.",
        ),
        Gate(
            "TASProfileMixed",
            True,
            "Beta",
            _TAS,
            "LeastFreeCapacity for unconstrained requests, BestFit for required/preferred.",
        ),
        Gate(
            "TASFailedNodeReplacement",
            True,
            "Beta",
            _TAS,
            "Replace a failed node under a workload.",
        ),
        Gate(
            "TASFailedNodeReplacementFailFast",
            True,
            "Beta",
            _REPLACE,
            "Try a replacement once; evict the workload when none fits.",
        ),
        Gate(
            "TASReplaceNodeOnPodTermination",
            True,
            "Beta",
            _REPLACE,
            "A NotReady node counts as failed once the workload's pods on it stop.",
        ),
        Gate(
            "TASReplaceNodeDueToNotReadyOverFixedTime",
            False,
            "Deprecated",
            _REPLACE,
            "Legacy: a node NotReady for 30s counts as failed.",
        ),
        Gate(
            "TASReplaceNodeOnNodeTaints",
            True,
            "Beta",
            _REPLACE,
            "Untolerated NoSchedule/NoExecute taints count as node failure.",
        ),
        Gate(
            "TASBalancedPlacement",
            False,
            "Alpha",
            _TAS,
            "Balanced placement for preferred requests.",
        ),
        Gate(
            "TASMultiLayerTopology",
            True,
            "Beta",
            _TAS,
            "The podset-slice-required-topology-constraints annotation (up to 3 layers).",
        ),
        Gate(
            "TASRespectNodeAffinityPreferred",
            False,
            "Alpha",
            _TAS,
            "Preferred node affinity overrides the domain ordering.",
        ),
        Gate(
            "SkipReassignmentForPodOwnedWorkloads",
            True,
            "Beta",
            _TAS,
            "Workloads owned by a single Pod keep their assignment on node failure.",
        ),
        # Beyond Kueue: our own gates, off until proven.
        Gate(
            "TASMultipleNodeReplacement",
            False,
            "Alpha (tas-operator)",
            _REPLACE,
            "Replace several failed nodes of one workload at once instead of evicting it.",
        ),
    )
}


class FeatureGateError(ValueError):
    """An unknown gate name or a value that is not true/false."""


@dataclass(frozen=True)
class FeatureGates:
    """An immutable set of gate values; unknown names are rejected at construction."""

    values: Mapping[str, bool]

    def enabled(self, name: str) -> bool:
        if name not in GATES:
            raise FeatureGateError(f"unknown feature gate {name!r}")
        if not self.values.get(name, GATES[name].default):
            return False
        return all(self.enabled(dep) for dep in GATES[name].depends_on)

    def as_dict(self) -> dict[str, bool]:
        return {name: self.enabled(name) for name in GATES}


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
