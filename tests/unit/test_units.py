"""Consolidated memory units (views/units.py) and their expansion in a context (query/units.py):
one speaker's turns on one topic across sessions grouped by their vectors; an expansion shows
only the turns the asker may see, never one an item already shows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa

from memc.ids import content_id
from query.config import QueryConfig
from query.context import ContextItem, item_lines
from query.units import with_units
from views.units import Units, group_units, units_sound

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
CAMPING, POTTERY, OTHER = np.eye(3, 8, dtype=np.float32)


def _row(eid, actor, session, day, vector, scope="s"):
    v = vector + np.float32(0.01) * np.eye(1, 8, 3 + (day % 5), dtype=np.float32)[0]
    return {"entry_id": eid, "scope": scope, "actor": actor, "session_id": session, "valid_at": T0 + timedelta(days=day), "seq": day, "id": f"r{eid}", "vector": list(v / np.linalg.norm(v))}


ROWS = [
    _row("m1", "Mira", "S1", 1, CAMPING),
    _row("m2", "Mira", "S2", 40, CAMPING),
    _row("m3", "Mira", "S3", 90, CAMPING),
    _row("m4", "Mira", "S1", 2, POTTERY),
    _row("m5", "Mira", "S3", 91, POTTERY),
    _row("m6", "Mira", "S2", 41, OTHER),  # alone on its topic: no unit
    _row("j1", "Jonas", "S1", 3, CAMPING),  # another speaker: never in Mira's units
    _row("j2", "Jonas", "S1", 4, CAMPING),  # one session only: a window shows that already
]


def test_one_speakers_topic_across_sessions_is_one_unit():
    units = group_units(pa.Table.from_pylist(ROWS))
    got = {tuple(u["entry_ids"]): u for u in units.to_pylist()}
    assert set(got) == {("m1", "m2", "m3"), ("m4", "m5")}, "by speaker and topic, in time order; one-session groups dropped"
    camping = got[("m1", "m2", "m3")]
    assert camping["actor"] == "Mira" and camping["sessions"] == 3
    assert camping["unit_id"] == content_id("u", "s", "Mira", "m1", "m2", "m3"), "content-addressed"
    assert units_sound(units, {r["entry_id"] for r in ROWS}).passed
    assert group_units(pa.Table.from_pylist(list(reversed(ROWS)))).equals(units), "the same rows in any order: the same units"


def test_a_turn_counts_once_a_missing_session_is_one_and_a_nameless_speaker_sorts_first():
    rows = [
        *ROWS,
        dict(_row("m1", "Mira", "S1", 1, CAMPING), id="rm1-chunk2", vector=list(POTTERY)),  # a second chunk: not the turn's
        _row("n1", None, None, 5, CAMPING),  # no speaker's name, no session: one session, not none
        _row("n2", None, "S4", 60, CAMPING),
        _row("n3", None, None, 61, POTTERY),
        _row("x1", "Mira", "S1", 7, CAMPING, scope="other"),  # another scope: never with Mira's own
        _row("x2", "Mira", "S5", 80, CAMPING, scope="other"),
    ]
    units = group_units(pa.Table.from_pylist(rows)).to_pylist()
    assert [(u["scope"], u["actor"], u["entry_ids"], u["sessions"]) for u in units] == [
        ("other", "Mira", ["x1", "x2"], 2),
        ("s", None, ["n1", "n2"], 2),
        ("s", "Mira", ["m1", "m2", "m3"], 3),
        ("s", "Mira", ["m4", "m5"], 2),
    ]
    assert units[1]["first_valid_at"] == T0 + timedelta(days=5) and units[1]["last_valid_at"] == T0 + timedelta(days=60)


def test_the_index_s_fixed_size_vectors_group_as_lists_do():
    # The index stores vectors as fixed-size lists, read as one matrix (no Python list per vector);
    # sliced into several chunks, as a scan of several fragments returns them.
    lists = pa.Table.from_pylist(ROWS)
    fixed = lists.set_column(lists.schema.get_field_index("vector"), "vector", lists.column("vector").cast(pa.list_(pa.float32(), 8)))
    chunked = pa.concat_tables([fixed.slice(0, 3), fixed.slice(3)])
    assert chunked.column("vector").num_chunks == 2
    assert group_units(chunked).equals(group_units(lists))
    assert group_units(fixed.slice(0, 0)).num_rows == 0


def test_a_new_turn_groups_again_only_its_speakers_block(monkeypatch):
    # A block's labels are kept by a digest of its vectors: after one new turn of Mira's, only
    # her block is clustered again, and the units are what a grouping from nothing gives.
    from sklearn.cluster import AgglomerativeClustering

    from views import units as view

    fits = []
    fit = AgglomerativeClustering.fit_predict
    monkeypatch.setattr(AgglomerativeClustering, "fit_predict", lambda self, x, *a, **k: fits.append(len(x)) or fit(self, x, *a, **k))
    view._LABELS.clear()
    group_units(pa.Table.from_pylist(ROWS))
    assert sorted(fits) == [2, 6]  # Jonas's two turns, Mira's six
    fits.clear()
    grown = [*ROWS, _row("m7", "Mira", "S4", 120, POTTERY)]
    units = group_units(pa.Table.from_pylist(grown))
    assert fits == [7], "Mira's block alone"
    assert {tuple(u["entry_ids"]) for u in units.to_pylist()} == {("m1", "m2", "m3"), ("m4", "m5", "m7")}
    view._LABELS.clear()
    assert group_units(pa.Table.from_pylist(grown)).equals(units)
    fits.clear()
    group_units(pa.Table.from_pylist(grown), distance=0.25)
    assert sorted(fits) == [2, 7], "another distance: every block clustered again"


def test_the_audit_names_a_unit_whose_turn_left_the_index():
    units = group_units(pa.Table.from_pylist(ROWS))
    audit = units_sound(units, {r["entry_id"] for r in ROWS} - {"m2"})
    assert not audit.passed and any("m2" in p for p in audit.problems)


class _Index:
    """The evidence index's entry_rows with its visibility filter: only rows the principals may see."""

    def __init__(self, rows, hidden=()):
        self.rows, self.hidden = rows, set(hidden)
        self.asked = []

    def entry_rows(self, *, entry_ids, principals, scope, kinds, with_vectors):
        self.asked.append(sorted(entry_ids))
        return [
            {**r, "kind": "message", "text": f"{r['actor']}: turn {r['entry_id']}", "source_ref": r["entry_id"].upper(), "recorded_at": r["valid_at"]}
            for r in self.rows
            if r["entry_id"] in entry_ids and r["entry_id"] not in self.hidden
        ]


