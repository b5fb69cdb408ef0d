"""Decoding the lists of pods and nodes: only the fields the projections read.

At start-up the operator lists every pod and node in the cluster, and parsing those bodies whole
(managedFields, container images, env, probes, status, node images...) was the larger part of
its restart CPU. These schemas name exactly what `projections.pod_from_object` and
`projections.node_from_object` (and the reflector's key and version) read; msgspec skips
everything else while parsing, without building it. What is kept comes out as the same plain
dicts and values a full parse gives, so the projections read both alike (a test compares them).

Leaves are typed `Any`, so a value of an unexpected type reaches the projection as it is and is
judged there, as with a full parse. A body whose shape is wrong where we prune (an item that is
not an object) is a `msgspec.ValidationError` naming the path (`$.items[3].metadata`), which the
client reports as a failed call.

Keep a schema in step with its projection: a field read but not named here reads as missing.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec

from tas.kube.client import Decode

# `continue` is a keyword, so the list's metadata takes the functional form.
ListMeta = TypedDict("ListMeta", {"resourceVersion": Any, "continue": Any}, total=False)


class OwnerReference(TypedDict, total=False):
    uid: Any
    controller: Any


class PodMeta(TypedDict, total=False):
    name: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    labels: Any
    annotations: Any
    deletionTimestamp: Any
    ownerReferences: list[OwnerReference] | None


class Container(TypedDict, total=False):
    name: Any
    resources: Any
    restartPolicy: Any


class PodSpec(TypedDict, total=False):
    nodeName: Any
    nodeSelector: Any
    schedulingGates: Any
    overhead: Any
    containers: list[Container] | None
    initContainers: list[Container] | None


class PodStatus(TypedDict, total=False):
    phase: Any


class Pod(TypedDict, total=False):
    metadata: PodMeta
    spec: PodSpec | None
    status: PodStatus | None


class PodList(TypedDict, total=False):
    metadata: ListMeta | None
    items: list[Pod] | None


class NodeMeta(TypedDict, total=False):
    name: Any
    namespace: Any
    resourceVersion: Any
    labels: Any


class NodeCondition(TypedDict, total=False):
    type: Any
    status: Any


class NodeSpec(TypedDict, total=False):
    taints: Any
    unschedulable: Any


class NodeStatus(TypedDict, total=False):
    allocatable: Any
    conditions: list[NodeCondition] | None


class Node(TypedDict, total=False):
    metadata: NodeMeta
    spec: NodeSpec | None
    status: NodeStatus | None


class NodeList(TypedDict, total=False):
    metadata: ListMeta | None
    items: list[Node] | None


decode_pod_list: Decode = msgspec.json.Decoder(PodList).decode
decode_node_list: Decode = msgspec.json.Decoder(NodeList).decode
