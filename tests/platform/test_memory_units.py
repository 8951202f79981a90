"""Consolidated memory units on the sample corpus built through Dagster: the memory_units asset
materializes with its check, regrouping the index gives the same units, and a hit expanded into
its unit shows turns from other sessions only where the asker may see them."""

from __future__ import annotations

from memc.atomic import read_parquet
from query import compile_context
from query.config import QueryConfig
from views.build import vector_store
from views.units import KINDS, UNITS_FILE, group_units

# One item, no windows: what the unit adds is what the context shows beyond the hit.
NARROW = QueryConfig(k=1, window_before=0, window_after=0, unit_seeds=5, unit_turns=3)


def test_memory_units_materialize_with_their_check(built_home):
    home, report = built_home
    assert "memory_units" in report.materialized
    assert report.checks.get("memory_units:memory_units_sound") is True, report.checks
    built = read_parquet(home.units / UNITS_FILE)
    assert built.num_rows, "Elena's turns on one topic recur across the sample's sessions"
    assert built.equals(group_units(vector_store(home).kind_rows(KINDS))), "regrouping the index gives the same units"


def _unit_refs(ctx) -> list[str]:
    return [r for it in ctx.items if it.unit_id for r in it.source_refs]


def test_a_hit_brings_turns_of_its_topic_from_other_sessions_as_the_asker_may_see_them(built_home):
    home, _ = built_home
    tomasz = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team", config=NARROW)
    assert tomasz.items[0].source_ref == "ET2:1"
    shown = _unit_refs(tomasz)
    assert shown and all(r.startswith("ET") and r != "ET2:1" for r in shown), shown  # public team turns only
    unit = next(it for it in tomasz.items if it.unit_id)
    assert unit.routes == ["unit"] and len(unit.turn_times) == len(unit.entry_ids)
    assert "same topic, other sessions" in tomasz.render()
    # Elena may see her private talk with Priya: her unit on where she works reaches it.
    elena = compile_context("Where is Elena working?", "elena", home=home, scope="team", config=NARROW)
    assert "EP1:2" in _unit_refs(elena)
    tomasz_work = compile_context("Where is Elena working?", "tomasz", home=home, scope="team", config=NARROW)
    assert "EP1:2" not in _unit_refs(tomasz_work) and tomasz_work.acl_dropped == 0


def test_units_are_off_in_the_default_preset(built_home):
    home, _ = built_home
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team", config=QueryConfig(k=1, window_before=0, window_after=0))
    assert not _unit_refs(ctx)
