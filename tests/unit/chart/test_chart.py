"""The Helm chart, checked offline with the real `helm` binary: lint, and what it renders.

helm comes from the local control-plane cache (`e2e/build-bins.sh`), TAS_BIN_DIR, or PATH. `make
test` builds it first; without it the tests fail under CI (CI=true) and skip elsewhere (a plain
`pytest` on a machine that never ran `make bins`). No cluster is used.
"""

from __future__ import annotations

import atexit
import copy
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

import tas
from tas import features
from tas.api import crdgen
from tas.api.models import RESOURCES
from tas.cli import build_parser
from tas.config import MAX_REVIEW_BYTES, Settings, parse_label_selector
from tas.runtime.leader import LeaseSettings
from tas.webhooks.server import READY_PATH

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "helm" / "tas-operator"
CHART_CRDS = CHART / "templates" / "crds"
RELEASE, NAMESPACE = "tas", "tas-system"
FULLNAME = "tas-tas-operator"  # <release>-<chart>, from _helpers.tpl
CRD_NAMES = sorted(f"{resource.crd.plural}.{resource.crd.group}" for resource in RESOURCES)

# (apiGroup, resource, verb, resourceName or None). Change it together with rbac.yaml and the
# Permissions table in docs/reference/permissions.md: an added or dropped verb must be a
# decision, not an accident.
# What every configuration needs, then what each integration adds.
BASE_RULES = {
    *{("", "nodes", v, None) for v in ("get", "list", "watch")},
    *{("", "namespaces", v, None) for v in ("list", "watch")},
    *{("", "pods", v, None) for v in ("list", "watch", "patch", "delete")},
    ("", "pods/status", "patch", None),
    ("", "events", "create", None),
    *{
        ("kueue.x-k8s.io", r, v, None)
        for r in (
            "topologies",
            "resourceflavors",
            "clusterqueues",
            "localqueues",
            "cohorts",
            "workloadpriorityclasses",
        )
        for v in ("list", "watch")
    },
    *{("scheduling.k8s.io", "priorityclasses", v, None) for v in ("list", "watch")},
    # What the API server adds to pods, folded into the Workloads built.
    *{("", "limitranges", v, None) for v in ("list", "watch")},
    *{("node.k8s.io", "runtimeclasses", v, None) for v in ("list", "watch")},
    *{
        ("kueue.x-k8s.io", "workloads", v, None)
        for v in ("get", "list", "watch", "create", "delete", "patch")
    },
    # The storage migration's empty patch, after an upgrade.
    *{
        ("kueue.x-k8s.io", r, "patch", None)
        for r in (
            "topologies",
            "resourceflavors",
            "clusterqueues",
            "localqueues",
            "cohorts",
            "workloadpriorityclasses",
        )
    },
    # Our own CRDs: the conversion webhook's CA bundle, and the trimmed storedVersions.
    *{
        ("apiextensions.k8s.io", r, v, name)
        for name in CRD_NAMES
        for r, v in (
            ("customresourcedefinitions", "get"),
            ("customresourcedefinitions", "patch"),
            ("customresourcedefinitions/status", "patch"),
        )
    },
    *{
        ("kueue.x-k8s.io", r, "patch", None)
        for r in (
            "workloads/status",
            "clusterqueues/status",
            "localqueues/status",
            "cohorts/status",
        )
    },
    *{("apiextensions.k8s.io", "customresourcedefinitions", v, None) for v in ("list", "watch")},
    *{
        ("admissionregistration.k8s.io", r, v, name)
        for r in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        for v, name in (
            ("get", "tas-operator.kueue.x-k8s.io"),
            ("patch", "tas-operator.kueue.x-k8s.io"),
        )
    },
}
JOB_RULES = {
    *{("batch", "jobs", v, None) for v in ("list", "watch", "patch")},
    ("batch", "jobs/status", "patch", None),
    ("batch", "jobs/finalizers", "update", None),
}
JOBSET_RULES = {
    *{("batch", "jobs", v, None) for v in ("list", "watch")},  # its Jobs, for their pods
    *{("jobset.x-k8s.io", "jobsets", v, None) for v in ("list", "watch", "patch")},
    ("jobset.x-k8s.io", "jobsets/finalizers", "update", None),
}
POD_RULES = {
    ("", "pods/finalizers", "update", None),
    ("kueue.x-k8s.io", "workloads", "patch", None),
}
LWS_RULES = {
    *{("leaderworkerset.x-k8s.io", "leaderworkersets", v, None) for v in ("list", "watch")}
}
# A TrainJob: its JobSet and that JobSet's Jobs (its pods' owners), and its runtimes (read).
TRAINJOB_RULES = {
    *{("trainer.kubeflow.org", "trainjobs", v, None) for v in ("list", "watch", "patch")},
    ("trainer.kubeflow.org", "trainjobs/finalizers", "update", None),
    *{("jobset.x-k8s.io", "jobsets", v, None) for v in ("list", "watch")},
    *{("batch", "jobs", v, None) for v in ("list", "watch")},
    *{
        ("trainer.kubeflow.org", r, v, None)
        for r in ("clustertrainingruntimes", "trainingruntimes")
        for v in ("get", "list", "watch")
    },
}
# An AppWrapper: the wrapped Jobs and PyTorchJobs, its pods' owners.
APPWRAPPER_RULES = {
    *{("workload.codeflare.dev", "appwrappers", v, None) for v in ("list", "watch", "patch")},
    ("workload.codeflare.dev", "appwrappers/finalizers", "update", None),
    *{("batch", "jobs", v, None) for v in ("list", "watch")},
    *{("kubeflow.org", "pytorchjobs", v, None) for v in ("list", "watch")},
}
# The Kubeflow training jobs and MPIJob: framework -> their kubeflow.org resource.
KUBEFLOW_KINDS = {
    "kubeflow.org/pytorchjob": "pytorchjobs",
    "kubeflow.org/tfjob": "tfjobs",
    "kubeflow.org/xgboostjob": "xgboostjobs",
    "kubeflow.org/paddlejob": "paddlejobs",
    "kubeflow.org/jaxjob": "jaxjobs",
    "kubeflow.org/mpijob": "mpijobs",
}


def kubeflow_rules(resource: str) -> set:
    """List, watch and patch (suspend, start) the kind; update finalizers (its Workload's
    ownerReference blocks its deletion)."""
    return {
        *{("kubeflow.org", resource, v, None) for v in ("list", "watch", "patch")},
        ("kubeflow.org", f"{resource}/finalizers", "update", None),
    }


