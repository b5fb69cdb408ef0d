"""The kinds held suspended until admitted (Kueue's GenericJob), one row each: what the runtime,
the watches, the webhooks and the chart read to wire a kind. Adding such a kind is its folder
and one row of `GENERIC_JOBS` (docs/integrations.md).

A row names the kind's Kueue framework name, its GenericJob and its webhook module (`mutate`,
`validate`). Its webhook paths follow one rule, `suspend-queued-<plural>` and
`validate-<plural>`; batch/v1 Job keeps the validating path it always had. `children` are the
objects the kind's controller makes that hold its pods (a JobSet's Jobs): the operator records
which of them a queued object controls, so that their pods are its Workload's. `lookup` names
the objects its pod sets are built from (a TrainJob's runtimes), which the runtime watches and
caches for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType

from tas.api.constants import QUEUE_NAME_LABEL
from tas.api.frameworks import JOB as JOB_RESOURCE
from tas.api.frameworks import JOBSET as JOBSET_RESOURCE
from tas.api.frameworks import PYTORCHJOB as PYTORCHJOB_RESOURCE
from tas.api.frameworks import RAYCLUSTER as RAYCLUSTER_RESOURCE
from tas.api.frameworks import Framework, Integrations, Resource
from tas.integrations.appwrapper import webhook as appwrapper_webhook
from tas.integrations.appwrapper.controller import APP_WRAPPER, APPWRAPPER_LABEL
from tas.integrations.jaxjob import webhook as jaxjob_webhook
from tas.integrations.jaxjob.controller import JAX_JOB
from tas.integrations.job import webhook as job_webhook
from tas.integrations.job.controller import JOB
from tas.integrations.jobset import webhook as jobset_webhook
from tas.integrations.jobset.controller import JOB_SET
from tas.integrations.mpijob import webhook as mpijob_webhook
from tas.integrations.mpijob.controller import MPI_JOB
from tas.integrations.paddlejob import webhook as paddlejob_webhook
from tas.integrations.paddlejob.controller import PADDLE_JOB
from tas.integrations.pytorchjob import webhook as pytorchjob_webhook
from tas.integrations.pytorchjob.controller import PYTORCH_JOB
from tas.integrations.raycluster import webhook as raycluster_webhook
from tas.integrations.raycluster.controller import RAY_CLUSTER
from tas.integrations.rayjob import webhook as rayjob_webhook
from tas.integrations.rayjob.controller import RAY_JOB
from tas.integrations.rayservice import webhook as rayservice_webhook
from tas.integrations.rayservice.controller import RAY_SERVICE
from tas.integrations.tfjob import webhook as tfjob_webhook
from tas.integrations.tfjob.controller import TF_JOB
from tas.integrations.trainjob import webhook as trainjob_webhook
from tas.integrations.trainjob.controller import RUNTIMES, TRAIN_JOB, named_runtime, reading
from tas.integrations.xgboostjob import webhook as xgboostjob_webhook
from tas.integrations.xgboostjob.controller import XGBOOST_JOB
from tas.jobframework.interface import GenericJob
from tas.jobframework.owners import ManagedOwners

# Kueue's label on every Job a JobSet makes.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# KubeRay's label on what it makes for a RayJob or RayService (its RayCluster, a RayJob's
# submitter Job): the kind it was made for.
RAY_ORIGIN_LABEL = "ray.io/originated-from-crd"
# mpi-operator's one label on an MPIJob's launcher Job (`app: <mpijob>`); the launcher's pod is
# controlled by that Job, the Job by the MPIJob.
MPIJOB_LAUNCHER_LABEL = "app"


@dataclass(frozen=True)
class Children:
    """Objects of `resource`, found by the label `selector` (server side), that a parent's
    controller makes and controls (an ownerReference with controller: true)."""

    resource: Resource
    selector: str
    # Their controller's kind when it is not an enabled managed one (a TrainJob's JobSet's
    # Jobs, with the JobSet integration off): that link is recorded too.
    controlled_by: Resource | None = None

    @property
    def owners(self) -> ManagedOwners:
        return ManagedOwners.of((self.controlled_by,) if self.controlled_by else ())


# An object a kind's pod sets are built from: (resource, namespace or None, name).
ObjectRef = tuple[Resource, str | None, str]


@dataclass(frozen=True)
class Lookup:
    """Objects a kind's pod sets are built from (a TrainJob's runtimes): watched read-only
    (no polling), cached by the runtime, and the kind's objects naming one synced again when
    it appears or changes."""

    resources: tuple[Resource, ...]
    named_by: Callable[[Mapping], ObjectRef]  # the one a queued object names
    bind: Callable[[Callable[[ObjectRef], Mapping | None]], GenericJob]  # the job reading them


@dataclass(frozen=True)
class GenericJobKind:
    framework: str  # Kueue's framework name, as --integrations takes it
    job: GenericJob
    webhook: ModuleType  # the kind's webhook.py: mutate(obj) -> patch, validate(obj) -> reasons
    children: tuple[Children, ...] = ()
    concurrency: int = 4  # of its serial worker
    patches_status: bool = False  # resets status.startTime to restart after an eviction (Job)
    validate_path: str | None = None  # only where an older path must be kept
    lookup: Lookup | None = None  # webhook.validate(obj, the looked-up object or None)
    validate_reads_old: bool = False  # its webhook's validate takes old=<the object before UPDATE>
    mutate_reads_tas: bool = False  # its webhook's mutate takes tas=<TopologyAwareScheduling on>

    @property
    def resource(self) -> Resource:
        return self.job.resource

    @property
    def name(self) -> str:
        """Its watch's, worker's and reconciler's name: the resource's plural."""
        return self.resource.plural

    @property
    def suspend_webhook(self) -> str:
        return f"suspend-queued-{self.resource.plural}"

    @property
    def validate_webhook(self) -> str:
        return self.validate_path or f"validate-{self.resource.plural}"

    def validate(
        self, obj: Mapping, old: Mapping | None, looked_up: Mapping | None = None
    ) -> list[str]:
        """The validating webhook's reasons to refuse (`old`: on UPDATE, the object before;
        `looked_up`: with a lookup, the object it names, as the cache has it)."""
        if self.lookup is not None:
            return self.webhook.validate(obj, looked_up)
        if self.validate_reads_old:
            return self.webhook.validate(obj, old=old)
        return self.webhook.validate(obj)

    def mutate(self, obj: Mapping, *, tas: bool) -> dict:
        """The mutating webhook's merge patch for a reviewed object."""
        if self.mutate_reads_tas:
            return self.webhook.mutate(obj, tas=tas)
        return self.webhook.mutate(obj)

    def children_watch(self, children: Children) -> str:
        return f"{self.resource.kind.lower()}-{children.resource.plural}"


