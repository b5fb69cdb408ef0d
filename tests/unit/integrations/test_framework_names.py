"""`--integrations`: Kueue's framework names, the kinds they imply, the flag over the
environment."""

from __future__ import annotations

import pytest

from tas import integrations


def test_integrations_are_kueues_framework_names_and_imply_pod():
    enabled = integrations.parse("statefulset")
    assert enabled.enabled(integrations.Framework.STATEFULSET)
    assert enabled.enabled(integrations.Framework.POD)  # its pods are a pod group
    assert not enabled.enabled(integrations.Framework.JOB)
    assert integrations.defaults().names() == ["batch/job"]  # Kueue's Configuration default
    assert integrations.parse(" batch/job , pod ").names() == ["batch/job", "pod"]
    with pytest.raises(integrations.IntegrationsError, match=r"'kubeflow\.org/mxjob'"):
        integrations.parse("batch/job,kubeflow.org/mxjob")  # no Kueue v0.17 name


def test_the_flag_wins_over_the_environment():
    env = {"TAS_INTEGRATIONS": "pod"}
    assert integrations.from_env_and_flag(None, env).names() == ["pod"]
    assert integrations.from_env_and_flag("batch/job", env).names() == ["batch/job"]
    assert integrations.from_env_and_flag(None, {}).names() == ["batch/job"]
