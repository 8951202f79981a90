"""The view assets through real Dagster runs on a synthetic home (real ledger, LanceDB, Kùzu, MiniLM):
an append of 1% embeds only the new rows, a model change swaps in a whole new table, deleting the
views and rebuilding gives identical results, and the view checks fail on crafted bad data."""

from __future__ import annotations

import json
import shutil

import dagster as dg
import numpy as np
import pyarrow as pa
import pytest
from views_home import T0, conversation_entries, make_home, write_marts

from catalog.resources import EmbedderResource, MemcResource
from ledger import Ledger, NewEntry
from views.evidence_schema import META_VERSION
from views.marts import ENTITIES, GRAPH_MENTIONS, mart_path
from views.vectors import table_parts

N = 400  # ledger entries; 1% = 4


@pytest.fixture(scope="module")
def embedder():
    from views.embedder import Embedder

    e = Embedder()
    e.encode(["warm up"])  # the model loads once for the module
    return e


class PermutedModel:
    """Another 'model': the real vectors with their dimensions permuted (still unit length), so a
    test can tell which model embedded each stored row."""

    model_name = "all-MiniLM-L6-v2"
    model_version = "permuted-minilm==2.0"
    dim = 384
    PERM = np.random.default_rng(0).permutation(384)

    def __init__(self, inner, fail_after: int | None = None) -> None:
        self.inner = inner
        self.fail_after = fail_after
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("the new model crashed half-way")
        return self.inner.encode(texts)[:, self.PERM]


class PermutedEmbedderResource(EmbedderResource):
    fail: bool = False

    def get(self):
        from views.embedder import Embedder

        # A failing model crashes on its second call: after one part of the index is embedded.
        return PermutedModel(Embedder(), fail_after=1 if self.fail else None)


def assets_and_checks():
    import assets.graph
    import assets.retrieval
    import assets.skills
    import assets.units
    import checks.skills
    import checks.views

    return [*assets.retrieval.ASSETS, *assets.units.ASSETS, *assets.graph.ASSETS, *assets.skills.ASSETS, *checks.views.CHECKS, *checks.skills.CHECKS]


def run(home, *, embedder_resource=None, select=None, raise_on_error=True):
    defs = assets_and_checks()
    selection = None if select is None else dg.AssetSelection.assets(*select)
    return dg.materialize(
        defs,
        selection=selection,
        resources={"memc": MemcResource(home_dir=str(home.root)), "embedder": embedder_resource or EmbedderResource()},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=raise_on_error,
    )


def meta(result, key: str) -> dict:
    mats = [m for m in result.get_asset_materialization_events() if m.asset_key.to_user_string() == key]
    assert mats, f"{key} was not materialized"
    return {k: v.value for k, v in mats[-1].materialization.metadata.items()}


