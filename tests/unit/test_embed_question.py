"""query/retrieve.py embed_question: a compile starts the question's vector first, on the route
pool, and loads no model where no route needs one."""

from __future__ import annotations

import numpy as np
import pytest

import query.retrieve
from memc.home import MemcHome
from query.config import QueryConfig
from query.retrieve import embed_question


@pytest.fixture
def home(tmp_path):
    return MemcHome.resolve(tmp_path / "home").ensure()


def test_no_model_is_loaded_for_an_index_never_built_or_no_vector_route(home, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(query.retrieve, "question_embedder", refuse)
    assert embed_question(home, "Where does Elena live?", QueryConfig(), None, None) == (None, None)
    home.vectors.mkdir(parents=True, exist_ok=True)  # an index built (its directory made by a build)
    assert embed_question(home, "Where does Elena live?", QueryConfig(vector_weight=0), None, None) == (None, None)


def test_the_vector_is_under_way_with_the_embedder_the_compile_goes_on_with(home):
    home.vectors.mkdir(parents=True, exist_ok=True)
    embedder, future = embed_question(home, "Where does Elena live?", QueryConfig(), None, None)
    assert embedder is not None and future is not None
    got = np.asarray(future.result())
    assert np.allclose(got, np.asarray(embedder.encode(["Where does Elena live?"])[0]), atol=1e-6)
    # an unbuilt index with a patched tail (entries past its watermark) still needs the vector
    other = MemcHome.resolve(home.root.parent / "other").ensure()
    assert embed_question(other, "Where?", QueryConfig(), embedder, (0, 5))[1] is not None
