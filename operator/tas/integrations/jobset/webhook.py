"""A queued JobSet's webhooks, as Kueue's pkg/controller/jobs/jobset/jobset_webhook.go:
jobframework's BaseWebhook for JOB_SET.

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of its pod templates.
"""

from functools import partial

from tas.integrations.jobset.controller import JOB_SET
from tas.jobframework import webhook

mutate = partial(webhook.suspend, JOB_SET)
validate = partial(webhook.validate, JOB_SET)
