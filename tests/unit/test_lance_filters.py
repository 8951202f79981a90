"""views/lance_filters.py: the asker's filter as a LanceDB prefilter and, for rows held in
memory, as an Arrow mask that keeps exactly the rows the Python check admits."""

from __future__ import annotations

import itertools
import random

import pyarrow as pa
import pytest

from views.lance_filters import allowed_principals, arrow_filter


def _python_check(row: dict, principals: list[str], scope: str | None, kinds: list[str] | None) -> bool:
    # what LanceVectorStore checks every row again with (views/vectors.py _rows_in)
    return (
        bool(set(allowed_principals(principals)).intersection(row["visibility"] or ()))
        and (scope is None or row["scope"] == scope)
        and (kinds is None or row["kind"] in kinds)
    )


def test_the_arrow_mask_keeps_exactly_what_the_python_check_admits():
    rng = random.Random(3)
    visibilities = [["public"], ["ana"], ["bruno"], ["ana", "bruno"], [], None, ["carla", "public"]]
    rows = [
        {"visibility": rng.choice(visibilities), "scope": rng.choice(["acme", "globex", None]), "kind": rng.choice(["message", "exchange", "claim", None])}
        for _ in range(400)
    ]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("visibility", pa.list_(pa.string())), ("scope", pa.string()), ("kind", pa.string())]))
    for principals, scope, kinds in itertools.product((["ana"], ["bruno"], ["ana", "bruno"], ["dora"]), ("acme", None), (["message"], ["message", "exchange"], None)):
        mask = arrow_filter(table, principals, scope, kinds).to_pylist()
        assert mask == [_python_check(r, principals, scope, kinds) for r in rows], (principals, scope, kinds)


def test_the_arrow_mask_refuses_what_a_filter_would():
    table = pa.table({"visibility": [["public"]], "scope": ["acme"], "kind": ["message"]})
    with pytest.raises(ValueError, match="principal"):
        arrow_filter(table, ["ana' OR true"], None, None)
    with pytest.raises(ValueError, match="scope"):
        arrow_filter(table, ["ana"], "acme' OR 1=1", None)
