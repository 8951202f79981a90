"""views/grouped.py: an Arrow table's rows by a key, each group in table order."""

from __future__ import annotations

import random

import pyarrow as pa

from views.grouped import Grouped


def test_each_group_holds_its_rows_in_table_order_and_nothing_else():
    rng = random.Random(7)
    keys = [rng.choice(["a", "b", "c", "", None]) for _ in range(500)]
    table = pa.table({"k": keys, "n": list(range(500)), "s": [f"row {i}" for i in range(500)]})
    g = Grouped(table, "k")
    assert set(g.keys()) == {"a", "b", "c"} and len(g) == 3  # null and empty keys are no group
    for k in ("a", "b", "c"):
        assert [r["n"] for r in g.rows_of([k])] == [i for i, x in enumerate(keys) if x == k]
    both = [r["n"] for r in g.rows_of(["c", "a", "c", "missing"])]  # each group once, in the order asked
    assert both == [i for i, x in enumerate(keys) if x == "c"] + [i for i, x in enumerate(keys) if x == "a"]
    assert g.rows_of(["missing"]) == [] and g.rows is table  # the table itself is not copied


def test_take_reads_rows_across_chunks_in_the_order_asked():
    parts = [pa.table({"k": ["a", "b", "a"], "n": [3 * i, 3 * i + 1, 3 * i + 2]}) for i in range(5)]
    table = pa.concat_tables(parts)  # five chunks
    assert table.column("n").num_chunks == 5
    g = Grouped(table, "k")
    assert g.take([13, 0, 14, 1, 7]).column("n").to_pylist() == [13, 0, 14, 1, 7]
    assert g.take([]).num_rows == 0
    assert [r["n"] for r in g.rows_of(["b"])] == [1, 4, 7, 10, 13]


def test_a_mask_keeps_rows_before_they_are_converted():
    table = pa.table({"k": ["a", "b", "a", "a"], "n": [0, 1, 2, 3]})
    g = Grouped(table, "k")
    seen = []

    def odd(rows: pa.Table) -> pa.Array:
        seen.append(rows.num_rows)
        return pa.array([n % 2 == 1 for n in rows.column("n").to_pylist()])

    assert [r["n"] for r in g.rows_of(["a", "b"], odd)] == [3, 1]
    assert seen == [4]  # one mask over every row of the groups asked
