"""Kueue's fairSharing and admissionFairSharing configuration sections, read as Kueue v0.17
defaults and validates them (apis/config/*/defaults.go, pkg/config/validation.go)."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.api import fairsharing as fs
from tas.cli import _kueue_config


@pytest.mark.parametrize(
    ("document", "strategies"),
    [
        pytest.param({}, None, id="no section: off"),
        pytest.param(
            {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}},
            ("LessThanInitialShare",),
            id="v1beta2: the section turns it on",
        ),
        pytest.param(
            {"apiVersion": fs.V1BETA1, "fairSharing": {"enable": True}},
            fs.DEFAULT_PREEMPTION_STRATEGIES,
            id="v1beta1: enable, strategies defaulted",
        ),
        pytest.param(
            {"apiVersion": fs.V1BETA1, "fairSharing": {"enable": False}},
            None,
            id="v1beta1: enable false keeps it off",
        ),
        pytest.param(
            {"apiVersion": fs.V1BETA1, "fairSharing": {}},
            None,
            id="v1beta1: enable defaults to false",
        ),
        pytest.param(
            {
                "apiVersion": fs.V1BETA2,
                "fairSharing": {
                    "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
                },
            },
            fs.DEFAULT_PREEMPTION_STRATEGIES,
            id="v1beta2: both strategies",
        ),
    ],
)
def test_fair_sharing_section(document, strategies):
    parsed = fs.parse(document).fair_sharing
    assert (parsed and parsed.preemption_strategies) == strategies


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"fairSharing": {}}, "fairSharing.preemptionStrategies"),
        ({"fairSharing": {"preemptionStrategies": []}}, "fairSharing.preemptionStrategies"),
        (
            {
                "fairSharing": {
                    "preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
                }
            },
            "fairSharing.preemptionStrategies",
        ),
        ({"fairSharing": {"preemptionStrategies": ["Nope"]}}, "fairSharing.preemptionStrategies"),
        ({"fairSharing": {"weight": 1}}, "fairSharing.weight"),
        ({"fairSharing": "yes"}, "fairSharing"),
        ({"apiVersion": fs.V1BETA1, "fairSharing": {"enable": "yes"}}, "fairSharing.enable"),
        ({"apiVersion": "v1"}, "apiVersion"),
        ({"admissionFairSharing": {"usageHalfLifeTime": "-1m"}}, "usageHalfLifeTime"),
        ({"admissionFairSharing": {"usageHalfLifeTime": "ten"}}, "usageHalfLifeTime"),
        ({"admissionFairSharing": {"usageSamplingInterval": "-5s"}}, "usageSamplingInterval"),
        ({"admissionFairSharing": {"resourceWeights": {"cpu": -1}}}, "resourceWeights[cpu]"),
        ({"admissionFairSharing": {"resourceWeights": {"cpu": "x"}}}, "resourceWeights[cpu]"),
        ({"admissionFairSharing": {"resourceWeights": [1]}}, "resourceWeights"),
        ({"admissionFairSharing": {"halfLife": "1m"}}, "admissionFairSharing.halfLife"),
    ],
    ids=lambda value: str(value)[:60],
)
def test_invalid_sections_name_the_field(document, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        fs.parse(document)


def test_admission_fair_sharing_defaults_and_weights():
    parsed = fs.parse(
        {
            "admissionFairSharing": {
                "usageHalfLifeTime": "1h30m",
                "resourceWeights": {"cpu": 0, "nvidia.com/gpu": 2.5},
            }
        }
    ).admission_fair_sharing
    assert parsed is not None
    assert parsed.usage_half_life_seconds == 5400
    assert parsed.usage_sampling_interval_seconds == fs.DEFAULT_USAGE_SAMPLING_INTERVAL_SECONDS
    assert (parsed.weight("cpu"), parsed.weight("nvidia.com/gpu"), parsed.weight("memory")) == (
        0.0,
        2.5,
        1.0,
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("90s", 90), ("1h30m", 5400), ("1.5s", 1.5), ("250ms", 0.25), ("-2m", -120)],
)
def test_go_durations(text, seconds):
    assert fs.go_duration_seconds(text, "f") == pytest.approx(seconds)


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=12), st.integers(), st.none(), st.booleans()))
def test_hostile_durations_raise_value_error_or_parse(text):
    try:
        value = fs.go_duration_seconds(text, "f")
    except ValueError as exc:
        assert str(exc).startswith("f:")
    else:
        assert isinstance(value, float)


@settings(max_examples=200)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "fairSharing",
                        "admissionFairSharing",
                        "enable",
                        "preemptionStrategies",
                        "usageHalfLifeTime",
                        "usageSamplingInterval",
                        "resourceWeights",
                        "apiVersion",
                    ]
                ),
                children,
                max_size=4,
            )
        ),
        max_leaves=10,
    )
)
def test_hostile_documents_give_value_error_only(document):
    with contextlib.suppress(ValueError):
        fs.parse(document)


def test_operator_flag_reads_a_file_and_names_bad_fields(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n"
        "admissionFairSharing:\n  usageHalfLifeTime: 10m\n"
    )
    parsed = _kueue_config(str(good))
    assert parsed.fair_sharing.preemption_strategies == ("LessThanInitialShare",)
    assert parsed.admission_fair_sharing.usage_half_life_seconds == 600
    bad = tmp_path / "bad.yaml"
    bad.write_text("fairSharing:\n  preemptionStrategies: []\n")
    with pytest.raises(ValueError, match=r"fairSharing\.preemptionStrategies"):
        _kueue_config(str(bad))
    with pytest.raises(ValueError, match="cannot read"):
        _kueue_config(str(tmp_path / "missing.yaml"))
    assert _kueue_config(None) == fs.FairSharingConfig()
