"""The context compiler: one question, one asker, one bounded context with provenance.
query/compile.py is the pipeline; docs/architecture.md lists its stages.

The names below load on first use (PEP 562): importing ``query.config`` for the presets (what
`memc ask` needs to parse its options) then costs ~0.05 s instead of the ~0.3-1 s of the whole
pipeline (claims, ledger, LanceDB's filters, the views); `memc ask` that a running `memc serve`
answers never loads the pipeline at all (api/local.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from query.compile import compile_context, prepare, view_watermarks
    from query.config import PRESETS, QueryConfig
    from query.context import Context, ContextItem, StateFact
    from query.staleness import StaleViewError, ViewPolicy

_WHERE = {
    "compile_context": "query.compile", "prepare": "query.compile", "view_watermarks": "query.compile",
    "PRESETS": "query.config", "QueryConfig": "query.config",
    "Context": "query.context", "ContextItem": "query.context", "StateFact": "query.context",
    "StaleViewError": "query.staleness", "ViewPolicy": "query.staleness",
}  # fmt: skip

__all__ = [
    "PRESETS", "Context", "ContextItem", "QueryConfig", "StaleViewError", "StateFact", "ViewPolicy",
    "compile_context", "prepare", "view_watermarks",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'query' has no attribute {name!r}")
    # __import__, not importlib.import_module: that one bypasses `python -X importtime`.
    value = getattr(__import__(_WHERE[name], fromlist=[name]), name)
    globals()[name] = value
    return value
