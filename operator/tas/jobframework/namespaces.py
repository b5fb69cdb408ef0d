"""Kueue's managedJobsNamespaceSelector: the namespaces whose queued objects are ours.

The chart renders the same selector into its webhooks' namespaceSelector, so an object in any
other namespace (kube-system and the operator's own, by default) is neither suspended at
creation nor touched later: it runs as if no queue were named. The controllers check it when
they act, against the cache's namespaces; a namespace not seen yet is not ours until it is (its
watch event brings its objects back, see runtime/watches.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tas.cache.projections import selects_namespace


@dataclass(frozen=True)
class ManagedNamespaces:
    selector: Mapping  # a LabelSelector
    labels: Mapping[str, Mapping[str, str]]  # the cache's namespaces: name -> labels

    def __contains__(self, namespace: object) -> bool:
        labels = self.labels.get(namespace) if isinstance(namespace, str) else None
        return labels is not None and selects_namespace(self.selector, labels)


class _Every:
    """Every namespace (tests, and tools without a cluster)."""

    def __contains__(self, namespace: object) -> bool:
        return True


EVERY_NAMESPACE = _Every()
