"""Generate the CustomResourceDefinitions from the pydantic models.

    python -m tas.api.crdgen OUTDIR [--chart CHART_CRD_DIR]

writes one file per CRD, `<group>_<plural>.yaml`, into OUTDIR, and the chart's copies into
CHART_CRD_DIR. Output is deterministic (sorted keys), so a test can compare it with the
committed files. Each served version has the schema of its own model (`models.model_for`).

A kind whose versions differ is converted by the operator's conversion webhook: the plain CRDs
name the chart's default Service, the chart's CRDs the release's (or `webhook.url`). The CA
bundle is put in by the operator, as for the admission webhooks.

Pydantic's JSON schema is turned into a structural schema as the apiserver wants it:
references are inlined, `title` and Python defaults are dropped (a server-side default would
rewrite stored objects; the few defaults Kueue itself has are declared with `schema(default=)`),
`Optional` loses its null branch (absent fields are omitted, never null), and every
node keeps an explicit `type`.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import yaml

from tas.api.models import RESOURCES, model_for
from tas.api.models.common import CRD_DEFAULT, CRD_REQUIRED, KueueResource

# The conversion webhook's path (the operator serves it beside the admission webhooks) and the
# Service the plain CRDs name: the chart's, installed with its defaults.
CONVERSION_PATH = "convert"
DEFAULT_SERVICE = {"namespace": "tas-system", "name": "tas-operator-webhook", "port": 9443}
# In the chart's copies, the clientConfig comes from the chart's webhook helper.
_CHART_CLIENT_CONFIG = "__chart_client_config__"
CHART_CLIENT_CONFIG = (
    '{{- include "tas-operator.webhookClientConfig" '
    f'(dict "root" . "path" "{CONVERSION_PATH}") | trim | nindent 8 }}}}'
)

HEADER = "# Generated from tas.api.models by `python -m tas.api.crdgen` (make crds). Do not edit.\n"

# Keys a CRD schema may carry; anything else pydantic emits (title, examples...) is dropped.
_ALLOWED_KEYS = {
    "type",
    "format",
    "description",
    "properties",
    "additionalProperties",
    "items",
    "required",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "anyOf",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
}


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    """Inline every $ref; keys next to a $ref (a field's description, rules) win over the
    referenced model's, except that validation rules from both are kept."""
    if isinstance(node, list):
        return [_resolve(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        target = _resolve(copy.deepcopy(defs[name]), defs)
        siblings = {k: _resolve(v, defs) for k, v in node.items() if k != "$ref"}
        rules = target.get("x-kubernetes-validations", []) + siblings.pop(
            "x-kubernetes-validations", []
        )
        merged = {**target, **siblings}
        if rules:
            merged["x-kubernetes-validations"] = rules
        return merged
    return {k: _resolve(v, defs) for k, v in node.items() if k != "$defs"}


def _drop_null_branch(node: dict[str, Any]) -> dict[str, Any]:
    """`X | None` arrives as anyOf [X, null]: keep X, with the outer keys on top."""
    branches = node.get("anyOf")
    if not branches:
        return node
    rest = [b for b in branches if b.get("type") != "null"]
    if len(rest) == len(branches):
        return node
    outer = {k: v for k, v in node.items() if k != "anyOf"}
    if len(rest) == 1:
        inner = dict(rest[0])
        rules = inner.pop("x-kubernetes-validations", []) + outer.pop(
            "x-kubernetes-validations", []
        )
        merged = {**inner, **outer}
        if rules:
            merged["x-kubernetes-validations"] = rules
        return merged
    return {**outer, "anyOf": rest}


def _clean(node: Any) -> Any:
    """Make one resolved pydantic schema node structural, recursively."""
    if not isinstance(node, dict):
        return node
    node = _drop_null_branch(node)
    if "const" in node:  # a single-value Literal
        node = {**node, "enum": [node.pop("const")]}
    crd_default = node.get(CRD_DEFAULT)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _ALLOWED_KEYS or key == "default":
            continue
        if key == "properties":
            out[key] = {name: _clean(prop) for name, prop in value.items()}
        elif key in ("items", "additionalProperties"):
            if isinstance(value, dict):
                out[key] = _clean(value)
        elif key == "anyOf":
            out[key] = [_clean(branch) for branch in value]
        elif key == "description":
            out[key] = " ".join(value.split())  # docstrings wrap; kubectl explain rewraps
        else:
            out[key] = value
    if crd_default is not None:
        out["default"] = crd_default
    if "properties" in out:
        out.pop("additionalProperties", None)  # pruning already drops unknown keys
        out["type"] = "object"
        required = set(out.get("required", []))
        required |= {n for n, p in node["properties"].items() if p.get(CRD_REQUIRED)}
        if required:
            out["required"] = sorted(required)
        else:
            out.pop("required", None)
    if out.get("type") == "null":
        raise ValueError(f"a schema node is only null: {node}")
    return out


def _root_schema(resource: type[KueueResource]) -> dict[str, Any]:
    raw = resource.model_json_schema(by_alias=True, mode="validation")
    root = _clean(_resolve(raw, raw.get("$defs", {})))
    props = root["properties"]
    # The apiserver owns metadata's schema; apiVersion and kind are plain strings.
    props["metadata"] = {"type": "object"}
    props["apiVersion"] = {"type": "string", "description": "Versioned schema of this object."}
    props["kind"] = {"type": "string", "description": "REST resource this object represents."}
    root["required"] = [r for r in root.get("required", []) if r not in ("apiVersion", "kind")]
    if not root["required"]:
        root.pop("required")
    return root


def _version(resource: type[KueueResource], name: str) -> dict[str, Any]:
    """One entry of spec.versions, from the model that version is served with."""
    model = model_for(resource, name)
    info = model.crd
    version: dict[str, Any] = {
        "name": name,
        "served": True,
        "storage": name == info.storage_version,
        "schema": {"openAPIV3Schema": _root_schema(model)},
    }
    if info.status_subresource:
        version["subresources"] = {"status": {}}
    if info.printer_columns:
        version["additionalPrinterColumns"] = [
            {
                "name": col.name,
                "type": col.type,
                "jsonPath": col.json_path,
                **({"description": col.description} if col.description else {}),
                **({"priority": col.priority} if col.priority else {}),
            }
            for col in info.printer_columns
        ]
    return version


def _conversion(chart: bool) -> dict[str, Any]:
    client_config: Any = _CHART_CLIENT_CONFIG
    if not chart:  # url null: applied over a CRD the chart pointed at a URL, it goes
        client_config = {"service": {**DEFAULT_SERVICE, "path": "/" + CONVERSION_PATH}, "url": None}
    return {
        "strategy": "Webhook",
        "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
    }


def crd_for(resource: type[KueueResource], *, chart: bool = False) -> dict[str, Any]:
    """The CustomResourceDefinition of one resource model, as a dict."""
    info = resource.crd
    kind = resource.model_fields["kind"].default
    versions = [_version(resource, name) for name in info.versions]
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": info.plural,
        "singular": kind.lower(),
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        # `helm uninstall` keeps the CRDs, and with them the users' Topologies, queues and
        # Workloads, as Kueue's chart does; deleting them is a deliberate `kubectl delete crd`.
        "metadata": {
            "name": f"{info.plural}.{info.group}",
            "annotations": {"helm.sh/resource-policy": "keep"},
        },
        "spec": {
            "group": info.group,
            "names": names,
            "scope": info.scope,
            "versions": versions,
            **({"conversion": _conversion(chart)} if info.conversion_webhook else {}),
        },
    }


def filename(resource: type[KueueResource]) -> str:
    return f"{resource.crd.group}_{resource.crd.plural}.yaml"


def render(resource: type[KueueResource], *, chart: bool = False) -> str:
    body = yaml.safe_dump(
        crd_for(resource, chart=chart), sort_keys=True, default_flow_style=False, width=100
    )
    body = body.replace(" " + _CHART_CLIENT_CONFIG, "\n" + CHART_CLIENT_CONFIG)
    return HEADER + "---\n" + body


def render_all(*, chart: bool = False) -> dict[str, str]:
    """File name -> YAML text, for every CRD we serve (the chart's copies with `chart`)."""
    return {filename(r): render(r, chart=chart) for r in RESOURCES}


def write(outdir: Path, *, chart: bool = False) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_all(chart=chart).items():
        path = outdir / name
        path.write_text(text)
        written.append(path)
    return written


USAGE = "usage: python -m tas.api.crdgen OUTDIR [--chart CHART_CRD_DIR]"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--chart"):
        print(USAGE, file=sys.stderr)
        return 2
    paths = write(Path(args[0]))
    if len(args) == 3:
        paths += write(Path(args[2]), chart=True)
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
