"""A queued batch/v1 Job's webhooks (Kueue's pkg/controller/jobs/job/job_webhook.go): jobframework's, for JOB.

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of its pod templates.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.job.controller import JOB
from tas.jobframework import webhook


def mutate(obj: Mapping) -> dict:
    return webhook.suspend(JOB, obj)


def validate(obj: Mapping, **gates: bool) -> list[str]:
    return webhook.validate(JOB, obj, **gates)
