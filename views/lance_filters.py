"""LanceDB filters built safely. Filters are SQL text: a value inlined unescaped is an injection
(``id = 'a\\' OR true --'`` matches every row; a backslash is a literal character, doubling ``'``
escapes it). Every literal put in a filter is checked against a strict pattern first (no quotes,
no backslashes) and refused otherwise, so nothing depends on escaping. The asker's visibility is
pushed into every search as ``array_has_any(visibility, [...])``, a true prefilter in lancedb 0.40.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memc.visibility import PRINCIPAL_RE, PUBLIC, SCOPE_RE, check_literal

# Every literal that enters a LanceDB filter must match one of these (no quotes, no backslashes);
# principals and scopes by memc.visibility's patterns, the ones the ledger validates entries with.
ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,256}$"

KIND_PATTERN = r"^[A-Za-z0-9_]{1,64}$"

HASH_PATTERN = r"^[0-9a-f]{64}$"

TABLE_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"

ID_RE = re.compile(ID_PATTERN)

KIND_RE = re.compile(KIND_PATTERN)

HASH_RE = re.compile(HASH_PATTERN)

TABLE_RE = re.compile(TABLE_PATTERN)

CHUNK = 500  # ids or hashes per IN (...) list


def sql_list(values: Iterable[str]) -> str:
    # Safe only because every value has passed a pattern with no quote or backslash in it.
    return ", ".join(f"'{v}'" for v in values)


def allowed_principals(principals: Sequence[str]) -> list[str]:
    """The asker's principals plus ``public``, validated, sorted and de-duplicated."""
    if isinstance(principals, str):
        raise TypeError("principals must be a list of strings, not a string")
    return sorted({PUBLIC, *(check_literal(p, PRINCIPAL_RE, "principal") for p in principals)})


def visibility_filter(principals: Sequence[str]) -> str:
    """LanceDB (lance 0.40 / DataFusion) filter: rows whose ``visibility`` list holds any allowed principal."""
    return f"array_has_any(visibility, [{sql_list(allowed_principals(principals))}])"


def arrow_filter(rows: pa.Table, principals: Sequence[str], scope: str | None = None, kinds: Sequence[str] | None = None) -> pa.Array:
    """:func:`search_filter`'s visibility, scope and kinds as a boolean mask over an Arrow table
    of index rows: rows held in memory filtered before they become Python objects, which is most
    of what a lookup costs (the turns of a compile's ~40 sessions, a third of them private to
    others in the compile bench). Callers check each row again in Python, as they check LanceDB's."""
    visibility = rows.column("visibility").combine_chunks()
    seen = pc.is_in(pc.list_flatten(visibility), value_set=pa.array(allowed_principals(principals), pa.string()))
    keep = np.zeros(rows.num_rows, dtype=bool)
    keep[pc.list_parent_indices(visibility).to_numpy()[seen.to_numpy(zero_copy_only=False)]] = True
    mask = pa.array(keep)
    if scope is not None:
        mask = pc.and_(mask, pc.fill_null(pc.equal(rows.column("scope"), check_literal(scope, SCOPE_RE, "scope")), False))
    if kinds is not None:
        mask = pc.and_(mask, pc.fill_null(pc.is_in(rows.column("kind"), value_set=pa.array(sorted(set(kinds)), pa.string())), False))
    return mask


def visible_rows(rows: Iterable[dict[str, Any]], principals: Sequence[str], scope: str | None = None, kinds: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """:func:`arrow_filter`'s test again in Python, over rows already made Python objects: what a
    store's filter returned is checked a second time before anyone sees it (a row failing here is
    a bug upstream, and is dropped)."""
    allowed = set(allowed_principals(principals))
    kind_set = None if kinds is None else set(kinds)
    return [
        r for r in rows
        if allowed.intersection(r.get("visibility") or ())
        and (scope is None or r.get("scope") == scope)
        and (kind_set is None or r.get("kind") in kind_set)
    ]  # fmt: skip


def search_filter(
    principals: Sequence[str],
    scope: str | None = None,
    kinds: Sequence[str] | None = None,
    entity_ids: Sequence[str] | None = None,
    valid_between: tuple[datetime | None, datetime | None] | None = None,
) -> str:
    parts = [visibility_filter(principals)]
    if scope is not None:
        parts.append(f"scope = '{check_literal(scope, SCOPE_RE, 'scope')}'")
    if kinds is not None:
        if isinstance(kinds, str):
            raise TypeError("kinds must be a list of strings, not a string")
        ks = sorted({check_literal(k, KIND_RE, "kind") for k in kinds})
        parts.append(f"kind IN ({sql_list(ks)})" if ks else "false")
    if entity_ids is not None:
        if isinstance(entity_ids, str):
            raise TypeError("entity_ids must be a list of strings, not a string")
        es = sorted({check_literal(e, ID_RE, "entity id") for e in entity_ids})
        parts.append(f"array_has_any(entity_ids, [{sql_list(es)}])" if es else "false")
    if valid_between is not None:
        parts += [
            f"valid_at {op} TIMESTAMP '{sql_timestamp(t)}'" for t, op in zip(valid_between, (">=", "<")) if t is not None
        ]
    return " AND ".join(f"({p})" for p in parts)


def sql_timestamp(t: datetime) -> str:
    """A datetime as a DataFusion timestamp literal: only datetimes reach here, never text."""
    if not isinstance(t, datetime):
        raise TypeError(f"valid_between takes datetimes, not {type(t).__name__}")
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00:00")


def within_window(t: datetime | None, window: tuple[datetime | None, datetime | None]) -> bool:
    start, end = window
    return t is not None and (start is None or t >= start) and (end is None or t < end)


def ids_filter(ids: Sequence[str]) -> str:
    return f"id IN ({sql_list(check_literal(i, ID_RE, 'id') for i in ids)})"


def chunks(seq: Sequence[str], n: int = CHUNK) -> Iterable[Sequence[str]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]
