"""Failed-node detection and replacement."""