# An MPIJob's launcher is a Job it controls, holding the launcher's pod.
MPIJOB_CHILD_RULES = {("batch", "jobs", v, None) for v in ("list", "watch")}
INTEGRATION_RULES = {
    "batch/job": JOB_RULES,
    "jobset.x-k8s.io/jobset": JOBSET_RULES,
    "pod": POD_RULES,
    "statefulset": POD_RULES,  # its pods are pod groups: nothing of its own is read or written
    "leaderworkerset.x-k8s.io/leaderworkerset": POD_RULES | LWS_RULES,
    **{name: kubeflow_rules(resource) for name, resource in KUBEFLOW_KINDS.items()},
    "deployment": POD_RULES,  # its pods are single pods: nothing of its own is read or written
    "trainer.kubeflow.org/trainjob": TRAINJOB_RULES,
    "workload.codeflare.dev/appwrapper": APPWRAPPER_RULES,
}
# KubeRay's kinds: framework -> their ray.io resource.
RAY_KINDS = {
    "ray.io/rayjob": "rayjobs",
    "ray.io/raycluster": "rayclusters",
    "ray.io/rayservice": "rayservices",
}
for _name, _resource in RAY_KINDS.items():
    INTEGRATION_RULES[_name] = {  # list, watch, patch; finalizers (a Workload's ownerReference)
        *{("ray.io", _resource, v, None) for v in ("list", "watch", "patch")},
        ("ray.io", f"{_resource}/finalizers", "update", None),
    }
# The RayCluster a RayJob or RayService makes, and a RayJob's submitter Job: their pods'.
INTEGRATION_RULES["ray.io/rayjob"] |= {
    *{("ray.io", "rayclusters", v, None) for v in ("list", "watch")},
    *{("batch", "jobs", v, None) for v in ("list", "watch")},
}
INTEGRATION_RULES["ray.io/rayservice"] |= {
    ("ray.io", "rayclusters", v, None) for v in ("list", "watch")
}
INTEGRATION_RULES["kubeflow.org/mpijob"] |= MPIJOB_CHILD_RULES
ALL_INTEGRATIONS = list(INTEGRATION_RULES)


def expected_rules(integrations=ALL_INTEGRATIONS) -> set:
    return BASE_RULES.union(*(INTEGRATION_RULES[name] for name in integrations))


EXPECTED_RULES = expected_rules()
# With the TASNUMAZones gate on: the nodes' NodeResourceTopology objects (their CRD comes from
# the chart; the operator only reads it).
NUMA_GATE = {"featureGates": [{"name": "TASNUMAZones", "enabled": True}]}
NUMA_RULES = {
    *{("topology.node.k8s.io", "noderesourcetopologies", v, None) for v in ("list", "watch")},
}
NUMA_CRD = "noderesourcetopologies.topology.node.k8s.io"


# ---- running helm --------------------------------------------------------------------------------


def _cache_bin_dir() -> Path:
    """The directory e2e/build-bins.sh builds into, named after e2e/versions.env."""
    versions = dict(
        line.split("=", 1)
        for line in (ROOT / "e2e" / "versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (
        cache
        / "tas-operator"
        / (
            f"bin-k8s{versions['KUBE_VERSION']}-etcd{versions['ETCD_VERSION']}"
            f"-kwok{versions['KWOK_VERSION']}-helm{versions['HELM_VERSION']}"
        )
    )


@functools.cache
def _helm_binary() -> str | None:
    for directory in (os.environ.get("TAS_BIN_DIR"), _cache_bin_dir()):
        if directory and (Path(directory) / "helm").is_file():
            return str(Path(directory) / "helm")
    return shutil.which("helm")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@functools.cache
def _helm_env() -> dict[str, str]:
    """helm's own state in a scratch directory, and no cluster to talk to."""
    scratch = Path(tempfile.mkdtemp(prefix="tas-chart-tests-"))
    atexit.register(shutil.rmtree, scratch, True)
    (scratch / "kubeconfig").write_text("")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "HELM_CACHE_HOME": str(scratch / "cache"),
        "HELM_CONFIG_HOME": str(scratch / "config"),
        "HELM_DATA_HOME": str(scratch / "data"),
        "KUBECONFIG": str(scratch / "kubeconfig"),
    }


