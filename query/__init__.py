"""The context compiler: one question, one asker, one bounded context with provenance."""

from query.context import Context, ContextItem, QueryConfig, StateFact, compile_context

__all__ = ["Context", "ContextItem", "QueryConfig", "StateFact", "compile_context"]
