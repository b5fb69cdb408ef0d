"""The cluster as the solver needs it, fed by watch events."""
