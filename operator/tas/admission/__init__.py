"""Queues, quota and the single serial admission loop."""
