"""The context compiler: one question, one asker, one bounded context with provenance.
query/compile.py is the pipeline; docs/architecture.md lists its stages."""

from query.compile import compile_context, view_watermarks
from query.config import PRESETS, QueryConfig
from query.context import Context, ContextItem, StateFact
from query.staleness import StaleViewError, ViewPolicy

__all__ = [
    "PRESETS", "Context", "ContextItem", "QueryConfig", "StaleViewError", "StateFact", "ViewPolicy",
    "compile_context", "view_watermarks",
]  # fmt: skip
