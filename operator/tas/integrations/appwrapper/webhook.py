"""A queued AppWrapper's webhooks, as Kueue's appwrapper_controller.go sets them up: jobframework's
BaseWebhook for APP_WRAPPER.

Mutating, at creation: suspended until admitted. Validating, at creation and update: the
topology annotations of every wrapped pod template.
"""

from functools import partial

from tas.integrations.appwrapper.controller import APP_WRAPPER
from tas.jobframework import webhook

mutate = partial(webhook.suspend, APP_WRAPPER)
validate = partial(webhook.validate, APP_WRAPPER)
