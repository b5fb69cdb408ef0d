"""batch/v1 Job integration."""
