"""The topology view: a read-only picture of where there is room and why workloads wait."""
