"""Kueue's fair-sharing configuration: the `fairSharing` and `admissionFairSharing` sections of
its Configuration (config.kueue.x-k8s.io v1beta1 and v1beta2), read, defaulted and validated as
Kueue v0.17 does (apis/config/*/defaults.go, pkg/config/validation.go).

The same document serves the operator (`--kueue-config FILE`, the chart's ConfigMap) and the
offline commands (a scenario's or trace's top-level sections of the same names). Errors are
ValueError naming the field path, as Kueue's field errors do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tas.api.durations import go_duration

# A ClusterQueue's admissionScope.admissionMode (here, not with the models: the cache reads them
# on the way to the first admission, which need not wait for pydantic's models to be built).
USAGE_BASED_ADMISSION_FAIR_SHARING = "UsageBasedAdmissionFairSharing"
NO_ADMISSION_FAIR_SHARING = "NoAdmissionFairSharing"
# The share of a node with weight 0 that borrows: larger than any other (Kueue's MaxInt64).
MAX_WEIGHTED_SHARE = 2**63 - 1

# Kueue's preemption strategies (KEP 1714, rules S2-a and S2-b).
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_PREEMPTION_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
# The only lists Kueue accepts, in this order.
VALID_STRATEGY_SETS = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    DEFAULT_PREEMPTION_STRATEGIES,
)
DEFAULT_USAGE_SAMPLING_INTERVAL_SECONDS = 300.0  # Kueue's default: 5 minutes
V1BETA1 = "config.kueue.x-k8s.io/v1beta1"
V1BETA2 = "config.kueue.x-k8s.io/v1beta2"


@dataclass(frozen=True)
class FairSharing:
    """Fair sharing across ClusterQueues and Cohorts (on when the section is given)."""

    preemption_strategies: tuple[str, ...] = DEFAULT_PREEMPTION_STRATEGIES


@dataclass(frozen=True)
class AdmissionFairSharing:
    """LocalQueue usage decayed over time orders a ClusterQueue's workloads (with the
    AdmissionFairSharing gate and a ClusterQueue's admissionScope)."""

    usage_half_life_seconds: float = 0.0  # 0: usage resets at once
    usage_sampling_interval_seconds: float = DEFAULT_USAGE_SAMPLING_INTERVAL_SECONDS
    # A resource's weight in a LocalQueue's usage; resources not named weigh 1.
    resource_weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    def weight(self, resource: str) -> float:
        return self.resource_weights.get(resource, 1.0)


@dataclass(frozen=True)
class FairSharingConfig:
    """Both sections; None where a section is absent (that kind of fair sharing is off)."""

    fair_sharing: FairSharing | None = None
    admission_fair_sharing: AdmissionFairSharing | None = None


def go_duration_seconds(text: object, path: str) -> float:
    """A duration as Go writes it ("5m", "1h30m", "1.5s", "0"), in seconds."""
    if isinstance(text, bool) or not isinstance(text, str):
        raise ValueError(f'{path}: must be a duration string such as "5m", got {text!r}')
    seconds = go_duration(text)
    if seconds is None:
        raise ValueError(f'{path}: must be a duration such as "5m", "90s" or "1h30m", got {text!r}')
    return seconds


def parse(document: Mapping | None) -> FairSharingConfig:
    """A Kueue Configuration (or any mapping holding its two sections) to our settings."""
    if document is None:
        return FairSharingConfig()
    if not isinstance(document, Mapping):
        raise ValueError("configuration: must be a mapping")
    api_version = document.get("apiVersion")
    if api_version is not None and api_version not in (V1BETA1, V1BETA2):
        raise ValueError(f"apiVersion: must be {V1BETA1} or {V1BETA2}, got {api_version!r}")
    return FairSharingConfig(
        fair_sharing=_fair_sharing(document.get("fairSharing"), api_version == V1BETA1),
        admission_fair_sharing=_admission_fair_sharing(document.get("admissionFairSharing")),
    )


def _fair_sharing(section: object, v1beta1: bool) -> FairSharing | None:
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise ValueError("fairSharing: must be a mapping")
    unknown = set(section) - {"enable", "preemptionStrategies"}
    if unknown:
        raise ValueError(f"fairSharing.{sorted(unknown)[0]}: unknown field")
    enable = section.get("enable", not v1beta1)
    if not isinstance(enable, bool):
        raise ValueError("fairSharing.enable: must be true or false")
    if not enable:  # v1beta1's switch; v1beta2 has none (the section turns it on)
        return None
    strategies = section.get("preemptionStrategies")
    if strategies is None and v1beta1:  # v1beta1 defaults them, v1beta2 requires them
        return FairSharing()
    path = "fairSharing.preemptionStrategies"
    if not strategies:
        raise ValueError(f"{path}: must be specified")
    if not isinstance(strategies, list) or tuple(strategies) not in VALID_STRATEGY_SETS:
        allowed = ", ".join(f'"{",".join(s)}"' for s in VALID_STRATEGY_SETS)
        raise ValueError(f"{path}: supported values: {allowed}, got {strategies!r}")
    return FairSharing(preemption_strategies=tuple(strategies))


def _admission_fair_sharing(section: object) -> AdmissionFairSharing | None:
    if section is None:
        return None
    path = "admissionFairSharing"
    if not isinstance(section, Mapping):
        raise ValueError(f"{path}: must be a mapping")
    unknown = set(section) - {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}
    if unknown:
        raise ValueError(f"{path}.{sorted(unknown)[0]}: unknown field")
    half_life = go_duration_seconds(
        section.get("usageHalfLifeTime", "0"), f"{path}.usageHalfLifeTime"
    )
    if half_life < 0:
        raise ValueError(f"{path}.usageHalfLifeTime: must be greater than or equal to 0")
    interval_text = section.get("usageSamplingInterval", "0")
    interval = go_duration_seconds(interval_text, f"{path}.usageSamplingInterval")
    if interval == 0:  # Kueue defaults an unset (zero) interval to 5 minutes
        interval = DEFAULT_USAGE_SAMPLING_INTERVAL_SECONDS
    if interval < 0:
        raise ValueError(f"{path}.usageSamplingInterval: must be greater than 0")
    return AdmissionFairSharing(
        usage_half_life_seconds=half_life,
        usage_sampling_interval_seconds=interval,
        resource_weights=MappingProxyType(_weights(section.get("resourceWeights") or {}, path)),
    )


def _weights(weights: object, path: str) -> dict[str, float]:
    if not isinstance(weights, Mapping):
        raise ValueError(f"{path}.resourceWeights: must map resource names to numbers")
    checked = {}
    for name, weight in weights.items():
        where = f"{path}.resourceWeights[{name}]"
        if not isinstance(name, str) or not name:
            raise ValueError(f"{path}.resourceWeights: keys must be resource names")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(f"{where}: must be a number, got {weight!r}")
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{where}: must be a finite number >= 0, got {weight!r}")
        checked[name] = float(weight)
    return checked
