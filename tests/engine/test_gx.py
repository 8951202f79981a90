"""The Great Expectations suites (checks/gx.py): each expectation passes on a good ledger (and its
claims) and fails on a crafted bad one, naming the failing rows by id.

The bad ledgers are crafted as tables: the ledger's own writer refuses most of these rows
(pydantic validation, gap-free commits), which is why the suites restate the promises
independently of it. One GX import (~5 s) for the module; each validation takes ~0.3 s.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from checks.gx import validate_claims, validate_ledger
from ledger.schema import LEDGER_SCHEMA

from conftest import ingest_sample_corpus


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    from claims.extract import RULES, extract
    from ledger import Ledger
    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path_factory.mktemp("gx") / "home").ensure()
    ingest_sample_corpus(home)  # several batches: recorded_at grows across them
    ledger = Ledger(home.ledger)
    table = ledger.read()
    claims = extract(list(ledger.iter_entries()), RULES).claims
    assert table.num_rows >= 20 and claims.num_rows >= 5
    return table, claims


def _set(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))


def _id(table: pa.Table, row: int, column: str = "entry_id") -> str:
    return table.column(column)[row].as_py()


def _failed(report) -> dict[str, list[str]]:
    return {o.description: o.failing_ids for o in report.failed}


def test_good_ledger_and_claims_pass_every_expectation(good):
    table, claims = good
    ledger_report = validate_ledger(table)
    assert ledger_report.success, _failed(ledger_report)
    assert len(ledger_report.outcomes) >= 19 and ledger_report.rows == table.num_rows
    claims_report = validate_claims(claims, table)
    assert claims_report.success, _failed(claims_report)
    assert claims_report.metadata()["failing_claim_ids"] == "none"


# --------------------------------------------------------------------------- ledger


def _ledger_cases():
    day = timedelta(days=1)
    return {
        "seq unique": lambda t: (_set(t, "seq", 4, t.column("seq")[3].as_py()), [4]),
        "entry_id unique": lambda t: (_set(t, "entry_id", 4, _id(t, 3)), [None]),
        "seq gap-free from 1": lambda t: (
            t.set_column(0, LEDGER_SCHEMA.field("seq"), pa.array([s + (1 if i >= 5 else 0) for i, s in enumerate(t.column("seq").to_pylist())], pa.int64())),
            [5],
        ),
        "recorded_at never decreases with seq": lambda t: (_set(t, "recorded_at", 6, t.column("recorded_at")[0].as_py() - day), [6]),
        "kind is a known entry kind": lambda t: (_set(t, "kind", 2, "gossip"), [2]),
        "visibility present": lambda t: (_set(t, "visibility", 7, None), [7]),
        "visibility well formed": lambda t: (_set(_set(t, "visibility", 7, ["bob smith"]), "visibility", 8, []), [7, 8]),
        "confidence in [0, 1]": lambda t: (_set(_set(t, "confidence", 1, 1.5), "confidence", 9, -0.1), [1, 9]),
    }


@pytest.mark.parametrize("rule", list(_ledger_cases()))
def test_each_ledger_expectation_fails_on_a_crafted_bad_ledger(good, rule):
    table, _ = good
    bad, rows = _ledger_cases()[rule](table)
    report = validate_ledger(bad)
    failed = _failed(report)
    assert not report.success and rule in failed, failed
    want = [_id(bad, r) for r in rows if r is not None]
    if want:
        assert set(want) <= set(failed[rule]), (rule, failed[rule])
        assert report.metadata()["failing_entry_ids"] != "none"


def test_ledger_schema_and_required_values(good):
    table, _ = good
    dropped = table.drop_columns(["actor"])
    assert "schema: exactly the ledger's columns" in _failed(validate_ledger(dropped))
    extra = table.append_column("secret", pa.array(["x"] * table.num_rows))
    assert "schema: exactly the ledger's columns" in _failed(validate_ledger(extra))

    # one null per required column, each in its own row: every not-null expectation fails
    # and names exactly its row (seq and entry_id are the ids themselves, so checked apart)
    required = [f.name for f in LEDGER_SCHEMA if not f.nullable and f.name not in ("seq", "entry_id", "visibility")]
    bad = table
    for row, column in enumerate(required):
        bad = _set(bad, column, row, None)
    failed = _failed(validate_ledger(bad))
    for row, column in enumerate(required):
        assert failed.get(f"{column} is required") == [_id(bad, row)], (column, failed)
    assert "seq is required" in _failed(validate_ledger(_set(table, "seq", 3, None)))
    assert "entry_id is required" in _failed(validate_ledger(_set(table, "entry_id", 3, None)))


# --------------------------------------------------------------------------- claims


def _claims_cases(ledger: pa.Table):
    return {
        "claim_id unique": lambda c: (_set(c, "claim_id", 1, c.column("claim_id")[0].as_py()), []),
        "confidence in [0, 1]": lambda c: (_set(c, "confidence", 2, 1.7), [2]),
        "polarity assert or retract": lambda c: (_set(c, "polarity", 3, "maybe"), [3]),
        "visibility present": lambda c: (_set(c, "visibility", 1, None), [1]),
        "visibility well formed": lambda c: (_set(c, "visibility", 1, ["no way!"]), [1]),
        "source entry resolvable in the ledger": lambda c: (_set(c, "source_entry_id", 4, "e_000000000000000000000000"), [4]),
        "quote present in the source entry": lambda c: (_set(c, "quote", 0, "a sentence nobody said"), [0]),
    }


@pytest.mark.parametrize("rule", list(_claims_cases(None)))
def test_each_claims_expectation_fails_on_crafted_bad_claims(good, rule):
    table, claims = good
    bad, rows = _claims_cases(table)[rule](claims)
    report = validate_claims(bad, table)
    failed = _failed(report)
    assert not report.success and rule in failed, failed
    for r in rows:
        assert _id(bad, r, "claim_id") in failed[rule], (rule, failed[rule])
        assert _id(bad, r, "claim_id") in report.metadata()["failing_claim_ids"]


def test_a_quote_may_come_from_the_caption_of_the_picture_its_entry_shares(good):
    import json

    table, claims = good
    source = claims.column("source_entry_id")[0].as_py()
    row = table.column("entry_id").to_pylist().index(source)
    caption = "a photo of a red kite over a hayfield"
    pictured = _set(table, "attributes", row, json.dumps({"image_caption": caption}))
    quoted = _set(claims, "quote", 0, caption)
    assert validate_claims(quoted, pictured).success
    assert "quote present in the source entry" in _failed(validate_claims(quoted, table))  # no picture there
    content = table.column("content")[row].as_py()
    across = _set(claims, "quote", 0, f"{content[-4:]} {caption[:8]}")  # never across content and caption
    assert "quote present in the source entry" in _failed(validate_claims(across, pictured))


def test_claims_schema_and_required_values(good):
    from claims.model import CLAIM_SCHEMA

    table, claims = good
    assert "schema: exactly the claims' columns" in _failed(validate_claims(claims.drop_columns(["time_phrase"]), table))
    required = [f.name for f in CLAIM_SCHEMA if not f.nullable and f.name not in ("claim_id", "visibility")]
    bad = claims
    for row, column in enumerate(required):
        bad = _set(bad, column, row % claims.num_rows, None)
    failed = _failed(validate_claims(bad, table))
    for row, column in enumerate(required):
        assert _id(bad, row % claims.num_rows, "claim_id") in failed.get(f"{column} is required", []), (column, failed)


def test_the_frames_are_hashed_by_pandas_not_pickled(good):
    """GX fingerprints each batch with ``pd.util.hash_pandas_object`` and pickles the whole frame
    when that raises (lists as numpy arrays are unhashable): half of the ledger suite's time at
    100k entries. The frames hold the list columns as their items joined, so the hash takes them."""
    import pandas as pd

    from checks.gx import LIST_SEPARATOR, _frame, _visibility_text, claims_frame, ledger_frame

    table, claims = good
    texts = zip(table.column("content").to_pylist(), table.column("attributes").to_pylist())
    sources = dict(zip(table.column("entry_id").to_pylist(), texts))
    for frame in (ledger_frame(table), claims_frame(claims, sources)):
        assert len(pd.util.hash_pandas_object(frame, index=True)) == len(frame)
    frame = ledger_frame(table)
    assert list(frame["visibility"]) == [LIST_SEPARATOR.join(v) for v in table.sort_by("seq").column("visibility").to_pylist()]
    # a null list stays null, a list holding a null item does not (what the suites see of them)
    crafted = pa.table({"visibility": pa.array([["a", "b"], None, ["a", None], []], pa.list_(pa.string()))})
    cells = [None if pd.isna(v) else v for v in _frame(crafted)["visibility"]]
    assert cells == [f"a{LIST_SEPARATOR}b", None, f"a{LIST_SEPARATOR}None", ""]
    assert _visibility_text(crafted.column("visibility")) == ["a,b", None, "a,None", ""]
