"""What a serving process reads ahead of the first ask after a build (query.compile.prepare,
called by the keeper: api/keeper.py): the state index, the closings and the evidence rows it
holds. After it, a compile reads none of them again: each loader below is made to fail, and the
compile still answers, with the same context as one compiled without the warm-up."""

from __future__ import annotations

import pytest

import query.current
import views.state_index
import views.vectors
from memc import filecache
from query import compile_context, prepare

QUESTION = "Where does Elena live now?"


def _render(ctx) -> tuple:
    return [(it.entry_id, it.text) for it in ctx.items], [(f.subject, f.predicate, f.object) for f in ctx.state]


def test_after_prepare_the_compile_loads_nothing_again(built_home, monkeypatch):
    home = built_home[0]
    filecache.clear()
    views.vectors._HELD.clear()
    cold = _render(compile_context(QUESTION, "elena", home=home, scope="team"))

    filecache.clear()
    views.vectors._HELD.clear()
    prepare(home)
    assert any(held[4] is not None for held in views.vectors._HELD.values())

    def read_again(*args, **kwargs):
        pytest.fail("the compile read again what prepare had read")

    monkeypatch.setattr(views.state_index, "_index_marts", read_again)
    monkeypatch.setattr(query.current, "read_mart", read_again)
    monkeypatch.setattr(views.vectors, "EvidenceRows", read_again)
    assert _render(compile_context(QUESTION, "elena", home=home, scope="team")) == cold
