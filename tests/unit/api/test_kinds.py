"""Our kinds as tas.api.kinds names them (what the storage migration reads, without the models)
are exactly the CRD models' kinds, group, plural, scope and stored version."""

from __future__ import annotations

import subprocess
import sys

from tas.api import kinds
from tas.api.models import RESOURCES
from tas.runtime import migrate


def test_every_crd_model_is_named_from_the_kinds_and_none_is_missing():
    assert sorted(r.crd.resource.crd_name for r in RESOURCES) == sorted(
        k.crd_name for k in kinds.ALL
    )
    assert all(r.crd.resource in kinds.ALL for r in RESOURCES)


def test_each_kind_agrees_with_its_model():
    for model in RESOURCES:
        resource = model.crd.resource
        assert resource.kind == model.model_fields["kind"].default
        assert resource.version in model.crd.versions  # the stored version is served
        assert model.model_fields["api_version"].default == resource.api_version
        assert resource.crd is True


def test_the_migration_targets_every_crd_in_its_stored_version():
    targets = {t.crd: t for t in migrate.targets()}
    assert set(targets) == {f"{r.crd.plural}.{r.crd.group}" for r in RESOURCES}
    for model in RESOURCES:
        target = targets[f"{model.crd.plural}.{model.crd.group}"]
        assert target.storage_version == model.crd.storage_version
        assert target.collection == (
            f"/apis/{model.crd.group}/{model.crd.storage_version}/{model.crd.plural}"
        )


def test_the_storage_migration_builds_no_crd_models():
    """Building them takes about 0.7 s of CPU, which every restart would pay for nothing."""
    code = (
        "import sys, tas.runtime.migrate, tas.runtime.runtime; "
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'tas.api.models'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
