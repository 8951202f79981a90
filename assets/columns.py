"""Column tables for the catalog: Dagster's ``dagster/column_schema`` derived from the Arrow
schemas the plain functions write with, so the UI's column table shows the same types the files
hold and cannot drift from them (a column added to a schema shows up without touching an asset)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from types import ModuleType

import dagster as dg
import pyarrow as pa

COLUMN_SCHEMA = "dagster/column_schema"


def arrow_type_name(t: pa.DataType) -> str:
    """Arrow's own type name, with list items shown as ``list<string>`` rather than Arrow's
    ``list<item: string>`` (the field name ``item`` says nothing in a column table)."""
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list<{arrow_type_name(t.value_type)}, {t.list_size}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{arrow_type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {arrow_type_name(f.type)}" for f in t) + ">"
    return str(t)


def table_schema(schema: pa.Schema, descriptions: Mapping[str, str] | None = None) -> dg.TableSchema:
    """One column per Arrow field, in order, with its type, whether it may be null, and a
    description: ``descriptions[name]``, else the field's ``description`` metadata, if any."""
    descriptions = descriptions or {}
    columns = []
    for f in schema:
        text = descriptions.get(f.name) or (f.metadata or {}).get(b"description", b"").decode() or None
        columns.append(
            dg.TableColumn(
                name=f.name,
                type=arrow_type_name(f.type),
                description=text,
                constraints=dg.TableColumnConstraints(nullable=f.nullable),
            )
        )
    return dg.TableSchema(columns=columns)


_FIELD = re.compile(r'^\s*pa\.field\("(?P<name>\w+)"[^#]*(?:#\s*(?P<comment>.+))?$')
_COMMENT = re.compile(r"^\s*#\s?(?P<text>.*)$")


def field_comments(module: ModuleType) -> dict[str, str]:
    """The comments beside or above each ``pa.field("name", ...)`` line of a schema module, by
    column name: the schema modules document their columns that way, and the catalog shows the
    same words instead of a second copy that would drift. A comment block directly above a
    field comes first, then the comment at the end of its line."""
    out: dict[str, str] = {}
    block: list[str] = []
    for line in inspect.getsource(module).splitlines():
        if m := _COMMENT.match(line):
            block.append(m["text"].strip())
            continue
        if m := _FIELD.match(line):
            text = " ".join([*block, (m["comment"] or "").strip()]).strip()
            if text:
                out.setdefault(m["name"], text)
        block = []
    return out


def column_metadata(schema: pa.Schema, descriptions: Mapping[str, str] | None = None) -> dict[str, dg.TableSchema]:
    """Definition metadata for an asset that writes ``schema``: ``{"dagster/column_schema": ...}``."""
    return {COLUMN_SCHEMA: table_schema(schema, descriptions)}
