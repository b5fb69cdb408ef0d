"""A queued PyTorchJob's webhooks, as Kueue's BaseWebhook for it
(pkg/controller/jobs/kubeflow/jobs/pytorchjob/pytorchjob_controller.go, kubeflowjob's ValidateOnCreate).

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of every replica type's pod template.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.pytorchjob.controller import PYTORCH_JOB


def mutate(obj: Mapping) -> dict:
    return PYTORCH_JOB.suspend_patch(obj)


def validate(obj: Mapping) -> list[str]:
    return PYTORCH_JOB.validate(obj)
