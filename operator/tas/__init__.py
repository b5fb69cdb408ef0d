"""tas-operator: topology-aware admission of batch Jobs, speaking Kueue's API."""

__version__ = "0.2.0"
