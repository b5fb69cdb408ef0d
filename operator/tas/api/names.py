"""Kubernetes name formats, defined once: the CRD models' patterns and the webhooks' checks
both read them from here, so that a webhook checks a name without loading the models."""

from __future__ import annotations

import re

DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_SUBDOMAIN_MAX = 253
# A qualified label key: optional DNS prefix and "/", then the name. Kueue's pattern.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)

_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN)


def is_dns1123_subdomain(name: str) -> bool:
    """A lowercase RFC 1123 subdomain: what most object names must be."""
    # fullmatch: "$" alone would let a trailing newline through, which the API server refuses.
    return len(name) <= DNS1123_SUBDOMAIN_MAX and _SUBDOMAIN.fullmatch(name) is not None
