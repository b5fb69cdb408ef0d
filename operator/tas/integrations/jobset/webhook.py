"""A queued JobSet's webhooks (Kueue's pkg/controller/jobs/jobset/jobset_webhook.go): jobframework's, for JOB_SET.

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of its pod templates.
"""

from __future__ import annotations

from collections.abc import Mapping

from tas.integrations.jobset.controller import JOB_SET
from tas.jobframework import webhook


def mutate(obj: Mapping) -> dict:
    return webhook.suspend(JOB_SET, obj)


def validate(obj: Mapping, **gates: bool) -> list[str]:
    return webhook.validate(JOB_SET, obj, **gates)
