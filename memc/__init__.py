"""memc: a memory compiler for AI agents.

The ledger (``ledger/``) keeps the evidence; every other folder compiles a view of it:
``ingestion/`` -> ``ledger/`` -> ``claims/`` -> ``views/`` (+ ``dbt_project/``) -> ``query/``.
``assets/``, ``checks/`` and ``orchestration/`` wire those plain functions into Dagster.
"""

__version__ = "0.1.0"
