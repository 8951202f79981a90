"""Content-addressed identifiers: an id is a hash of what a thing says, never its position."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


# The canonical JSON of digest: one encoder for every call (json.dumps with these options built a
# new one each time, ~15% of an id at 100k-entry scale).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: keys sorted, no spaces, text as it is, and what JSON cannot
    hold as its str(). What ids and the views' row fingerprints hash: these bytes never change."""
    return _CANONICAL.encode(value)


def digest(*parts: Any) -> str:
    """SHA-256 hex of a canonical JSON rendering of ``parts`` (stable across runs and machines)."""
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def json_rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` as dicts that JSON with ``default=str`` encodes exactly as it encodes
    ``table.to_pylist()``'s, made faster: microsecond timestamps (UTC or naive) arrive as the
    str() of their datetime ("2024-05-14 09:00:00+00:00", with ".ffffff" when it has
    microseconds), made in Arrow. A datetime built per value was a third of the time of hashing
    every row of a 100k-entry evidence index or graph."""
    names = table.column_names
    yield from (dict(zip(names, values)) for values in zip(*(_json_values(table.column(n)) for n in names)))


def _json_values(column: pa.ChunkedArray) -> list[Any]:
    kind = column.type
    if pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz in (None, "UTC", "+00:00"):
        text = pc.strftime(column, format="%Y-%m-%d %H:%M:%S")  # Arrow's %S carries the microseconds
        text = pc.replace_substring_regex(text, pattern=r"\.000000$", replacement="")
        return (pc.binary_join_element_wise(text, "+00:00", "") if kind.tz else text).to_pylist()
    return column.to_pylist()


def content_id(prefix: str, *parts: Any, length: int = 24) -> str:
    """A short typed id such as ``e_3f2a...``: 24 hex chars = 96 bits, collision-free at ledger scale."""
    return f"{prefix}_{digest(*parts)[:length]}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalize_name(name: str) -> str:
    """Case- and space-insensitive form of a name, the first step of entity resolution."""
    return " ".join(name.split()).casefold()


def is_common_noun(name: str | None) -> bool:
    """Whether an entity's name is a common noun rather than a name: a thing pointed at ("studio"
    for "The studio looks amazing"), which no question names and no interaction ranks."""
    return bool(name) and not name[0].isupper()


def entity_id(scope: str, name: str) -> str:
    """Entities are per scope: two people who share a name in different scopes never merge.

    The dbt macro ``entity_id`` computes the same value in SQL (sha256 over scope, an ASCII
    unit separator and the lower-cased, trimmed name); keep the two in step.
    """
    return "ent_" + hashlib.sha256(f"{scope}\x1f{name.strip().lower()}".encode("utf-8")).hexdigest()[:24]
