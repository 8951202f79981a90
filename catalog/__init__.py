"""What the Dagster assets and checks are declared against, below both: every asset key and
group (keys.py, declared once), the resources they read (resources.py), the claims partitions
(partitions.py) and the dbt project (dbt_project.py). orchestration/ composes them on top."""
