"""Hypothesis strategies of Kueue-shaped objects, as a v1beta1 client writes them: every field
we serve, with values Kueue accepts. Shared by the model and conversion tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

from tas.api.constants import HOSTNAME_LABEL

dns_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
dns_name = st.lists(dns_label, min_size=1, max_size=3).map(".".join)
label_key = st.one_of(
    st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?\Z"),
    st.tuples(dns_name, dns_label).map("/".join),
)
quantity = st.one_of(
    st.integers(min_value=0, max_value=10**12),
    st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{1,3})?(Ki|Mi|Gi|Ti|m|k|M|G)?\Z"),
)
int32 = st.integers(min_value=0, max_value=2**31 - 1)
times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ"))
short_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


def optional(draw: st.DrawFn, out: dict[str, Any], key: str, strategy: st.SearchStrategy) -> None:
    if draw(st.booleans()):
        out[key] = draw(strategy)


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    labels = draw(
        st.lists(label_key, min_size=1, max_size=15, unique=True).filter(
            lambda xs: HOSTNAME_LABEL not in xs
        )
    )
    if draw(st.booleans()):
        labels.append(HOSTNAME_LABEL)
    version = draw(st.sampled_from(["v1alpha1", "v1beta1"]))
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": draw(dns_name)},
        "spec": {"levels": [{"nodeLabel": x} for x in labels]},
    }


@st.composite
def flavors(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeLabels": draw(st.dictionaries(label_key, dns_label, min_size=1, max_size=8))
    }
    optional(draw, spec, "topologyName", dns_name)
    optional(
        draw,
        spec,
        "nodeTaints",
        st.lists(
            st.fixed_dictionaries(
                {
                    "key": label_key,
                    "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                },
                optional={"value": dns_label, "timeAdded": times},
            ),
            min_size=1,
            max_size=8,
        ),
    )
    optional(
        draw,
        spec,
        "tolerations",
        st.lists(
            st.one_of(
                st.fixed_dictionaries(
                    {"key": label_key, "operator": st.just("Equal"), "value": dns_label},
                    optional={"effect": st.sampled_from(["NoSchedule", "NoExecute"])},
                ),
                st.fixed_dictionaries(
                    {"operator": st.just("Exists"), "effect": st.just("NoExecute")},
                    optional={"tolerationSeconds": st.integers(0, 10**6), "key": label_key},
                ),
            ),
            min_size=1,
            max_size=8,
        ),
    )
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": draw(dns_name)},
        "spec": spec,
    }


conditions = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["QuotaReserved", "Admitted", "Finished", "Evicted", "Active"]),
            "status": st.sampled_from(["True", "False", "Unknown"]),
            "reason": st.from_regex(r"\A[A-Z][A-Za-z]{0,20}\Z"),
            "message": short_text,
            "lastTransitionTime": times,
        },
        optional={"observedGeneration": st.integers(0, 10**9)},
    ),
    max_size=4,
    unique_by=lambda c: c["type"],
)


@st.composite
def cluster_queues(draw: st.DrawFn) -> dict[str, Any]:
    resources = draw(
        st.lists(
            st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    flavor_names = draw(st.lists(dns_name, min_size=1, max_size=3, unique=True))
    group = {
        "coveredResources": resources,
        "flavors": [
            {
                "name": f,
                "resources": [{"name": r, "nominalQuota": draw(quantity)} for r in resources],
            }
            for f in flavor_names
        ],
    }
    spec: dict[str, Any] = {
        "resourceGroups": [group],
        "queueingStrategy": draw(st.sampled_from(["StrictFIFO", "BestEffortFIFO"])),
    }
    optional(draw, spec, "cohort", dns_name)
    # v1beta1's deprecated Borrow and Preempt have no v1beta2 form (see the conversion tests).
    policy = st.sampled_from(["MayStopSearch", "TryNextFlavor"])
    optional(
        draw,
        spec,
        "flavorFungibility",
        st.fixed_dictionaries({}, optional={"whenCanBorrow": policy, "whenCanPreempt": policy}),
    )
    optional(
        draw,
        spec,
        "namespaceSelector",
        st.one_of(
            st.just({}),
            st.fixed_dictionaries(
                {"matchLabels": st.dictionaries(label_key, dns_label, max_size=3)}
            ),
            st.fixed_dictionaries(
                {
                    "matchExpressions": st.lists(
                        st.fixed_dictionaries(
                            {
                                "key": label_key,
                                "operator": st.sampled_from(["In", "NotIn"]),
                                "values": st.lists(dns_label, min_size=1, max_size=3),
                            }
                        ),
                        max_size=2,
                    )
                }
            ),
        ),
    )
    usage = st.lists(
        st.fixed_dictionaries(
            {
                "name": dns_name,
                "resources": st.lists(
                    st.fixed_dictionaries(
                        {
                            "name": st.sampled_from(["cpu", "memory"]),
                            "total": quantity,
                            "borrowed": quantity,
                        }
                    ),
                    max_size=2,
                    unique_by=lambda r: r["name"],
                ),
            }
        ),
        max_size=2,
        unique_by=lambda f: f["name"],
    )
    status = {
        "conditions": draw(conditions),
        "flavorsReservation": draw(usage),
        "flavorsUsage": draw(usage),
        "pendingWorkloads": draw(int32),
        "reservingWorkloads": draw(int32),
        "admittedWorkloads": draw(int32),
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": draw(dns_name)},
        "spec": spec,
        "status": status,
    }


local_usage = st.lists(
    st.fixed_dictionaries(
        {
            "name": dns_name,
            "resources": st.lists(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(["cpu", "memory"]), "total": quantity}
                ),
                max_size=2,
                unique_by=lambda r: r["name"],
            ),
        }
    ),
    max_size=2,
    unique_by=lambda f: f["name"],
)


@st.composite
def local_queues(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": draw(dns_name), "namespace": draw(dns_label)},
        "spec": {"clusterQueue": draw(dns_name)},
        "status": {
            "conditions": draw(conditions),
            "pendingWorkloads": draw(int32),
            "reservingWorkloads": draw(int32),
            "admittedWorkloads": draw(int32),
            "flavorUsage": draw(local_usage),
            "flavorsReservation": draw(local_usage),
        },
    }


@st.composite
def topology_requests(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mode = draw(st.sampled_from(["required", "preferred", "unconstrained", None]))
    if mode == "unconstrained":
        out["unconstrained"] = True
    elif mode:
        out[mode] = draw(label_key)
    optional(draw, out, "podIndexLabel", label_key)
    optional(draw, out, "podSetGroupName", dns_label)
    layers = draw(st.integers(0, 3))
    if layers == 1:
        out["podSetSliceRequiredTopology"] = draw(label_key)
        out["podSetSliceSize"] = draw(st.integers(1, 1000))
    elif layers > 1:
        out["podsetSliceRequiredTopologyConstraints"] = [
            {"topology": draw(label_key), "size": draw(st.integers(1, 1000))} for _ in range(layers)
        ]
    return out


def domains(levels: list[str]) -> st.SearchStrategy:
    """A v1beta1 assignment's domains: hostname-like values (node-a-1, node-a-2, ... share
    prefixes, as the compact encoding exploits) or any label values; any counts."""
    value = st.one_of(
        dns_label,
        st.tuples(st.sampled_from(["node-a-", "node-b-", "gpu-x-rack-"]), st.integers(0, 40)).map(
            lambda t: f"{t[0]}{t[1]}"
        ),
    )
    return st.lists(
        st.fixed_dictionaries(
            {
                "values": st.lists(value, min_size=len(levels), max_size=len(levels)),
                "count": st.one_of(st.just(1), st.integers(1, 1000)),
            }
        ),
        min_size=1,
        max_size=8,
    )


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(dns_label, min_size=1, max_size=4, unique=True))
    pod_sets = []
    for name in names:
        pod_set: dict[str, Any] = {
            "name": name,
            "count": draw(st.integers(0, 10**5)),
            "template": {
                "metadata": {"labels": draw(st.dictionaries(label_key, dns_label, max_size=2))},
                "spec": {"containers": [{"name": "c", "image": draw(dns_name)}]},
            },
        }
        optional(draw, pod_set, "topologyRequest", topology_requests())
        pod_sets.append(pod_set)
    spec: dict[str, Any] = {"podSets": pod_sets}
    optional(draw, spec, "queueName", dns_name)
    optional(draw, spec, "priority", st.integers(-(2**31), 2**31 - 1))
    if "priority" in spec and draw(st.booleans()):  # a class name needs a known source
        spec["priorityClassName"] = draw(dns_name)
        spec["priorityClassSource"] = draw(
            st.sampled_from(
                ["kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass"]
            )
        )
    status: dict[str, Any] = {"conditions": draw(conditions), "unhealthyNodes": []}
    if draw(st.booleans()):
        levels = draw(st.lists(label_key, min_size=1, max_size=3, unique=True))
        status["admission"] = {
            "clusterQueue": draw(dns_name),
            "podSetAssignments": [
                {
                    "name": name,
                    "flavors": {"cpu": draw(dns_name)},
                    "resourceUsage": {"cpu": draw(quantity)},
                    "count": draw(int32),
                    "topologyAssignment": {"levels": levels, "domains": draw(domains(levels))},
                }
                for name in names
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": draw(dns_name), "namespace": draw(dns_label)},
        "spec": spec,
        "status": status,
    }