GENERIC_JOBS: tuple[GenericJobKind, ...] = (
    GenericJobKind(
        Framework.JOB,
        JOB,
        job_webhook,
        concurrency=8,
        patches_status=True,
        validate_path="validate-topology-request",
    ),
    GenericJobKind(
        Framework.JOBSET,
        JOB_SET,
        jobset_webhook,
        children=(Children(JOB_RESOURCE, JOBSET_NAME_LABEL),),
    ),
    # A TrainJob's JobSet carries the queue name (Kueue's runtime patch); its Jobs are linked
    # here too, so that pod -> Job -> JobSet -> TrainJob holds with the JobSet integration off.
    GenericJobKind(
        Framework.TRAINJOB,
        TRAIN_JOB,
        trainjob_webhook,
        children=(
            Children(JOBSET_RESOURCE, QUEUE_NAME_LABEL),
            Children(JOB_RESOURCE, JOBSET_NAME_LABEL, controlled_by=JOBSET_RESOURCE),
        ),
        lookup=Lookup(RUNTIMES, named_runtime, reading),
    ),
    GenericJobKind(
        Framework.APPWRAPPER,
        APP_WRAPPER,
        appwrapper_webhook,
        children=(
            Children(JOB_RESOURCE, APPWRAPPER_LABEL),
            Children(PYTORCHJOB_RESOURCE, APPWRAPPER_LABEL),
        ),
    ),
    # RayJob -> RayCluster -> head and worker pods; RayJob -> submitter Job -> its pod.
    GenericJobKind(
        Framework.RAYJOB,
        RAY_JOB,
        rayjob_webhook,
        children=(
            Children(RAYCLUSTER_RESOURCE, f"{RAY_ORIGIN_LABEL}=RayJob"),
            Children(JOB_RESOURCE, f"{RAY_ORIGIN_LABEL}=RayJob"),
        ),
        validate_reads_old=True,
    ),
    GenericJobKind(Framework.RAYCLUSTER, RAY_CLUSTER, raycluster_webhook, validate_reads_old=True),
    GenericJobKind(
        Framework.RAYSERVICE,
        RAY_SERVICE,
        rayservice_webhook,
        children=(Children(RAYCLUSTER_RESOURCE, f"{RAY_ORIGIN_LABEL}=RayService"),),
        validate_reads_old=True,
    ),
    # The training operators create each replica's pod themselves, controlled by the job.
    GenericJobKind(Framework.PYTORCHJOB, PYTORCH_JOB, pytorchjob_webhook),
    GenericJobKind(Framework.TFJOB, TF_JOB, tfjob_webhook),
    GenericJobKind(Framework.XGBOOSTJOB, XGBOOST_JOB, xgboostjob_webhook),
    GenericJobKind(Framework.PADDLEJOB, PADDLE_JOB, paddlejob_webhook),
    GenericJobKind(Framework.JAXJOB, JAX_JOB, jaxjob_webhook),
    # Its workers are pods it controls; its launcher's pod is its launcher Job's.
    GenericJobKind(
        Framework.MPIJOB,
        MPI_JOB,
        mpijob_webhook,
        children=(Children(JOB_RESOURCE, MPIJOB_LAUNCHER_LABEL),),
        mutate_reads_tas=True,
    ),
)
BY_FRAMEWORK: Mapping[str, GenericJobKind] = {k.framework: k for k in GENERIC_JOBS}


def enabled(integrations: Integrations) -> list[GenericJobKind]:
    return [k for k in GENERIC_JOBS if integrations.enabled(k.framework)]


@cache
def managed_owners(integrations: Integrations) -> ManagedOwners:
    """Kueue's IsOwnerManagedByKueue: an object controlled by an enabled kind of this table is
    admitted with that owner, never queued on its own."""
    return ManagedOwners.of(k.resource for k in enabled(integrations))


def names() -> Iterable[str]:
    return (k.framework for k in GENERIC_JOBS)
