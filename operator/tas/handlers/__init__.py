"""kopf wiring only: the one place that imports kopf."""
