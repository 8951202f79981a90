"""The `memc` command line, on top of every stage: one module per command group (cli/main.py
lists them). Heavy libraries (Dagster, dbt, torch) are imported inside the commands that need
them, so `memc ledger stats` and `memc --help` answer in a fraction of a second."""