def checks(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def home(tmp_path_factory, embedder):
    h = make_home(tmp_path_factory.mktemp("views") / "home", n=N)
    r = run(h)
    assert r.success
    assert all(checks(r).values()), checks(r)
    return h


def snapshot(home, embedder) -> dict:
    from views.build import graph_store
    from views.vectors import LanceVectorStore

    store = LanceVectorStore(str(home.vectors))
    out = {}
    for q in ("Who talks about the Lisbon office move?", "ORD-10017", "peanut allergy lunch"):
        v = embedder.encode([q])[0]
        for who in (["ana"], ["nobody"]):
            hits = store.search(vector=v, text=q, principals=who, scope=None, k=8)
            out[(q, who[0])] = [(h["route"], h["id"], round(h["score"], 5)) for h in hits]
    g = graph_store(home)
    try:
        for scope in ("team", "ops"):
            out[("pagerank", scope)] = g.pagerank(scope)
            out[("communities", scope)] = g.communities(scope)
        out["counts"] = g.counts()
    finally:
        g.close()
    return out


# -- incremental embedding ----------------------------------------------------------------------------


def test_first_build_reports_every_row_embedded_and_dreams(home):
    ledger = Ledger(home.ledger)
    derived = [e for e in ledger.iter_entries() if e["kind"] == "derived_claim"]
    preds = {json.loads(e["attributes"])["predicate"] for e in derived}
    assert preds == {"centrality", "community"}
    from views.vectors import LanceVectorStore

    store = LanceVectorStore(str(home.vectors))
    # N message chunks + 4 claim sentences (one a retraction)
    assert store.count() == N + 4
    texts = {h["text"] for h in store.search(text="Lisbon", principals=["public"], scope=None, k=50, kinds=["claim"])}
    assert any(t.startswith("Ana lives in Lisbon (since ") for t in texts), texts


def test_an_append_of_one_percent_embeds_only_the_new_rows(home):
    ledger = Ledger(home.ledger)
    new = conversation_entries(N // 100, start=10_000, seed=99)
    assert ledger.append(new).appended == 4
    write_marts(home)
    r = run(home, select=[dg.AssetKey("evidence_index")])
    m = meta(r, "evidence_index")
    assert m["newly_embedded"] == 4, m
    assert m["added"] == 4 and m["deleted"] == 0 and m["mode"] == "sync"
    assert m["ledger_watermark"] == ledger.head()
    assert all(checks(r).values()), checks(r)
    # And nothing at all when nothing changed.
    again = meta(run(home, select=[dg.AssetKey("evidence_index")]), "evidence_index")
    assert again["newly_embedded"] == 0 and again["added"] == 0


# -- rebuild from the ledger -----------------------------------------------------------------------------


def test_deleting_the_views_and_rebuilding_gives_identical_results(home, embedder):
    run(home)  # graph and dreaming catch up with the append above
    head = Ledger(home.ledger).head()
    before = snapshot(home, embedder)
    assert before[("pagerank", "team")] and before[("communities", "team")]
    shutil.rmtree(home.vectors)
    shutil.rmtree(home.graph)
    shutil.rmtree(home.skills)
    r = run(home)
    assert r.success and all(checks(r).values()), checks(r)
    assert "skills_sound" in checks(r), "the skills view is rebuilt from the ledger with the others"
    assert meta(r, "centrality")["appended"] == 0, "dreaming at the same inputs must append nothing"
    assert Ledger(home.ledger).head() == head
    after = snapshot(home, embedder)
    for key in before:
        assert after[key] == before[key], key


# -- model change ------------------------------------------------------------------------------------------


def test_a_failed_model_upgrade_leaves_the_old_table_whole(home):
    from views.embedder import EMBEDDING_MODEL_VERSION
    from views.vectors import LanceVectorStore

    store = LanceVectorStore(str(home.vectors))
    ids, version = store.ids(), store.model_info()
    r = run(home, embedder_resource=PermutedEmbedderResource(fail=True), select=[dg.AssetKey("evidence_index")], raise_on_error=False)
    assert not r.success
    assert store.model_info() == version and version["embedding_model_version"] == EMBEDDING_MODEL_VERSION
    # every part still the old model's: the claims' part is not swapped in before the turns' are embedded
    assert {p: store.db.open_table(p).schema.metadata[META_VERSION].decode() for p in table_parts("evidence")} == dict.fromkeys(table_parts("evidence"), EMBEDDING_MODEL_VERSION)
    assert store.ids() == ids
    assert sorted(p.name for p in home.vectors.iterdir() if not p.name.startswith("_")) == ["evidence.lance", "evidence_claims.lance"], "no staging left"


def test_a_model_change_swaps_in_a_whole_new_table(home, embedder):
    from views.vectors import EmbeddingModelMismatch, LanceVectorStore

    store = LanceVectorStore(str(home.vectors))
    rows = store.count()
    r = run(home, embedder_resource=PermutedEmbedderResource(), select=[dg.AssetKey("evidence_index")], raise_on_error=False)
    m = meta(r, "evidence_index")
    assert m["model_changed"] and m["mode"] == "swap"
    assert m["newly_embedded"] == len({t for t in _texts(store)}), "every text re-embedded by the new model"
    assert store.model_info()["embedding_model_version"] == "permuted-minilm==2.0"
    # Every stored vector is the new model's, in every part (the turns', the claims'): no row of
    # the old model survived the swap.
    tbl = pa.concat_tables(store.db.open_table(part).to_arrow() for part in table_parts("evidence"))
    stored = np.stack(tbl.column("vector").to_numpy(zero_copy_only=False))
    expected = embedder.encode(tbl.column("text").to_pylist())[:, PermutedModel.PERM]
    assert stored.shape == (rows, 384) and np.allclose(stored, expected, atol=1e-5)
    assert {p: store.db.open_table(p).schema.metadata[META_VERSION] for p in table_parts("evidence")} == dict.fromkeys(table_parts("evidence"), b"permuted-minilm==2.0")
    # A query vector of the old model is refused, not ranked against the new model's vectors.
    q = embedder.encode(["Lisbon office"])[0]
    with pytest.raises(EmbeddingModelMismatch):
        store.search(vector=q, principals=[], scope=None, k=3, model_version=embedder.model_version)
    # The vector check fails while the table's model differs from the code's...
    assert checks(r) == {**checks(r), "evidence_vectors_sound": False}
    # ...and the next build with the code's model swaps back, re-embedding everything once more.
    back = run(home, select=[dg.AssetKey("evidence_index")])
    assert meta(back, "evidence_index")["model_changed"] and all(checks(back).values())


def _texts(store):
    return [t for part in table_parts("evidence") for t in store.db.open_table(part).to_arrow().column("text").to_pylist()]


# -- checks fail on crafted bad data ---------------------------------------------------------------------


def _check(fn, home) -> dg.AssetCheckResult:
    return fn(memc=MemcResource(home_dir=str(home.root)))


def test_checks_fail_on_crafted_bad_data(home, tmp_path):
    import checks.views as cv
    from views.vectors import LanceVectorStore

    for fn in cv.CHECKS:
        assert _check(fn, home).passed, fn.check_key.name

    # Work on a copy: the module's home stays good for the other tests.
    bad = type(home)(tmp_path / "bad")
    shutil.copytree(home.root, bad.root, ignore=shutil.ignore_patterns("dagster"))

    # evidence index: one row deleted (by id), one stray row, one non-unit vector
    store = LanceVectorStore(str(bad.vectors))
    tbl = store.db.open_table("evidence")
    victim = store.ids()[0]
    stray = tbl.search().where(f"id = '{victim}'").limit(1).to_arrow()
    tbl.delete(f"id = '{victim}'")
    assert not _check(cv.evidence_index_matches_sources, bad).passed
    stray = stray.set_column(stray.schema.get_field_index("id"), "id", [["ch_stray"]])
    vec = np.full((1, 384), 0.5, dtype=np.float32)  # norm 9.8, not a unit vector
    from views.evidence_schema import fixed_vectors as _fixed_vectors

    stray = stray.set_column(stray.schema.get_field_index("vector"), "vector", _fixed_vectors(vec, 384))
    tbl.add(stray.select(tbl.schema.names).cast(tbl.schema))
    res = _check(cv.evidence_index_matches_sources, bad)
    assert not res.passed and "ch_stray" in res.metadata["first_problems"].value
    res = _check(cv.evidence_vectors_sound, bad)
    assert not res.passed and res.metadata["non_unit_vectors"].value == 1
    # the stray row is also outside the full-text index until it is rebuilt
    assert "not in the full-text index" in res.metadata["first_problems"].value

    # memory units: a unit naming a turn the index does not hold (its id no longer its members' hash)
    import pyarrow.parquet as pq

    from views.units import UNITS_FILE

    units = pq.read_table(bad.units / UNITS_FILE).to_pylist()
    assert units, "the crafted home's speakers return to their topics across sessions"
    units[0]["entry_ids"] = units[0]["entry_ids"] + ["e_not_in_the_index"]
    pq.write_table(pa.Table.from_pylist(units, schema=pq.read_schema(bad.units / UNITS_FILE)), bad.units / UNITS_FILE)
    res = _check(cv.memory_units_sound, bad)
    problems = res.metadata["first_problems"].value
    assert not res.passed and "e_not_in_the_index not in the index" in problems and "not the hash of its members" in problems

    # graph: a mart row that never reached the graph, then a node whose evidence is not in the ledger

    mentions = pq.read_table(mart_path(bad, GRAPH_MENTIONS))
    pq.write_table(mentions.slice(1), mart_path(bad, GRAPH_MENTIONS))
    from views.build import build_graph

    build_graph(bad)
    pq.write_table(mentions, mart_path(bad, GRAPH_MENTIONS))
    res = _check(cv.entity_graph_matches_marts, bad)
    assert not res.passed and "MENTIONS" in res.metadata["first_problems"].value
    ents = pq.read_table(mart_path(bad, ENTITIES)).to_pylist()
    ents[0]["evidence"] = ents[0]["evidence"] + ["e_not_in_the_ledger"]

    pq.write_table(pa.Table.from_pylist(ents), mart_path(bad, ENTITIES))
    build_graph(bad)
    res = _check(cv.entity_graph_traces_to_ledger, bad)
    assert not res.passed and "e_not_in_the_ledger" in res.metadata["first_problems"].value

    # derived claims: one naming no graph node, one with a watermark above its inputs'
    assert _check(cv.derived_claims_sound, bad).passed
    ledger = Ledger(bad.ledger)
    src = next(e for e in ledger.iter_entries() if e["kind"] == "message")
    ledger.append(
        [
            NewEntry(kind="derived_claim", scope="team", content="claim: Ghost centrality = 0.5", valid_at=T0,
                     attributes={"subject": "Ghost", "subject_id": "ent_ghost", "predicate": "centrality", "object": "0.5"},
                     derived_from=(src["entry_id"],), producer="dreaming", producer_version="1.1", watermark=src["seq"]),
            NewEntry(kind="derived_claim", scope="team", content="claim: Ana centrality = 0.9", valid_at=T0,
                     attributes={"subject": "Ana", "subject_id": ents[0]["entity_id"], "predicate": "centrality", "object": "0.9"},
                     derived_from=(src["entry_id"],), producer="dreaming", producer_version="1.1", watermark=ledger.head() + 5),
        ]
    )
    res = _check(cv.derived_claims_sound, bad)
    problems = res.metadata["first_problems"].value
    assert not res.passed and "names no graph node (ent_ghost)" in problems and "above the ledger head" in problems
