"""A queued TFJob's webhooks, as Kueue's BaseWebhook for it
(pkg/controller/jobs/kubeflow/jobs/tfjob/tfjob_controller.go, kubeflowjob's ValidateOnCreate).

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of every replica type's pod template.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.tfjob.controller import TF_JOB


def mutate(obj: Mapping) -> dict:
    return TF_JOB.suspend_patch(obj)


def validate(obj: Mapping) -> list[str]:
    return TF_JOB.validate(obj)
