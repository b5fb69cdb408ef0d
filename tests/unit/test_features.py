"""The feature-gate registry against Kueue's own lists (testdata/kueue_gates.txt, collected from
pkg/features/kube_features.go of Kueue v0.17.0, v0.18.0, v0.19.0 and v0.20), not against itself."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tas import cli, features
from tas.features import Gate, Kind
from tas.offline import reader as scenario

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).with_name("testdata") / "kueue_gates.txt"
RELEASES = ("v0.17.0", "v0.18.0", "v0.19.0", "v0.20")
ALIAS, CANONICAL = "TASMultipleNodeReplacement", "TASReplaceMultipleFailedNodes"
# Gates that stay off although the release that added them has them on (placements stay
# identical to Kueue v0.17.0's).
KEPT_OFF = {"TASNodeFeasibilityForAllLevels", "TASPartialSlices", "TASGroupedPodSetSlicing"}
OURS = {
    "TASNUMAZones",
    "TASPlacementGroups",
    "TASProfileFragmentationAware",
    "TASRequiredWithPreferred",
    "TASMultiRolePodSetGroups",
    "TASDrainingDomains",
    "TASTopologyRelaxation",
    "TASDefragmentation",
    "TASRemovePodsOnDeletedNodes",
}
# Ours that are on by default: they change no placement, only speed up what Kubernetes does.
OURS_ON = {"TASRemovePodsOnDeletedNodes"}


def read_table() -> dict[str, dict[str, tuple[str, bool]]]:
    """name -> release -> (stage, default), for the releases that know the gate."""
    table: dict[str, dict[str, tuple[str, bool]]] = {}
    for line in TABLE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, *cells = line.split()
        table[name] = {}
        for release, cell in zip(RELEASES, cells[: len(RELEASES)], strict=True):
            if cell != "-":
                stage, value = cell.split(":")
                table[name][release] = (stage, value == "on")
    return table


KUEUE = read_table()
IN_V0_17 = sorted(name for name, cells in KUEUE.items() if "v0.17.0" in cells)
LATER = sorted(name for name, cells in KUEUE.items() if "v0.17.0" not in cells)


def added_default(name: str) -> bool:
    """The default of the first release that has the gate."""
    return next(KUEUE[name][r][1] for r in RELEASES if r in KUEUE[name])


def test_the_table_holds_every_release() -> None:
    for release in RELEASES:
        assert sum(release in cells for cells in KUEUE.values()) > 40, release


# ---- every Kueue name is accepted --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KUEUE))
@pytest.mark.parametrize("value", [True, False], ids=["true", "false"])
def test_every_kueue_gate_name_is_accepted(name: str, value: bool) -> None:
    gates = features.parse(f"{name}={str(value).lower()}")
    assert gates.values == {name: value}
    assert features.from_mapping({name: value}).values == {name: value}


def test_a_v0_17_install_featuregates_string_parses() -> None:
    # As in a Kueue v0.17 chart's values (featureGates rendered into --feature-gates).
    spec = (
        "LocalQueueMetrics=true,HierarchicalCohorts=true,TopologyAwareScheduling=true,"
        "TASFailedNodeReplacement=true,TASFailedNodeReplacementFailFast=true,"
        "TASReplaceNodeOnPodTermination=true,TASMultiLayerTopology=true,"
        "VisibilityOnDemand=false,MultiKueue=false,PartialAdmission=true,"
        "ElasticJobsViaWorkloadSlices=true,ElasticJobsViaWorkloadSlicesWithTAS=true"
    )
    gates = features.from_env_and_flag(spec, environ={})
    assert gates.enabled(Gate.TAS_MULTI_LAYER_TOPOLOGY)
    assert gates.enabled(Gate.LOCAL_QUEUE_METRICS)
    assert gates.values["MultiKueue"] is False
    assert gates.values["ElasticJobsViaWorkloadSlicesWithTAS"] is True


def test_gates_the_issue_names_parse_together() -> None:
    names = ["LocalQueueMetrics", "HierarchicalCohorts", "TASCacheTopologyTree", *KEPT_OFF]
    gates = features.parse(",".join(f"{name}=true" for name in names))
    assert gates.values == dict.fromkeys(names, True)


# ---- what is refused ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("TASCacheTopologyTre", "TASCacheTopologyTree"),
        ("topologyawarescheduling", None),
        ("TASMultipleNodeReplacements", "TASMultipleNodeReplacement"),
        ("NoSuchGateAtAll", None),
        ("TASProfileLeastFreeCapacity", None),  # removed before v0.17.0
    ],
    ids=["typo", "case", "alias-typo", "unrelated", "removed-before-v0.17"],
)
def test_an_unknown_name_fails_with_one_line_naming_it(name: str, suggestion: str | None) -> None:
    with pytest.raises(features.FeatureGateError) as error:
        features.parse(f"{name}=true")
    message = str(error.value)
    assert repr(name) in message and "\n" not in message
    if suggestion is not None:
        assert f"did you mean {suggestion!r}" in message


def test_an_unknown_name_in_a_mapping_fails_too() -> None:
    with pytest.raises(features.FeatureGateError, match="'Nope'"):
        features.from_mapping({"TopologyAwareScheduling": True, "Nope": False})


@pytest.mark.parametrize("value", ["yes", "1", "", "on", "enabled", "truex"])
def test_a_value_that_is_not_true_or_false_fails(value: str) -> None:
    with pytest.raises(features.FeatureGateError, match="not true or false"):
        features.parse(f"MultiKueue={value}")


@pytest.mark.parametrize("value", [1, None, "yes", 0.0])
def test_a_mapping_value_that_is_not_a_boolean_fails(value: object) -> None:
    with pytest.raises(features.FeatureGateError, match="'TASProfileMixed'"):
        features.from_mapping({"TASProfileMixed": value})


def test_an_item_without_a_value_fails() -> None:
    with pytest.raises(features.FeatureGateError, match=r"expected NAME=true\|false"):
        features.parse("TASProfileMixed")


@pytest.mark.parametrize("value", ["TRUE", "False", " true "])
def test_values_are_case_blind_and_trimmed(value: str) -> None:
    assert features.parse(f"MultiKueue={value}").values == {
        "MultiKueue": value.strip().lower() == "true"
    }


# ---- the alias ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False])
def test_the_old_name_sets_the_kueue_gate(value: bool) -> None:
    gates = features.parse(f"TASFailedNodeReplacement=true,{ALIAS}={str(value).lower()}")
    assert gates.values[CANONICAL] is value
    assert gates.enabled(Gate.TAS_REPLACE_MULTIPLE_FAILED_NODES) is value


def test_both_names_with_one_value_are_accepted() -> None:
    gates = features.from_mapping({ALIAS: True, CANONICAL: True})
    assert gates.values == {CANONICAL: True}


@pytest.mark.parametrize("order", [(ALIAS, CANONICAL), (CANONICAL, ALIAS)])
def test_both_names_with_different_values_fail_naming_both(order: tuple[str, str]) -> None:
    with pytest.raises(features.FeatureGateError) as error:
        features.parse(f"{order[0]}=true,{order[1]}=false")
    assert ALIAS in str(error.value) and CANONICAL in str(error.value)


def test_code_asks_only_for_the_kueue_name() -> None:
    with pytest.raises(features.FeatureGateError):
        features.defaults().enabled(ALIAS)
    assert ALIAS not in features.GATES


def test_the_flag_wins_over_the_environment_across_the_two_names() -> None:
    gates = features.from_env_and_flag(f"{CANONICAL}=false", {features.ENV_VAR: f"{ALIAS}=true"})
    assert gates.values[CANONICAL] is False


def a_scenario(gates: dict[str, object]) -> dict[str, object]:
    host = "kubernetes.io/hostname"
    node = {"name": "n1", "labels": {host: "n1"}, "allocatable": {"cpu": "1"}}
    levels = [{"nodeLabel": host}]
    return {"topology": {"levels": levels}, "nodes": [node], "workloads": [], "featureGates": gates}


def test_a_scenario_takes_kueue_names_and_the_old_name() -> None:
    scenario.parse_scenario(a_scenario({"MultiKueue": True, ALIAS: True, CANONICAL: True}))


def test_a_scenario_with_both_names_set_differently_is_malformed() -> None:
    with pytest.raises(scenario.ScenarioError) as error:
        scenario.parse_scenario(a_scenario({ALIAS: True, CANONICAL: False}))
    assert error.value.path == "featureGates"
    assert ALIAS in error.value.message and CANONICAL in error.value.message


# ---- defaults ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", IN_V0_17)
def test_a_gate_kueue_v0_17_0_has_defaults_as_there(name: str) -> None:
    assert features.GATES[name].default == KUEUE[name]["v0.17.0"][1]


@pytest.mark.parametrize("name", LATER)
def test_a_later_gate_defaults_as_in_the_release_that_added_it(name: str) -> None:
    expected = False if name in KEPT_OFF else added_default(name)
    assert features.GATES[name].default == expected


def test_the_gates_kept_off_are_on_in_kueue_v0_20() -> None:
    # Otherwise the exception would be empty and the rule above would say nothing about them.
    assert all(KUEUE[name]["v0.20"][1] for name in KEPT_OFF)


@pytest.mark.parametrize("release", ["v0.17.0", "v0.20"])
def test_kueue_defaults_are_the_releases_own(release: str) -> None:
    expected = {name: cells[release][1] for name, cells in KUEUE.items() if release in cells}
    assert features.kueue_defaults(release) == expected


def test_an_unknown_release_fails() -> None:
    with pytest.raises(features.FeatureGateError, match=r"v0\.16"):
        features.kueue_defaults("v0.16")


def test_ours_are_off_alpha_or_on_beta_and_unknown_to_kueue() -> None:
    for name in OURS:
        spec = features.GATES[name]
        on = name in OURS_ON
        stage = features.OUR_BETA_STAGE if on else features.OUR_STAGE
        assert (spec.kind, spec.default, spec.stage) == (Kind.OURS, on, stage)
        assert name not in KUEUE
    assert set(features.GATES) == set(KUEUE) | OURS


def test_every_gate_code_may_ask_for_is_implemented_or_ours() -> None:
    asked = {gate.value for gate in Gate}
    effective = {n for n, s in features.GATES.items() if s.kind is not Kind.NO_EFFECT}
    assert asked == effective


@pytest.mark.parametrize("name", IN_V0_17)
def test_the_stage_of_a_v0_17_gate_is_kueues_there(name: str) -> None:
    assert features.GATES[name].stage == KUEUE[name]["v0.17.0"][0]


# ---- dependencies ------------------------------------------------------------------------------

# Kueue's defaultFeatureGateDependencies (pkg/features/kube_features.go, v0.20), plus the
# replacement gates whose controller runs only with TASFailedNodeReplacement.
KUEUE_DEPENDENCIES = {
    "TASFailedNodeReplacementFailFast": "TASFailedNodeReplacement",
    "TASReplaceNodeOnPodTermination": "TASFailedNodeReplacement",
    "TASReplaceNodeOnNodeTaints": "TASFailedNodeReplacement",
    "TASReplaceMultipleFailedNodes": "TASFailedNodeReplacement",
    "ElasticJobsViaWorkloadSlicesWithTAS": "ElasticJobsViaWorkloadSlices",
    "UnadmittedWorkloadsExplicitStatus": "UnadmittedWorkloadsObservability",
    "KueueDRAIntegrationExtendedResource": "KueueDRAIntegration",
    "KueueDRAIntegrationPartitionableDevices": "KueueDRAIntegration",
    "KueueDRAIntegrationConsumableCapacity": "KueueDRAIntegration",
    "FlavorFungibilityPreserveScanProgress": "FlavorFungibility",
}


@pytest.mark.parametrize("name", sorted(n for n in features.GATES if n.startswith("TAS")))
def test_every_tas_gate_needs_topology_aware_scheduling(name: str) -> None:
    assert features.parse(f"{name}=true").enabled(name)
    assert not features.parse(f"TopologyAwareScheduling=false,{name}=true").enabled(name)


@pytest.mark.parametrize(("name", "needs"), sorted(KUEUE_DEPENDENCIES.items()))
def test_a_gate_is_off_while_what_it_needs_is_off(name: str, needs: str) -> None:
    assert features.parse(f"{name}=true,{needs}=true").enabled(name)
    assert not features.parse(f"{name}=true,{needs}=false").enabled(name)


# ---- accepted, no effect -----------------------------------------------------------------------


def test_the_no_effect_line_reads_as_documented() -> None:
    lines = features.no_effect_lines(features.parse("MultiKueue=true"))
    assert lines == ["feature gate MultiKueue=true accepted, no effect here (not implemented)"]


def test_one_line_per_no_effect_gate_set_and_none_for_the_others() -> None:
    set_off = {n for n, s in features.GATES.items() if s.kind is Kind.NO_EFFECT}
    effective = {"TASProfileMixed": "false", "TASNUMAZones": "true", ALIAS: "true"}
    spec = ",".join(
        [*(f"{n}=false" for n in sorted(set_off)), *(f"{n}={v}" for n, v in effective.items())]
    )
    lines = features.no_effect_lines(features.parse(spec))
    assert len(lines) == len(set_off)
    assert {line.split()[2].split("=")[0] for line in lines} == set_off
    assert all(line.split()[2].endswith("=false") for line in lines)


def test_nothing_is_logged_for_defaults() -> None:
    assert features.no_effect_lines(features.from_env_and_flag(None, {})) == []


def test_tas_operator_logs_the_no_effect_gates_at_start_up(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def no_operator(settings: object, liveness: object) -> None:
        return None

    monkeypatch.setattr(cli, "_run_operator", no_operator)
    monkeypatch.delenv(features.ENV_VAR, raising=False)
    with caplog.at_level(logging.INFO, logger="tas.features"):
        code = cli.main(
            ["operator", "--feature-gates", "TASCacheTopologyTree=true,TASBalancedPlacement=true"]
        )
    assert code == 0
    logged = [r.getMessage() for r in caplog.records if r.name == "tas.features"]
    assert logged == [
        "feature gate TASCacheTopologyTree=true accepted, no effect here (speed only in Kueue)"
    ]


def test_tas_operator_stops_on_an_unknown_gate(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["operator", "--feature-gates", "LocalQueueMetric=true"]) == 2
    err = capsys.readouterr().err
    assert "'LocalQueueMetric'" in err and "'LocalQueueMetrics'" in err and err.count("\n") == 1


# ---- the v0.20 preset and the reference page ---------------------------------------------------


def test_the_v0_20_preset_gives_v0_20_defaults_to_every_implemented_gate() -> None:
    gates = features.parse(features.preset("v0.20"))
    for name, cells in KUEUE.items():
        if features.GATES[name].kind is Kind.IMPLEMENTED and "v0.20" in cells:
            assert gates.values.get(name, features.GATES[name].default) == cells["v0.20"][1], name


def test_the_v0_20_preset_sets_only_gates_that_differ() -> None:
    for name, value in features.parse(features.preset("v0.20")).values.items():
        assert features.GATES[name].default != value, name


def test_the_reference_page_is_fresh() -> None:
    page = ROOT / "docs" / "reference" / "feature-gates.md"
    stale = "docs/reference/feature-gates.md is stale: python -m tas.features --markdown > it"
    assert page.read_text() == features.markdown(), stale


def test_the_reference_page_lists_every_name_and_the_preset() -> None:
    page = features.markdown()
    for name in [*KUEUE, *OURS, ALIAS]:
        assert f"`{name}`" in page, name
    assert f"--feature-gates {features.preset('v0.20')}\n" in page


def test_python_m_tas_features_markdown_prints_the_page() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    run = [sys.executable, "-m", "tas.features", "--markdown"]
    result = subprocess.run(run, capture_output=True, text=True, env=env, check=True)
    assert result.stdout == features.markdown()


# ---- the solver's options and round trips ------------------------------------------------------


def test_solver_options_follow_the_placement_gates() -> None:
    assert features.defaults().solver_options().profile_mixed is True
    options = features.parse(
        "TASProfileMixed=false,TASBalancedPlacement=true,TASPlacementGroups=true,"
        "TASProfileFragmentationAware=true"
    ).solver_options()
    assert not options.profile_mixed
    assert options.balanced_placement and options.placement_groups and options.fragmentation_aware


def test_as_dict_holds_the_gates_that_change_something() -> None:
    got = features.parse("TASBalancedPlacement=true,MultiKueue=false").as_dict()
    assert got["TASBalancedPlacement"] is True and "MultiKueue" not in got
    assert set(got) == {gate.value for gate in Gate}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(features.NAMES), st.booleans(), max_size=12))
def test_parse_round_trips(values: dict[str, bool]) -> None:
    canonical = {features.ALIASES.get(n, n): v for n, v in values.items()}
    if len(canonical) < len(values) and len(set(values.get(n) for n in (ALIAS, CANONICAL))) > 1:
        with pytest.raises(features.FeatureGateError):
            features.from_mapping(values)
        return
    spec = ",".join(f"{n}={str(v).lower()}" for n, v in values.items())
    gates = features.parse(spec)
    assert dict(gates.values) == canonical
    again = ",".join(f"{n}={str(v).lower()}" for n, v in gates.values.items())
    assert features.parse(again) == gates
