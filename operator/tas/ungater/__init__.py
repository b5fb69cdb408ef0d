"""Removes the topology scheduling gate, pinning each pod to its assigned domain."""
