"""The context compiler: one question, one asker, one bounded context with provenance."""

from query.context import PRESETS, Context, ContextItem, QueryConfig, StateFact, compile_context
from query.staleness import StaleViewError, ViewPolicy

__all__ = ["PRESETS", "Context", "ContextItem", "QueryConfig", "StaleViewError", "StateFact", "ViewPolicy", "compile_context"]
