"""A queued batch/v1 Job's webhooks, as Kueue's pkg/controller/jobs/job/job_webhook.go:
jobframework's BaseWebhook for JOB.

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of its pod templates.
"""

from functools import partial

from tas.integrations.job.controller import JOB
from tas.jobframework import webhook

mutate = partial(webhook.suspend, JOB)
validate = partial(webhook.validate, JOB)