def _item(eid):
    return ContextItem(entry_id=eid, source_ref=eid.upper(), scope="s", kind="message", actor="Mira", text="x", valid_at=T0.isoformat(), recorded_at=T0.isoformat(), routes=["fulltext"], score=1.0, entry_ids=[eid])


UNITS = Units({"m1": "u1", "m2": "u1", "m3": "u1", "m4": "u2", "m5": "u2"}, {"u1": ["m1", "m2", "m3"], "u2": ["m4", "m5"]})


def test_a_hit_brings_its_units_other_turns_right_after_it():
    cfg = QueryConfig(unit_seeds=5, unit_turns=2)
    out = with_units([_item("m2"), _item("j1")], UNITS, _Index(ROWS), CAMPING, ["eval"], "s", cfg)
    assert [it.entry_id for it in out][0] == "m2" and out[1].routes == ["unit"] and out[2].entry_id == "j1"
    unit = out[1]
    assert unit.entry_ids == ["m1", "m3"] and unit.unit_id == "u1", "the other turns, in time order, not the hit again"
    assert len(unit.turn_times) == 2
    lines = item_lines(2, unit, "eval")
    assert "same topic, other sessions" in lines[0] and lines[1].lstrip().startswith("[2026-01-02 M1]")


def test_an_expansion_shows_only_what_the_asker_may_see_and_nothing_twice():
    cfg = QueryConfig(unit_seeds=5, unit_turns=5)
    out = with_units([_item("m2"), _item("m3")], UNITS, _Index(ROWS, hidden={"m1"}), CAMPING, ["eval"], "s", cfg)
    assert [it.routes for it in out] == [["fulltext"], ["fulltext"]], "m1 is hidden and m3 already shown: nothing to add"


def test_off_by_default_on_in_thorough():
    assert QueryConfig().unit_seeds == 0 and QueryConfig.preset("fast").unit_seeds == 0
    assert QueryConfig.preset("thorough").unit_seeds > 0
    out = with_units([_item("m2")], UNITS, _Index(ROWS), CAMPING, ["eval"], "s", QueryConfig())
    assert len(out) == 1
