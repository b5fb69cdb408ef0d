"""A queued JAXJob's webhooks, as Kueue's BaseWebhook for it
(pkg/controller/jobs/kubeflow/jobs/jaxjob/jaxjob_controller.go, kubeflowjob's ValidateOnCreate).

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of every replica type's pod template.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.jaxjob.controller import JAX_JOB


def mutate(obj: Mapping) -> dict:
    return JAX_JOB.suspend_patch(obj)


def validate(obj: Mapping) -> list[str]:
    return JAX_JOB.validate(obj)
