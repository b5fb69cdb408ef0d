"""Which kinds the operator admits: the built-in integrations' names and `--integrations`, with
each kind's group, version and resource (the API paths the operator reads and writes). The kinds
held suspended until admitted are registered in tas.integrations.registry, whose names
`parse` takes as `registered`.

Handed on as `tas.integrations`, whose folders hold each kind's controller and webhook
(docs/integrations.md). It is defined down here, beside the API, because the settings
(config.py) and jobframework read it, and they stand below the integrations.

Names are Kueue's `integrations.frameworks` entries, verbatim. As in Kueue, StatefulSet and
LeaderWorkerSet enable the pod integration implicitly: their pods are admitted as pod groups.

A kind served by a CRD (JobSet, LeaderWorkerSet) may not be installed: the operator logs it
once and handles the kind when its CRD appears (see runtime/runtime.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

ENV_VAR = "TAS_INTEGRATIONS"


class Framework(StrEnum):
    JOB = "batch/job"
    JOBSET = "jobset.x-k8s.io/jobset"
    LEADERWORKERSET = "leaderworkerset.x-k8s.io/leaderworkerset"
    POD = "pod"
    STATEFULSET = "statefulset"
    # The Kubeflow training jobs (training-operator v1) and MPIJob (mpi-operator v2beta1).
    PYTORCHJOB = "kubeflow.org/pytorchjob"
    TFJOB = "kubeflow.org/tfjob"
    XGBOOSTJOB = "kubeflow.org/xgboostjob"
    PADDLEJOB = "kubeflow.org/paddlejob"
    JAXJOB = "kubeflow.org/jaxjob"
    MPIJOB = "kubeflow.org/mpijob"
    TRAINJOB = "trainer.kubeflow.org/trainjob"
    APPWRAPPER = "workload.codeflare.dev/appwrapper"
    DEPLOYMENT = "deployment"
    RAYJOB = "ray.io/rayjob"
    RAYCLUSTER = "ray.io/raycluster"
    RAYSERVICE = "ray.io/rayservice"


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    crd: bool = False  # served by a CustomResourceDefinition that may be missing
    namespaced: bool = True  # False: cluster-scoped (listed in every namespace at once)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    def collection(self, namespace: str | None = None) -> str:
        """The API path of the collection, in every namespace or in one."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return (
            f"{prefix}/namespaces/{namespace}/{self.plural}"
            if namespace
            else f"{prefix}/{self.plural}"
        )

    def path(self, namespace: str, name: str) -> str:
        return f"{self.collection(namespace)}/{name}"


JOB = Resource("batch", "v1", "jobs", "Job")
JOBSET = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", crd=True)
LEADERWORKERSET = Resource(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", crd=True
)
POD = Resource("", "v1", "pods", "Pod")
# Not an integration: the nodes' NUMA zones (gate TASNUMAZones), published by node agents.
NODE_RESOURCE_TOPOLOGY = Resource(
    "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", "NodeResourceTopology", crd=True
)
STATEFULSET = Resource("apps", "v1", "statefulsets", "StatefulSet")
PYTORCHJOB = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", crd=True)
TFJOB = Resource("kubeflow.org", "v1", "tfjobs", "TFJob", crd=True)
XGBOOSTJOB = Resource("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob", crd=True)
PADDLEJOB = Resource("kubeflow.org", "v1", "paddlejobs", "PaddleJob", crd=True)
JAXJOB = Resource("kubeflow.org", "v1", "jaxjobs", "JAXJob", crd=True)
MPIJOB = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", crd=True)
TRAINJOB = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", crd=True)
APPWRAPPER = Resource("workload.codeflare.dev", "v1beta2", "appwrappers", "AppWrapper", crd=True)
DEPLOYMENT = Resource("apps", "v1", "deployments", "Deployment")
RAYJOB = Resource("ray.io", "v1", "rayjobs", "RayJob", crd=True)
RAYCLUSTER = Resource("ray.io", "v1", "rayclusters", "RayCluster", crd=True)
RAYSERVICE = Resource("ray.io", "v1", "rayservices", "RayService", crd=True)

RESOURCES: Mapping[Framework, Resource] = {
    Framework.JOB: JOB,
    Framework.JOBSET: JOBSET,
    Framework.LEADERWORKERSET: LEADERWORKERSET,
    Framework.POD: POD,
    Framework.STATEFULSET: STATEFULSET,
    Framework.PYTORCHJOB: PYTORCHJOB,
    Framework.TFJOB: TFJOB,
    Framework.XGBOOSTJOB: XGBOOSTJOB,
    Framework.PADDLEJOB: PADDLEJOB,
    Framework.JAXJOB: JAXJOB,
    Framework.MPIJOB: MPIJOB,
    Framework.TRAINJOB: TRAINJOB,
    Framework.APPWRAPPER: APPWRAPPER,
    Framework.DEPLOYMENT: DEPLOYMENT,
    Framework.RAYJOB: RAYJOB,
    Framework.RAYCLUSTER: RAYCLUSTER,
    Framework.RAYSERVICE: RAYSERVICE,
}
# Kueue's ImplicitlyEnabledFrameworkNames: their pods are pod groups.
IMPLIES: Mapping[Framework, tuple[Framework, ...]] = {
    Framework.STATEFULSET: (Framework.POD,),
    Framework.LEADERWORKERSET: (Framework.POD,),
    Framework.DEPLOYMENT: (Framework.POD,),  # its pods are single pods
}
# Without the flag: Kueue's own default (its Configuration's integrations.frameworks).
DEFAULT = (Framework.JOB,)


class IntegrationsError(ValueError):
    """An unknown framework name."""


@dataclass(frozen=True)
class Integrations:
    """The frameworks asked for; `enabled` also answers for those enabled implicitly."""

    frameworks: frozenset[str]  # Framework members, and the names of registered kinds

    def enabled(self, framework: str) -> bool:
        return framework in self.frameworks or any(
            framework in IMPLIES.get(Framework(f), ()) for f in self.frameworks if f in _BUILT_IN
        )

    def names(self) -> list[str]:
        order = sorted(self.frameworks, key=lambda n: (n not in _BUILT_IN, _BUILT_IN.get(n, 0), n))
        return [str(n) for n in order]


_BUILT_IN = {str(f): i for i, f in enumerate(Framework)}


def parse(spec: str | Iterable[str], registered: Iterable[str] = ()) -> Integrations:
    """`batch/job,pod` (or a list of names) as Kueue's integrations.frameworks. `registered`:
    the names of the kinds registered above this module (tas.integrations.registry), which
    `tas.integrations.parse` passes."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [item.strip() for item in items if item.strip()]
    known = [*_BUILT_IN, *(n for n in registered if n not in _BUILT_IN)]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise IntegrationsError(
            f"unknown integration(s) {', '.join(map(repr, unknown))} (known: {', '.join(known)})"
        )
    return Integrations(frozenset(Framework(n) if n in _BUILT_IN else n for n in names))


def defaults() -> Integrations:
    return Integrations(frozenset(DEFAULT))


def from_env_and_flag(
    flag: str | None, environ: Mapping[str, str] = os.environ, registered: Iterable[str] = ()
) -> Integrations:
    """The flag if given, else TAS_INTEGRATIONS, else Kueue's default (batch/job)."""
    if flag is not None:
        return parse(flag, registered)
    if ENV_VAR in environ:
        return parse(environ[ENV_VAR], registered)
    return defaults()
