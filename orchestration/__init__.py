"""Dagster wiring: asset keys, resources, partitions, schedules, sensors and the one composition root."""
