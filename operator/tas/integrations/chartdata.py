"""The chart's list of GenericJob kinds (helm/tas-operator/files/generic-jobs.yaml), made from
the registry: the chart renders each enabled kind's two webhooks and its RBAC rules from it.
`make chart-data` writes it; a unit test holds it in step with the registry."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tas.integrations.registry import GENERIC_JOBS, GenericJobKind

HEADER = "# Made from operator/tas/integrations/registry.py by `make chart-data`: do not edit.\n"


def row(kind: GenericJobKind) -> dict:
    resource = kind.resource
    return {
        "framework": str(kind.framework),
        "kind": resource.kind,
        "group": resource.group,
        "version": resource.version,
        "resource": resource.plural,
        "suspend": kind.suspend_webhook,
        "validate": kind.validate_webhook,
        "patchesStatus": kind.patches_status,
        "children": [
            {"group": c.resource.group, "resource": c.resource.plural} for c in kind.children
        ],
        "lookups": [
            {"group": r.group, "resource": r.plural}
            for r in (kind.lookup.resources if kind.lookup else ())
        ],
    }


def render() -> str:
    return HEADER + yaml.safe_dump([row(k) for k in GENERIC_JOBS], sort_keys=False)


def main(argv: list[str]) -> int:
    [path] = argv
    Path(path).write_text(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
