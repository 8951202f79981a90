"""Dagster assets: thin wrappers that read through a resource, call a plain function from
``ledger/``, ``claims/`` or ``views/``, write through the owning store, and report metadata."""