def helm(*args: str, values: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    binary = _helm_binary()
    if binary is None:
        missing = "no helm binary: run `make bins` (or put helm on PATH)"
        if _in_ci():
            pytest.fail(missing + "; under CI a missing tool is a failure, not a skip")
        pytest.skip(missing)
    cmd = [binary, *args]
    if values is not None:
        fd, values_file = tempfile.mkstemp(suffix=".json", dir=_helm_env()["HOME"])
        with os.fdopen(fd, "w") as out:
            json.dump(values, out)  # JSON is YAML
        cmd += ["-f", values_file]
    return subprocess.run(cmd, env=_helm_env(), capture_output=True, text=True, timeout=120)


@functools.cache
def _render_cached(values_json: str) -> tuple[dict[str, Any], ...]:
    values = json.loads(values_json)
    result = helm("template", RELEASE, str(CHART), "-n", NAMESPACE, values=values)
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return copy.deepcopy(list(_render_cached(json.dumps(values or {}, sort_keys=True))))


def the(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    containers = the(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def args_of(docs: list[dict[str, Any]]) -> list[str]:
    return container(docs)["args"]


def flag(docs: list[dict[str, Any]], name: str) -> str:
    """The value of `--name=value` among the container's args (exactly one)."""
    values = [a.split("=", 1)[1] for a in args_of(docs) if a.startswith(f"--{name}=")]
    assert len(values) == 1, f"--{name} given {len(values)} times: {args_of(docs)}"
    return values[0]


def port(docs: list[dict[str, Any]], name: str) -> int:
    ports = {p["name"]: p["containerPort"] for p in container(docs)["ports"]}
    return ports[name]


def rules(docs: list[dict[str, Any]]) -> Iterator[tuple[str, str, str, str | None]]:
    for rule in the(docs, "ClusterRole")["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in rule.get("resourceNames") or [None]:
                        yield group, resource, verb, name


# ---- lint and what is rendered ---------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [None, {"featureGates": [{"name": "TASBalancedPlacement", "enabled": True}]}],
    ids=["defaults", "with-gates"],
)
def test_helm_lint_is_clean(values: dict[str, Any] | None) -> None:
    result = helm("lint", "--strict", str(CHART), values=values)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "[WARNING]" not in output and "[ERROR]" not in output, output


def test_a_missing_helm_fails_under_ci_and_skips_elsewhere(monkeypatch) -> None:
    """`make test` builds helm before these tests; CI must not go green by skipping them."""
    monkeypatch.setattr(sys.modules[__name__], "_helm_binary", lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI a missing tool is a failure"):
        helm("version")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no helm binary"):
        helm("version")


def test_renders_the_expected_objects() -> None:
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in render())
    crds = [("CustomResourceDefinition", name) for name in CRD_NAMES]
    assert kinds == sorted(
        [
            *crds,
            ("ClusterRole", FULLNAME),
            ("ClusterRoleBinding", FULLNAME),
            ("Role", f"{FULLNAME}-leader-election"),
            ("RoleBinding", f"{FULLNAME}-leader-election"),
            ("Secret", f"{FULLNAME}-webhook-cert"),
            ("Deployment", FULLNAME),
            ("PodDisruptionBudget", FULLNAME),
            ("MutatingWebhookConfiguration", Settings().webhook_config_name),
            ("Service", f"{FULLNAME}-webhook"),
            ("ServiceAccount", FULLNAME),
            ("ValidatingWebhookConfiguration", Settings().webhook_config_name),
        ]
    )
    for doc in render():
        if doc["kind"] in (
            "Deployment",
            "Service",
            "ServiceAccount",
            "Role",
            "Secret",
            "PodDisruptionBudget",
        ):
            assert doc["metadata"]["namespace"] == NAMESPACE


def render_notes(tmp_path: Path, values: dict[str, Any] | None = None) -> str:
    """NOTES.txt as `helm install` would print it. `helm template` leaves NOTES out and
    `helm install --dry-run` wants a cluster, so a copy of the chart renders it into a ConfigMap
    (every template file is also a named template, NOTES.txt included)."""
    chart = tmp_path / CHART.name
    shutil.copytree(CHART, chart)
    (chart / "templates" / "notes-for-test.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: |\n"
        '{{ include "tas-operator/templates/NOTES.txt" . | indent 4 }}\n'
    )
    result = helm(
        "template",
        RELEASE,
        str(chart),
        "-n",
        NAMESPACE,
        "--show-only",
        "templates/notes-for-test.yaml",
        values=values,
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["data"]["notes"]


def test_notes_give_next_steps_and_the_kueue_warning(tmp_path: Path) -> None:
    notes = render_notes(tmp_path)
    assert "never install tas-operator next to Kueue" in notes
    assert f"rollout status deployment/{FULLNAME}" in notes
    for step in ("examples/kueue-tas/topology.yaml", "sample-job.yaml", "describe workload"):
        assert step in notes
    assert "Feature gates" not in notes
    gates = [{"name": "TASBalancedPlacement", "enabled": True}]
    assert "Feature gates set: TASBalancedPlacement=true" in render_notes(
        tmp_path / "gates", {"featureGates": gates}
    )


# ---- feature gates ---------------------------------------------------------------------------


def test_feature_gates_become_one_flag_in_list_order() -> None:
    gates = [
        {"name": "TASBalancedPlacement", "enabled": True},
        {"name": "TASFailedNodeReplacementFailFast", "enabled": False},
    ]
    docs = render({"featureGates": gates})
    value = flag(docs, "feature-gates")
    assert value == "TASBalancedPlacement=true,TASFailedNodeReplacementFailFast=false"
    parsed = features.parse(value)
    assert parsed.enabled("TASBalancedPlacement")
    assert not parsed.enabled("TASFailedNodeReplacementFailFast")


def test_no_feature_gates_flag_when_the_list_is_empty() -> None:
    assert not [a for a in args_of(render()) if a.startswith("--feature-gates")]
    assert not [a for a in args_of(render({"featureGates": []})) if "feature-gates" in a]


@pytest.mark.parametrize(
    "gate",
    [
        {"name": "NoSuchGate", "enabled": True},
        {"name": "TASBalancedPlacement", "enabled": "yes"},
        {"name": "TASBalancedPlacement"},
        {"enabled": True},
    ],
    ids=["unknown-name", "not-a-boolean", "no-enabled", "no-name"],
)
def test_a_bad_feature_gate_fails_the_render(gate: dict[str, Any]) -> None:
    result = helm("template", RELEASE, str(CHART), values={"featureGates": [gate]})
    assert result.returncode != 0
    assert "featureGates" in result.stderr


def test_the_schema_knows_exactly_the_operators_gates() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    names = schema["properties"]["featureGates"]["items"]["properties"]["name"]["enum"]
    assert sorted(names) == sorted(features.NAMES), "update values.schema.json"


# ---- the operator's command line -------------------------------------------------------------


def test_tas_operator_accepts_the_rendered_command_line() -> None:
    docs = render({"featureGates": [{"name": "TASMultiLayerTopology", "enabled": False}]})
    command = container(docs)["command"]
    assert command[:2] == ["tas", "operator"]
    parsed = build_parser().parse_args([*command[1:], *args_of(docs)])  # fails on unknown flags
    assert parsed.command == "operator"
    assert parsed.webhook_listen == "0.0.0.0"
    assert parsed.webhook_port == 9443
    assert parsed.metrics_port == 8080
    assert parsed.log_level == "INFO"
    assert not features.parse(parsed.feature_gates).enabled("TASMultiLayerTopology")


# ---- RBAC ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "integrations",
    [
        None,  # the chart's default: every integration
        [],
        ["batch/job"],
        ["jobset.x-k8s.io/jobset"],
        ["pod"],
        ["statefulset"],
        ["leaderworkerset.x-k8s.io/leaderworkerset"],
        ["batch/job", "pod"],
        ["ray.io/rayjob"],
        ["ray.io/raycluster"],
        ["ray.io/rayservice", "ray.io/raycluster"],  # both read RayClusters: granted once
        ["jobset.x-k8s.io/jobset", "ray.io/rayjob"],  # both read Jobs: granted once
        ["kubeflow.org/pytorchjob"],
        ["kubeflow.org/mpijob"],
        ["jobset.x-k8s.io/jobset", "kubeflow.org/mpijob"],  # both read Jobs: granted once
        ["deployment"],
    ],
    ids=lambda v: "default" if v is None else ",".join(v) or "none",
)
def test_rbac_is_exactly_what_the_enabled_integrations_need(integrations) -> None:
    docs = render(None if integrations is None else {"integrations": integrations})
    expected = expected_rules(ALL_INTEGRATIONS if integrations is None else integrations)
    actual = list(rules(docs))
    assert len(actual) == len(set(actual)), "a verb is granted twice"
    assert set(actual) == expected, (
        f"added: {sorted(set(actual) - expected, key=str)}; "
        f"missing: {sorted(expected - set(actual), key=str)}"
    )


# With the TASPlacementGroups gate on: the groups' objects, made by the operator, and their status.
GROUP_RULES = {
    *{("tas-operator.io", "placementgroups", v, None) for v in ("get", "list", "watch", "create")},
    ("tas-operator.io", "placementgroups/status", "patch", None),
}


@pytest.mark.parametrize("enabled", [True, False])
def test_rbac_adds_the_placement_group_rules_only_with_the_gate_on(enabled: bool) -> None:
    gate = {"featureGates": [{"name": "TASPlacementGroups", "enabled": enabled}]}
    actual = list(rules(render(gate)))
    assert len(actual) == len(set(actual)), "a verb is granted twice"
    assert set(actual) == EXPECTED_RULES | (GROUP_RULES if enabled else set())


@pytest.mark.parametrize("enabled", [True, False])
def test_rbac_adds_the_numa_rules_only_with_the_gate_on(enabled: bool) -> None:
    gate = {"featureGates": [{"name": "TASNUMAZones", "enabled": enabled}]}
    actual = list(rules(render(gate)))
    assert len(actual) == len(set(actual)), "a verb is granted twice"
    assert set(actual) == EXPECTED_RULES | (NUMA_RULES if enabled else set())


def test_the_default_integrations_are_every_one_the_operator_knows() -> None:
    from tas.integrations import Framework

    assert sorted(str(f) for f in Framework) == sorted(ALL_INTEGRATIONS)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert sorted(values["integrations"]) == sorted(ALL_INTEGRATIONS)
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert sorted(schema["properties"]["integrations"]["items"]["enum"]) == sorted(ALL_INTEGRATIONS)
    assert flag(render(), "integrations") == ",".join(values["integrations"])


def test_an_unknown_integration_fails_the_render() -> None:
    result = helm("template", RELEASE, str(CHART), values={"integrations": ["mpijob"]})
    assert result.returncode != 0 and "integrations" in result.stderr


def test_rbac_is_bound_to_the_operators_service_account_only() -> None:
    docs = render()
    # The only namespaced grant is the Lease (see the leader-election test below).
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Role"] == [
        f"{FULLNAME}-leader-election"
    ]
    binding = the(docs, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": the(docs, "ClusterRole")["metadata"]["name"],
    }
    account = the(docs, "ServiceAccount")["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": NAMESPACE}
    ]
    pod = the(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]


def test_rbac_lets_the_operator_list_and_watch_everything_it_caches() -> None:
    from tas.runtime.watches import WATCHES

    watched = set()
    for watch in WATCHES.values():
        parts = watch.path.strip("/").split("/")
        # /api/v1/<resource> is the core group; /apis/<group>/<version>/<resource> the others.
        watched.add(("", parts[2]) if parts[0] == "api" else (parts[1], parts[3]))
    assert ("", "pods") in watched and ("batch", "jobs") in watched
    every_gate = {
        "featureGates": [
            {"name": "TASNUMAZones", "enabled": True},
            {"name": "TASPlacementGroups", "enabled": True},
        ]
    }
    granted = set(rules(render(every_gate)))  # every gated watch on
    for group, resource in sorted(watched):
        for verb in ("list", "watch"):
            assert (group, resource, verb, None) in granted, f"{verb} {group}/{resource}"


# ---- webhook ---------------------------------------------------------------------------------


@pytest.mark.parametrize("webhook_port", [None, 8443])
def test_webhook_service_ports_and_args_agree(webhook_port: int | None) -> None:
    docs = render({"webhook": {"port": webhook_port}} if webhook_port else None)
    expected_port = webhook_port or Settings().webhook_port
    service = the(docs, "Service")
    pod_template = the(docs, "Deployment")["spec"]["template"]

    # The Service reaches the pod...
    assert service["spec"]["selector"].items() <= pod_template["metadata"]["labels"].items()
    assert service["spec"]["selector"] == the(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    # ...on the port the operator listens on, which is also the Service's own port, because the
    # URL kopf registers (https://host:port/...) carries the listening port.
    [service_port] = service["spec"]["ports"]
    assert service_port["port"] == expected_port
    assert service_port["targetPort"] == "webhook"
    assert port(docs, "webhook") == expected_port
    assert flag(docs, "webhook-port") == str(expected_port)
    assert flag(docs, "webhook-listen") == "0.0.0.0"
    # The URL's host and the certificate's name are the Service's DNS name.
    assert flag(docs, "webhook-host") == f"{service['metadata']['name']}.{NAMESPACE}.svc"
    # The webhook configurations reference the Service (an API server does not resolve
    # cluster DNS names in webhook URLs).
    assert (
        flag(docs, "webhook-service")
        == f"{NAMESPACE}/{service['metadata']['name']}:{expected_port}"
    )
    probe = container(docs)["readinessProbe"]
    assert probe["httpGet"] == {"path": f"/{READY_PATH}", "port": "webhook", "scheme": "HTTPS"}


def test_every_replica_serves_the_one_certificate_kept_in_the_charts_secret() -> None:
    """Replicas behind one Service must present certificates that the one caBundle verifies:
    the operator keeps one in the chart's Secret, which the chart creates empty (so that a
    `helm upgrade` never overwrites what the operator wrote)."""
    docs = render()
    secret = the(docs, "Secret")
    assert "data" not in secret and "stringData" not in secret
    assert flag(docs, "webhook-cert-secret") == f"{NAMESPACE}/{secret['metadata']['name']}"
    pod = the(docs, "Deployment")["spec"]["template"]["spec"]
    # Served from files the operator writes, in memory: no Secret volume (a mounted Secret
    # reaches the pod a minute late), and the private key never on the node's disk.
    assert not [v for v in pod["volumes"] if "secret" in v]
    [tmp] = [v for v in pod["volumes"] if v["name"] == "tmp"]
    assert tmp["emptyDir"] == {"medium": "Memory"}
    assert not [a for a in args_of(docs) if a.startswith("--webhook-cert-dir")]
    service = the(docs, "Service")["metadata"]["name"]
    assert flag(docs, "webhook-host") == f"{service}.{NAMESPACE}.svc"


def test_the_namespaced_role_covers_the_lease_and_the_certificate_and_nothing_more() -> None:
    docs = render()
    role = the(docs, "Role")
    granted = {
        (g, r, v, n)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
        for n in rule.get("resourceNames") or [None]
    }
    lease = LeaseSettings(namespace=NAMESPACE).name
    secret = the(docs, "Secret")["metadata"]["name"]
    assert granted == {
        ("coordination.k8s.io", "leases", "create", None),
        ("coordination.k8s.io", "leases", "get", lease),
        ("coordination.k8s.io", "leases", "update", lease),
        ("", "secrets", "get", secret),
        ("", "secrets", "update", secret),
    }
    binding = the(docs, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == the(docs, "ServiceAccount")["metadata"]["name"]
    assert flag(docs, "leader-election-namespace") == NAMESPACE


def webhooks(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    name = Settings().webhook_config_name
    out = {}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for webhook in the(docs, kind, name)["webhooks"] or []:
            out[webhook["name"]] = {**webhook, "kind": kind}
    return out


def webhook_table():
    """(integration, handler id, kind, apiGroup, resource, operations) of every webhook."""
    from tas.handlers import operator as op

    mutating, validating = "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"
    return [
        ("batch/job", op.SUSPEND_WEBHOOK, mutating, "batch", "jobs", ["CREATE"]),
        ("batch/job", op.VALIDATE_WEBHOOK, validating, "batch", "jobs", ["CREATE", "UPDATE"]),
        (
            "jobset.x-k8s.io/jobset",
            op.SUSPEND_JOBSET_WEBHOOK,
            mutating,
            "jobset.x-k8s.io",
            "jobsets",
            ["CREATE"],
        ),
        (
            "jobset.x-k8s.io/jobset",
            op.VALIDATE_JOBSET_WEBHOOK,
            validating,
            "jobset.x-k8s.io",
            "jobsets",
            ["CREATE", "UPDATE"],
        ),
        ("pod", op.MUTATE_POD_WEBHOOK, mutating, "", "pods", ["CREATE"]),
        ("pod", op.VALIDATE_POD_WEBHOOK, validating, "", "pods", ["CREATE", "UPDATE"]),
        (
            "statefulset",
            op.MUTATE_STATEFULSET_WEBHOOK,
            mutating,
            "apps",
            "statefulsets",
            ["CREATE", "UPDATE"],
        ),
        (
            "statefulset",
            op.VALIDATE_STATEFULSET_WEBHOOK,
            validating,
            "apps",
            "statefulsets",
            ["UPDATE"],
        ),
        (
            "leaderworkerset.x-k8s.io/leaderworkerset",
            op.MUTATE_LWS_WEBHOOK,
            mutating,
            "leaderworkerset.x-k8s.io",
            "leaderworkersets",
            ["CREATE", "UPDATE"],
        ),
        (
            "leaderworkerset.x-k8s.io/leaderworkerset",
            op.VALIDATE_LWS_WEBHOOK,
            validating,
            "leaderworkerset.x-k8s.io",
            "leaderworkersets",
            ["CREATE", "UPDATE"],
        ),
        *(
            row
            for name, group, resource in (
                ("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "trainjobs"),
                ("workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "appwrappers"),
                *((name, "ray.io", resource) for name, resource in RAY_KINDS.items()),
            )
            for row in (
                (name, f"suspend-queued-{resource}", mutating, group, resource, ["CREATE"]),
                (name, f"validate-{resource}", validating, group, resource, ["CREATE", "UPDATE"]),
            )
        ),
        *(
            row
            for name, resource in KUBEFLOW_KINDS.items()
            for row in (
                (
                    name,
                    f"suspend-queued-{resource}",
                    mutating,
                    "kubeflow.org",
                    resource,
                    ["CREATE"],
                ),
                (
                    name,
                    f"validate-{resource}",
                    validating,
                    "kubeflow.org",
                    resource,
                    ["CREATE", "UPDATE"],
                ),
            )
        ),
        (
            "deployment",
            op.MUTATE_DEPLOYMENT_WEBHOOK,
            mutating,
            "apps",
            "deployments",
            ["CREATE", "UPDATE"],
        ),
        (
            "deployment",
            op.VALIDATE_DEPLOYMENT_WEBHOOK,
            validating,
            "apps",
            "deployments",
            ["CREATE", "UPDATE"],
        ),
    ]


def test_the_chart_owns_complete_webhook_configurations() -> None:
    """The configurations are the chart's, complete: the operator only adds the CA bundle."""
    docs = render()
    service = the(docs, "Service")
    name = Settings().webhook_config_name
    hooks = webhooks(docs)
    table = webhook_table()
    assert set(hooks) == {f"{path}.{name}" for _, path, *_ in table}
    for _, path, kind, group, resource, operations in table:
        hook = hooks[f"{path}.{name}"]
        assert hook["kind"] == kind
        # The path is the handler's id: kopf routes the review to it by that.
        assert hook["clientConfig"] == {
            "url": None,
            "service": {
                "namespace": NAMESPACE,
                "name": service["metadata"]["name"],
                "port": service["spec"]["ports"][0]["port"],
                "path": f"/{path}",
            },
        }  # no caBundle: the operator puts it in, and `helm upgrade` leaves it
        [rule] = hook["rules"]
        assert (rule["apiGroups"], rule["resources"], rule["operations"]) == (
            [group],
            [resource],
            operations,
        )
        assert hook["failurePolicy"] == "Fail"  # as Kueue's: never let a queued object through
        assert hook["sideEffects"] == "None"
        assert 1 <= hook["timeoutSeconds"] <= 10
        # Only queued objects: a queued StatefulSet's and LeaderWorkerSet's pods carry the
        # label from their template (see the integrations' mutating webhooks).
        assert hook["objectSelector"] == {
            "matchExpressions": [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]
        }
        # Kueue's default managedJobsNamespaceSelector: never the system's or our own pods.
        assert hook["namespaceSelector"] == {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", NAMESPACE],
                }
            ]
        }


@pytest.mark.parametrize(
    "selector",
    [None, {"matchLabels": {"kueue": "on"}}, {"matchLabels": {}}],
    ids=["default", "labelled-namespaces", "every-namespace"],
)
def test_the_webhooks_and_the_controllers_manage_the_same_namespaces(selector) -> None:
    """One definition: the value (or, empty, Kueue's default for the release's namespace) is
    every webhook's namespaceSelector and the operator's --managed-jobs-namespace-selector,
    which its controllers apply; the operator reads the flag as the chart wrote it."""
    docs = render({"managedJobsNamespaceSelector": selector} if selector is not None else None)
    passed = json.loads(flag(docs, "managed-jobs-namespace-selector"))
    assert {json.dumps(h["namespaceSelector"]) for h in webhooks(docs).values()} == {
        json.dumps(passed)
    }
    if selector is not None:
        assert passed == selector
    parsed = build_parser().parse_args(["operator", *args_of(docs)])
    namespace = flag(docs, "leader-election-namespace")
    settings = Settings(
        leader_election_namespace=namespace,
        managed_jobs_namespace_selector=parse_label_selector(
            parsed.managed_jobs_namespace_selector
        ),
    )
    assert settings.managed_namespaces_selector == passed
    if selector is None:  # the chart's default is the operator's own default
        default = Settings(leader_election_namespace=namespace).managed_namespaces_selector
        assert passed == default


def test_a_bad_namespace_selector_fails_the_render() -> None:
    bad = {"matchExpressions": [{"key": "k", "operator": "Has"}]}
    result = helm("template", RELEASE, str(CHART), values={"managedJobsNamespaceSelector": bad})
    assert result.returncode != 0 and "managedJobsNamespaceSelector" in result.stderr


def test_the_leaderworkerset_bound_is_the_operators_unless_the_chart_sets_one() -> None:
    assert not [a for a in args_of(render()) if a.startswith("--max-leaderworkerset-replicas")]
    docs = render({"maxLeaderWorkerSetReplicas": 50})
    assert flag(docs, "max-leaderworkerset-replicas") == "50"
    parsed = build_parser().parse_args(["operator", *args_of(docs)])
    assert parsed.max_leaderworkerset_replicas == 50
    result = helm("template", RELEASE, str(CHART), values={"maxLeaderWorkerSetReplicas": 0})
    assert result.returncode != 0 and "maxLeaderWorkerSetReplicas" in result.stderr


def test_the_defragmentation_budget_is_the_operators_unless_the_chart_sets_one() -> None:
    assert not [a for a in args_of(render()) if a.startswith("--defragmentation-moves-per-hour")]
    for value in (0, 25):  # 0 is a budget (no moves), not "unset"
        docs = render({"defragmentationMovesPerHour": value})
        assert flag(docs, "defragmentation-moves-per-hour") == str(value)
        parsed = build_parser().parse_args(["operator", *args_of(docs)])
        assert parsed.defragmentation_moves_per_hour == value
    result = helm("template", RELEASE, str(CHART), values={"defragmentationMovesPerHour": -1})
    assert result.returncode != 0 and "defragmentationMovesPerHour" in result.stderr


@pytest.mark.parametrize(
    "integrations",
    [
        [],
        ["batch/job"],
        ["jobset.x-k8s.io/jobset"],
        ["statefulset"],
        ["leaderworkerset.x-k8s.io/leaderworkerset"],
        ["kubeflow.org/tfjob"],
        ["kubeflow.org/mpijob"],
        ["deployment"],
    ],
    ids=lambda v: ",".join(v) or "none",
)
def test_only_the_enabled_integrations_have_webhooks(integrations) -> None:
    """statefulset and leaderworkerset also need the pod webhooks (their pods are pod groups),
    and deployment (its pods are single pods)."""
    from tas.integrations import Framework, parse

    enabled = parse(integrations)
    name = Settings().webhook_config_name
    wanted = {
        f"{path}.{name}" for on, path, *_ in webhook_table() if enabled.enabled(Framework(on))
    }
    assert set(webhooks(render({"integrations": integrations}))) == wanted


def test_every_webhook_path_is_a_registered_kopf_handler() -> None:
    import kopf

    import tas.handlers.operator  # noqa: F401  (registers the handlers)

    ids = {h.id for h in kopf.get_default_registry()._webhooks.get_all_handlers()}
    assert {path for _, path, *_ in webhook_table()} <= ids


def test_an_operator_outside_the_cluster_is_called_by_url() -> None:
    docs = render({"webhook": {"url": "https://127.0.0.1:19443", "timeoutSeconds": 3}})
    for hook in webhooks(docs).values():
        path = hook["name"].split(".", 1)[0]
        # The other form explicitly null: an upgrade from one to the other removes it.
        assert hook["clientConfig"] == {"url": f"https://127.0.0.1:19443/{path}", "service": None}
        assert hook["timeoutSeconds"] == 3
    assert flag(docs, "webhook-host") == "127.0.0.1"  # the name the certificate must carry


def test_the_operator_can_neither_create_nor_delete_webhook_configurations() -> None:
    name = Settings().webhook_config_name
    granted = {(r, v, n) for g, r, v, n in rules(render()) if g.startswith("admission")}
    assert granted == {
        (r, v, name)
        for r in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        for v in ("get", "patch")
    }


# ---- the Deployment and the values -----------------------------------------------------------


def test_deployment_runs_replicas_without_privileges() -> None:
    docs = render()
    deployment = the(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 2  # a warm standby; the Lease picks the admitter
    assert deployment["spec"]["strategy"] == {"type": "RollingUpdate"}
    assert the(render({"replicas": 1}), "Deployment")["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    security = container(docs)["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]


def test_the_pod_is_hardened_as_a_production_cluster_expects() -> None:
    """The "restricted" Pod Security Standard and a read-only root, as the image's own user:
    the only writable place is /tmp, in memory, where the webhook certificate's files go."""
    from e2e.image import image_env

    docs = render()
    pod = the(docs, "Deployment")["spec"]["template"]["spec"]
    uid, gid = (int(n) for n in image_env()["IMAGE_USER"].split(":"))
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": gid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container(docs)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
    assert container(docs)["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {"medium": "Memory"}}]
    # No shell: the command is executed as it is, and names the image's entrypoint (on its PATH).
    command = container(docs)["command"]
    assert command[0] == image_env()["IMAGE_ENTRYPOINT"].rsplit("/", 1)[1]
    assert not {"sh", "bash", "/bin/sh", "-c"} & set(command)


def test_liveness_and_metrics_ports_match_their_flags() -> None:
    docs = render({"liveness": {"port": 9000}, "metrics": {"port": 9001}})
    liveness = urlsplit(flag(docs, "liveness"))
    assert (liveness.hostname, liveness.port, liveness.path) == ("0.0.0.0", 9000, "/healthz")
    probe = container(docs)["livenessProbe"]["httpGet"]
    assert probe == {"path": "/healthz", "port": "healthz"}
    assert port(docs, "healthz") == 9000
    assert flag(docs, "metrics-port") == "9001"
    assert port(docs, "metrics") == 9001


def test_default_image_is_what_make_image_builds() -> None:
    """The chart's appVersion is the package's, and the default image is the archive `make
    image` writes: named after image.env's title, tagged with the version."""
    from e2e.image import image_env

    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == tas.__version__
    expected = f"{image_env()['IMAGE_TITLE']}:{tas.__version__}"
    assert container(render())["image"] == expected == f"tas-operator:{tas.__version__}"


def test_values_override_image_resources_and_log_level() -> None:
    resources = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
    docs = render(
        {
            "image": {"repository": "registry.example/tas", "tag": "v9", "pullPolicy": "Always"},
            "resources": resources,
            "logLevel": "DEBUG",
        }
    )
    assert container(docs)["image"] == "registry.example/tas:v9"
    assert container(docs)["imagePullPolicy"] == "Always"
    assert container(docs)["resources"] == resources
    assert flag(docs, "log-level") == "DEBUG"


def test_an_unknown_log_level_fails_the_render() -> None:
    result = helm("template", RELEASE, str(CHART), values={"logLevel": "LOUD"})
    assert result.returncode != 0
    assert "logLevel" in result.stderr


# ---- CRDs ------------------------------------------------------------------------------------


def test_chart_crds_are_fresh() -> None:
    committed = {p.name: p.read_text() for p in CHART_CRDS.glob("*.yaml")}
    rendered = crdgen.render_all(chart=True)
    assert sorted(committed) == sorted(rendered), "run `make crds`"
    for name, text in rendered.items():
        assert committed[name] == text, f"{CHART_CRDS / name} is stale: run `make crds`"


def conversion_client(docs: list[dict]) -> dict[str, dict]:
    return {
        d["metadata"]["name"]: d["spec"]["conversion"]["webhook"]["clientConfig"]
        for d in docs
        if d["kind"] == "CustomResourceDefinition" and "conversion" in d["spec"]
    }


@pytest.mark.parametrize("url", [None, "https://127.0.0.1:9555"], ids=["service", "url"])
def test_rendered_crds_are_the_generated_ones(url: str | None) -> None:
    """The same CRDs, whose conversion webhook is the release's Service (or webhook.url)."""
    generated = sorted(
        (yaml.safe_load(text) for text in crdgen.render_all().values()),
        key=lambda d: d["metadata"]["name"],
    )
    docs = render({"webhook": {"url": url}} if url else None)
    rendered = sorted(
        (d for d in docs if d["kind"] == "CustomResourceDefinition"),
        key=lambda d: d["metadata"]["name"],
    )
    clients = conversion_client(rendered)
    assert sorted(clients) == sorted(crdgen_converted())
    for config in clients.values():
        if url:
            assert config == {"url": f"{url}/convert", "service": None}
        else:
            assert config == {
                "url": None,
                "service": {
                    "namespace": NAMESPACE,
                    "name": f"{FULLNAME}-webhook",
                    "port": 9443,
                    "path": "/convert",
                },
            }
    for doc in (*generated, *rendered):  # everything else is the same
        if "conversion" in doc["spec"]:
            doc["spec"]["conversion"]["webhook"]["clientConfig"] = None
    assert rendered == generated


def crdgen_converted() -> list[str]:
    return [f"{r.crd.plural}.{r.crd.group}" for r in RESOURCES if r.crd.conversion_webhook]


def test_make_crds_writes_the_chart_copy() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ncrds:", 1)[1].split("\n\n", 1)[0]
    assert "tas.api.crdgen" in recipe and "helm/tas-operator/templates/crds" in recipe


# ---- hostile tenants: the webhook port, availability, the NUMA CRD ------------------------------


def pod_labels(docs: list[dict[str, Any]]) -> dict[str, str]:
    return the(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]


def test_the_network_policy_admits_only_the_given_sources_to_the_webhook_port() -> None:
    sources = [{"ipBlock": {"cidr": "172.16.0.2/32"}}, {"namespaceSelector": {}}]
    docs = render({"webhook": {"port": 9555, "networkPolicy": {"from": sources}}})
    policy = the(docs, "NetworkPolicy")
    assert policy["metadata"]["namespace"] == NAMESPACE
    spec = policy["spec"]
    selector = spec["podSelector"]["matchLabels"]
    assert selector.items() <= pod_labels(docs).items()
    assert spec["policyTypes"] == ["Ingress"]
    by_port = {}
    for rule in spec["ingress"]:
        assert rule.get("ports"), f"a rule without ports opens every port: {rule}"
        for entry in rule["ports"]:
            by_port[entry["port"]] = rule.get("from")
    assert by_port[port(docs, "webhook")] == sources
    # The others stay as open as without a policy (Prometheus, the kubelet).
    assert by_port[port(docs, "metrics")] is None
    assert by_port[port(docs, "healthz")] is None
    assert set(by_port) == {port(docs, name) for name in ("webhook", "metrics", "healthz")}


def test_no_network_policy_when_disabled_or_when_no_source_is_known(tmp_path: Path) -> None:
    sources = [{"ipBlock": {"cidr": "10.0.0.1/32"}}]
    disabled = {"webhook": {"networkPolicy": {"enabled": False, "from": sources}}}
    assert not [d for d in render(disabled) if d["kind"] == "NetworkPolicy"]
    # `helm template` reads no cluster, so the API server's addresses are unknown: a policy
    # that let nobody in would refuse every queued object. None, and the notes say so.
    assert not [d for d in render() if d["kind"] == "NetworkPolicy"]
    assert "no NetworkPolicy guards the webhook port" in render_notes(tmp_path)
    guarded = render_notes(tmp_path / "guarded", {"webhook": {"networkPolicy": {"from": sources}}})
    assert "NetworkPolicy" not in guarded


def test_a_disruption_budget_keeps_a_webhook_server_through_a_drain() -> None:
    docs = render()
    budget = the(docs, "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1
    assert budget["selector"]["matchLabels"].items() <= pod_labels(docs).items()
    assert (
        the(render({"podDisruptionBudget": {"maxUnavailable": "50%"}}), "PodDisruptionBudget")[
            "spec"
        ]["maxUnavailable"]
        == "50%"
    )
    off = render({"podDisruptionBudget": {"enabled": False}})
    assert not [d for d in off if d["kind"] == "PodDisruptionBudget"]


@pytest.mark.parametrize(
    ("mode", "key"),
    [
        (None, "preferredDuringSchedulingIgnoredDuringExecution"),
        ("required", "requiredDuringSchedulingIgnoredDuringExecution"),
    ],
    ids=["default-preferred", "required"],
)
def test_replicas_spread_over_nodes(mode: str | None, key: str) -> None:
    docs = render({"antiAffinity": mode} if mode else None)
    anti = the(docs, "Deployment")["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert list(anti) == [key]
    [term] = anti[key]
    term = term.get("podAffinityTerm", term)
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= pod_labels(docs).items()


def test_anti_affinity_off_or_replaced_by_a_given_affinity() -> None:
    none = the(render({"antiAffinity": "none"}), "Deployment")["spec"]["template"]["spec"]
    assert "affinity" not in none
    given = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    pod = the(render({"affinity": given}), "Deployment")["spec"]["template"]["spec"]
    assert pod["affinity"] == given


def test_the_review_cap_flag_defaults_to_the_operators_own() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["webhook"]["maxReviewBytes"] == MAX_REVIEW_BYTES
    assert flag(render(), "webhook-max-review-bytes") == str(MAX_REVIEW_BYTES)
    docs = render({"webhook": {"maxReviewBytes": 1 << 20}})
    parsed = build_parser().parse_args([*container(docs)["command"][1:], *args_of(docs)])
    assert parsed.webhook_max_review_bytes == 1 << 20


@pytest.mark.parametrize(
    "values",
    [None, NUMA_GATE, {"featureGates": [{"name": "TASPlacementGroups", "enabled": True}]}],
    ids=["defaults", "numa", "placement-groups"],
)
def test_the_operator_can_create_no_crd(values: dict[str, Any] | None) -> None:
    """create cannot be limited to a name: with it the operator could install any CRD."""
    created = [
        rule
        for rule in rules(render(values))
        if rule[:3] == ("apiextensions.k8s.io", "customresourcedefinitions", "create")
    ]
    assert created == []


def numa_crds(values: dict[str, Any] | None) -> list[dict[str, Any]]:
    docs = render(values)
    return [
        d
        for d in docs
        if d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] == NUMA_CRD
    ]


def test_the_chart_installs_the_numa_crd_with_the_gate() -> None:
    [crd] = numa_crds(NUMA_GATE)  # `helm template` sees no cluster: as if it were absent
    upstream = yaml.safe_load((CHART / "files" / "noderesourcetopologies.yaml").read_text())
    assert crd["spec"] == upstream["spec"]  # unchanged from upstream
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert versions["v1alpha2"]["served"] and versions["v1alpha2"]["storage"]
    assert crd["spec"]["scope"] == "Cluster"
    from tas.integrations import NODE_RESOURCE_TOPOLOGY

    assert NODE_RESOURCE_TOPOLOGY.crd_name == NUMA_CRD
    assert NODE_RESOURCE_TOPOLOGY.api_version == f"{crd['spec']['group']}/v1alpha2"


@pytest.mark.parametrize(
    "values",
    [None, {**NUMA_GATE, "numaZones": {"installCRD": False}}],
    ids=["gate-off", "install-off"],
)
def test_no_numa_crd_without_the_gate_or_when_another_install_owns_it(values) -> None:
    assert numa_crds(values) == []


def test_the_charts_list_of_generic_job_kinds_is_the_registrys() -> None:
    """files/generic-jobs.yaml, which the webhooks and RBAC of the kinds held suspended are
    rendered from, is what `make chart-data` makes from the registry now."""
    from tas.integrations import chartdata

    assert (CHART / "files" / "generic-jobs.yaml").read_text() == chartdata.render(), (
        "run `make chart-data`"
    )


# ---- the topology view -----------------------------------------------------------------------


@pytest.mark.parametrize("address", [None, "0.0.0.0:9090", ""], ids=["default", "set", "off"])
def test_the_view_listens_where_the_values_say_and_no_service_exposes_it(address) -> None:
    docs = render({"view": {"address": address}} if address is not None else None)
    expected = Settings().view_address if address is None else address
    assert flag(docs, "view-address") == expected
    assert build_parser().parse_args(["operator", *args_of(docs)]).view_address == expected
    ports = {p["name"]: p["containerPort"] for p in container(docs)["ports"]}
    assert ports.get("view") == (int(expected.rsplit(":", 1)[1]) if expected else None)
    service_ports = {p["port"] for p in the(docs, "Service")["spec"]["ports"]}
    assert service_ports == {port(docs, "webhook")}


def test_a_view_address_without_a_port_fails_the_render() -> None:
    result = helm("template", RELEASE, str(CHART), values={"view": {"address": "localhost"}})
    assert result.returncode != 0
    assert "view" in result.stderr


# ---- fair sharing: Kueue's Configuration sections in a ConfigMap (--kueue-config) ----------

FAIR_VALUES = {
    "fairSharing": {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    },
    "admissionFairSharing": {"usageHalfLifeTime": "10m", "resourceWeights": {"cpu": 2}},
}


def test_without_fair_sharing_values_there_is_no_kueue_config() -> None:
    docs = render()
    assert not [d for d in docs if d["kind"] == "ConfigMap"]
    assert not [a for a in args_of(docs) if a.startswith("--kueue-config")]
    assert [v["name"] for v in the(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]] == [
        "tmp"
    ]


@pytest.mark.parametrize(
    "values",
    [FAIR_VALUES, {"fairSharing": FAIR_VALUES["fairSharing"]},
     {"admissionFairSharing": FAIR_VALUES["admissionFairSharing"]}],
    ids=["both", "fairSharing", "admissionFairSharing"],
)  # fmt: skip
def test_fair_sharing_values_reach_the_operator_as_a_kueue_configuration(values) -> None:
    from tas.api import fairsharing

    docs = render(values)
    config_map = the(docs, "ConfigMap", f"{RELEASE}-tas-operator-kueue-config")
    document = yaml.safe_load(config_map["data"]["config.yaml"])
    assert document["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert {k: v for k, v in document.items() if k not in ("apiVersion", "kind")} == values
    parsed = fairsharing.parse(document)  # the operator reads it without complaint
    assert (parsed.fair_sharing is not None) == ("fairSharing" in values)
    assert (parsed.admission_fair_sharing is not None) == ("admissionFairSharing" in values)
    path = flag(docs, "kueue-config")
    pod = the(docs, "Deployment")["spec"]["template"]
    mounts = {m["name"]: m["mountPath"] for m in container(docs)["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert path == f"{mounts['kueue-config']}/config.yaml"
    assert volumes["kueue-config"]["configMap"]["name"] == config_map["metadata"]["name"]
    assert pod["metadata"]["annotations"]["checksum/kueue-config"]
    parsed_args = build_parser().parse_args(["operator", *args_of(docs)])
    assert parsed_args.kueue_config == path


@pytest.mark.parametrize(
    "values",
    [
        {"fairSharing": {"preemptionStrategies": ["Nope"]}},
        {"fairSharing": {}},
        {"fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]}},
        {"admissionFairSharing": {"resourceWeights": {"cpu": -1}}},
    ],
    ids=["unknown strategy", "no strategies", "v1beta1 enable", "negative weight"],
)
def test_bad_fair_sharing_values_are_refused(values) -> None:
    result = helm("template", RELEASE, str(CHART), values=values)
    assert result.returncode != 0
    assert next(iter(values)) in result.stderr
