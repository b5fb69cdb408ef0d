"""`tas contest`: the VM placement-group protocol, with our own input generator and output checker."""
