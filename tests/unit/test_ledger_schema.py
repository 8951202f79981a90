"""The append's columnar fast path against the row path it replaced: the same ids, keys and
content hashes (content-addressed ids must never change, or a re-ingest would duplicate), and the
same Arrow table, for entries that exercise every rule of the canonical JSON."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

from ledger.schema import LEDGER_SCHEMA, NewEntry, entries_table
from memc.ids import content_id, digest, text_hash

WHEN = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def _variety() -> list[NewEntry]:
    tricky = 'quote " backslash \\ newline \n tab \t nul \x00 unit \x1f line-sep \u2028 é ß 漢字 😀'
    return [
        NewEntry(kind="message", content="plain", valid_at=WHEN),
        NewEntry(kind="message", content="plain", valid_at=WHEN, idempotency_key="explicit-1"),
        NewEntry(kind="document", content=tricky, valid_at=WHEN.replace(microsecond=123456), actor=tricky[:40],
                 session_id="s\"1", source_ref="D1:3", source_uri="file:///x y.txt"),
        NewEntry(kind="event", content="", valid_at=datetime(2024, 5, 1, 12, 0),  # naive: taken as UTC
                 attributes={"z": 1, "a": [1.5, None, True], "nested": {"b": "é", "a": float("inf")}, "ü": "x"}),
        NewEntry(kind="derived_claim", content="c", valid_at=WHEN - timedelta(days=400), derived_from=("e_2", "e_1"),
                 producer="memc:dreaming", producer_version="1.0", watermark=42, confidence=0.25,
                 visibility=("bob", "alice", "bob"), scope="team.a"),
        NewEntry(kind="observation", content="written by a principal", valid_at=WHEN, ingested_by="alice"),
        NewEntry(kind="observation", content="written by the operator", valid_at=WHEN, ingested_by="memc:cli"),
        NewEntry(kind="message", content="x" * 5000, valid_at=datetime(1, 1, 1, tzinfo=timezone.utc)),
    ]


@pytest.mark.parametrize("i", range(len(_variety())))
def test_derived_equals_the_properties_and_memc_ids(i):
    e = _variety()[i]
    ch, key, eid = e.derived()
    assert ch == e.content_hash == text_hash(e.content)
    assert key == e.key
    assert eid == e.entry_id
    # and against memc.ids directly, so a change to the properties cannot hide a drift
    assert key == (e.idempotency_key or "k_" + digest(*e.identity())[:32])
    assert eid == content_id("e", key, *e.identity())


def test_entries_table_equals_the_row_path():
    entries = _variety()
    recorded = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    fast = entries_table(entries, [e.derived() for e in entries], 7, recorded)
    rows = pa.Table.from_pylist([e.to_row(7 + i, recorded) for i, e in enumerate(entries)], schema=LEDGER_SCHEMA)
    assert fast.schema.equals(LEDGER_SCHEMA)
    assert fast.equals(rows)
    assert fast.column("seq").to_pylist() == list(range(7, 7 + len(entries)))


def test_attributes_that_json_cannot_encode_fail_as_before():
    e = NewEntry(kind="event", content="x", valid_at=WHEN, attributes={"when": WHEN})
    with pytest.raises(TypeError, match="not JSON serializable"):
        e.to_row(1, WHEN)
    with pytest.raises(TypeError, match="not JSON serializable"):
        entries_table([e], [e.derived()], 1, WHEN)
