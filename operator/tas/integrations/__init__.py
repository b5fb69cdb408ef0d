"""The integrations: one folder per kind (job, jobset, leaderworkerset, pod, statefulset), each
with its controller and webhook on jobframework; docs/integrations.md says how to add one.

The Kueue framework names and kinds of the built-in integrations are api/frameworks.py, handed
on here; the kinds held suspended until admitted are registered in registry.py, one row each,
and `parse` and `from_env_and_flag` know their names too.
"""

import os
from collections.abc import Iterable, Mapping

from tas.api.frameworks import DEFAULT as DEFAULT
from tas.api.frameworks import ENV_VAR as ENV_VAR
from tas.api.frameworks import IMPLIES as IMPLIES
from tas.api.frameworks import JOB as JOB
from tas.api.frameworks import JOBSET as JOBSET
from tas.api.frameworks import LEADERWORKERSET as LEADERWORKERSET
from tas.api.frameworks import NODE_RESOURCE_TOPOLOGY as NODE_RESOURCE_TOPOLOGY
from tas.api.frameworks import POD as POD
from tas.api.frameworks import RESOURCES as RESOURCES
from tas.api.frameworks import STATEFULSET as STATEFULSET
from tas.api.frameworks import Framework as Framework
from tas.api.frameworks import Integrations as Integrations
from tas.api.frameworks import IntegrationsError as IntegrationsError
from tas.api.frameworks import Resource as Resource
from tas.api.frameworks import defaults as defaults
from tas.api.frameworks import from_env_and_flag as _from_env_and_flag
from tas.api.frameworks import parse as _parse
from tas.integrations import registry


def parse(spec: str | Iterable[str]) -> Integrations:
    return _parse(spec, registry.names())


def from_env_and_flag(flag: str | None, environ: Mapping[str, str] = os.environ) -> Integrations:
    return _from_env_and_flag(flag, environ, registry.names())
