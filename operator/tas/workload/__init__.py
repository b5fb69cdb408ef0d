"""The Workload's lifecycle in one place: pure status transitions, and the one status writer."""
