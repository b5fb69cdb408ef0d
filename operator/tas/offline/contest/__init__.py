"""`tas contest`: seed 001's VM placement protocol, with our own input generator and output checker."""
