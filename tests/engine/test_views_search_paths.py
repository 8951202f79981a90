"""Fast paths of the evidence view that must never change an answer.

- Scalar indexes (views/vectors.py SCALAR_INDEXES) change how fast LanceDB evaluates the
  mandatory prefilter, never what a search returns: every search and session_rows call answers
  exactly as on an unindexed twin (a memory:// store of the same rows), including rows with empty
  or missing visibility, entity ids, session ids and valid times.
- One LanceDB connection per directory in a process: store objects share it, and after a sync or
  a rebuild (the erasure path: a new table swapped in), in this process or another, a shared
  connection answers exactly as a fresh one, erased rows included.
- A table version's rows held in memory (views/evidence_rows.py): searches that select their
  hits' ids and take the rows from memory, and windows read from it, answer with exactly the
  rows LanceDB gives, whole, for every asker; a new version (a sync) or a swapped-in table (an
  erasure's rebuild) is read again, so no erased row is ever served. (The memory:// twin holds
  none: the twin comparisons above compare the held path with LanceDB's own.)"""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memc.ids import text_hash
from views.evidence_schema import evidence_table
import views.vectors as vectors_module
from views.vectors import _HELD, SCALAR_INDEXES, LanceVectorStore, table_parts

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
WORDS = "order shipped Lisbon Berlin budget review coffee allergy release invoice garden offsite moved joined".split()
VIS = [["public"], ["alice"], ["bob"], ["alice", "bob"], [], None]


class HashEmbedder:
    """Deterministic unit vectors from the text's hash: no model needed to compare two stores."""

    model_name = "hash"
    model_version = "hash-1"
    dim = 16

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.stack([np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=self.dim) for t in texts]) if texts else np.zeros((0, self.dim))
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def _rows(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + f" #{i % 40}"
        rows.append({
            "id": f"c_{text_hash(f'{i}:{text}')[:24]}", "entry_id": f"e_{i:05d}", "seq": i + 1,
            "kind": rng.choice(["message", "message", "document", "claim"]), "scope": rng.choice(["acme", "home"]),
            "session_id": rng.choice([None, *[f"s{j}" for j in range(12)]]), "actor": "ana", "source_ref": f"r{i}",
            "visibility": rng.choice(VIS), "valid_at": rng.choice([None, T0 + timedelta(days=rng.randrange(60))]),
            "recorded_at": T0 + timedelta(days=70), "text": text, "content_hash": text_hash(text),
            "entity_ids": rng.choice([None, [], ["ent_a"], ["ent_b", "ent_c"]]), "claim_id": None,
        })  # fmt: skip
    return rows


def _key(hits: list[dict]) -> list[tuple]:
    return [(h["id"], round(h.get("score", 0.0), 5), h.get("rank")) for h in hits]


def _answers(store: LanceVectorStore, emb: HashEmbedder) -> list:
    # Every combination of principals, scope, kinds and filter, for two words by text and by
    # vector: 224 calls (four words were 416, about 20 s a pass on 2 loaded cores, six passes
    # a test, for no filter path more)
    out = []
    vectors = emb.encode(WORDS[:2])
    for principals in (["alice"], ["bob"], ["carol"], ["alice", "bob"]):
        for scope in (None, "acme"):
            for kinds in (None, ("message", "document")):
                for extra in ({}, {"entity_ids": ["ent_a", "ent_c"]}, {"valid_between": (T0 + timedelta(days=10), T0 + timedelta(days=30))}):
                    for q, v in zip(WORDS[:2], vectors):
                        out.append(_key(store.search(text=q, principals=principals, scope=scope, k=7, kinds=kinds, **extra)))
                        out.append(_key(store.search(vector=v, principals=principals, scope=scope, k=7, kinds=kinds, **extra)))
                out.append(_key(store.session_rows(session_ids=["s1", "s3", "s7", "nope"], principals=principals, scope=scope, kinds=kinds)))
                out.append(_key(store.entry_rows(entry_ids=["e_00003", "e_00150", "e_00399", "e_99999"], principals=principals, scope=scope, kinds=kinds)))
    return out


@pytest.fixture
def emb() -> HashEmbedder:
    return HashEmbedder()


def test_indexed_table_answers_like_an_unindexed_twin(tmp_path, emb):
    disk, twin = LanceVectorStore(tmp_path / "vectors"), LanceVectorStore("memory://")
    rows = evidence_table(_rows(400))
    disk.sync(rows, emb)
    twin.sync(rows, emb)
    have = {tuple(ix.columns) for ix in disk._open("evidence").list_indices()}
    assert {(c,) for c, _ in SCALAR_INDEXES} <= have
    assert not any(str(ix.index_type).upper() != "FTS" for ix in twin._open("evidence").list_indices())
    assert _answers(disk, emb) == _answers(twin, emb)

    # Grown and shrunk by a sync: indexes rebuilt, answers still the same.
    grown = _rows(600, seed=2)[100:]
    disk.sync(evidence_table(grown), emb)
    twin.sync(evidence_table(grown), emb)
    assert _answers(disk, emb) == _answers(twin, emb)


def test_a_table_without_indexes_gets_them_on_its_next_sync(tmp_path, emb):
    store = LanceVectorStore(tmp_path / "vectors")
    rows = evidence_table(_rows(120))
    store.sync(rows, emb)
    tbl = store._open("evidence")
    for ix in tbl.list_indices():
        if str(ix.index_type).upper() != "FTS":
            tbl.drop_index(ix.name)
    before = _answers(store, emb)
    again = store.sync(rows, emb)  # nothing changed: no re-embedding, no full-text rebuild
    assert again["newly_embedded"] == 0 and not again["fts_reindexed"]
    assert {(c,) for c, _ in SCALAR_INDEXES} <= {tuple(ix.columns) for ix in store._open("evidence").list_indices()}
    assert _answers(store, emb) == before


def test_rebuild_swaps_in_an_indexed_table(tmp_path, emb):
    store = LanceVectorStore(tmp_path / "vectors")
    rows = evidence_table(_rows(150))
    store.rebuild(rows, emb)
    assert {(c,) for c, _ in SCALAR_INDEXES} <= {tuple(ix.columns) for ix in store._open("evidence").list_indices()}


def _fresh(store: LanceVectorStore) -> LanceVectorStore:
    """The same directory through a brand-new connection, bypassing the shared one."""
    import lancedb

    twin = LanceVectorStore(store.uri)
    twin._db = lancedb.connect(store.uri)
    twin._connection = lambda table=None: twin._db  # type: ignore[method-assign]
    return twin


def test_store_objects_share_one_connection(tmp_path, emb):
    a, b = LanceVectorStore(tmp_path / "vectors"), LanceVectorStore(str(tmp_path / "vectors"))
    a.sync(evidence_table(_rows(50)), emb)
    a._open("evidence"), b._open("evidence")
    assert a.db is b.db


def test_a_shared_connection_answers_like_a_fresh_one_after_syncs_and_rebuilds(tmp_path, emb):
    rows = _rows(300)
    reader = LanceVectorStore(tmp_path / "vectors")
    LanceVectorStore(tmp_path / "vectors").sync(evidence_table(rows), emb)
    assert _answers(reader, emb) == _answers(_fresh(reader), emb)
    # another store object in this process syncs fewer rows, then rebuilds (erasure) with fewer still
    LanceVectorStore(tmp_path / "vectors").sync(evidence_table(rows[:220]), emb)
    assert _answers(reader, emb) == _answers(_fresh(reader), emb)
    LanceVectorStore(tmp_path / "vectors").rebuild(evidence_table(rows[:150]), emb)
    after = _answers(reader, emb)
    assert after == _answers(_fresh(reader), emb)
    gone = {r["id"] for r in rows[150:]}
    assert not gone & {h[0] for part in after for h in part}


def _in_another_process(uri, call: str) -> None:
    """``LanceVectorStore(uri).<call>`` run by a new interpreter (this module imported as ``t``)."""
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]];"
        "import test_views_search_paths as t; from views.vectors import LanceVectorStore; from views.evidence_schema import evidence_table;"
        f"LanceVectorStore(sys.argv[3]).{call}"
    )
    here = __import__("pathlib").Path(__file__).resolve()
    subprocess.run([sys.executable, "-c", code, str(here.parent), str(here.parents[2]), str(uri)], check=True)


def test_a_shared_connection_sees_a_rebuild_by_another_process(tmp_path, emb):
    rows = _rows(200)
    reader = LanceVectorStore(tmp_path / "vectors")
    reader.sync(evidence_table(rows), emb)
    before = _answers(reader, emb)
    _in_another_process(tmp_path / "vectors", "rebuild(evidence_table(t._rows(200)[:90]), t.HashEmbedder())")
    after = _answers(reader, emb)
    assert after != before and after == _answers(_fresh(reader), emb)
    gone = {r["id"] for r in rows[90:]}
    assert not gone & {h[0] for part in after for h in part}


def test_a_table_handle_kept_open_sees_another_process_sync_in_place(tmp_path, emb):
    # A sync writes a new version into the same directory (no new connection, unlike a rebuild):
    # the handle this process keeps open must answer from it, as a freshly opened one would.
    rows = _rows(200)
    reader = LanceVectorStore(tmp_path / "vectors")
    reader.sync(evidence_table(rows[:130]), emb)
    reader.sync(evidence_table(rows[:120]), emb)  # a deletion first: its folder is made once, and changes the table's identity
    before = _answers(reader, emb)
    opened = reader._open("evidence")
    _in_another_process(tmp_path / "vectors", "sync(evidence_table(t._rows(200)[60:]), t.HashEmbedder())")
    assert reader._open("evidence") is opened  # the same handle: nothing reopened it
    after = _answers(reader, emb)
    assert after != before and after == _answers(_fresh(reader), emb)
    found = {h[0] for part in after for h in part}
    assert not {r["id"] for r in rows[:60]} & found and {r["id"] for r in rows[120:]} & found


def _whole(store: LanceVectorStore, emb: HashEmbedder) -> list:
    """Searches (both routes, every filter), session windows and entries' rows for every asker,
    rows whole."""
    out = []
    vector = emb.encode(WORDS[:1])[0]
    sessions = ["s1", "s3", "s7", "s 2!", "nope"]  # "s 2!" is no id: matched after a scan
    entries = ["e_00001", "e_00007", "e_00042", "e_00130", "nope"]
    for principals in (["alice"], ["bob"], ["carol"], ["alice", "bob"]):
        for scope in (None, "acme"):
            for kinds in (None, ("message",), ("message", "document")):
                out.append(store.session_rows(session_ids=sessions, principals=principals, scope=scope, kinds=kinds))
                out.append(store.entry_rows(entry_ids=entries, principals=principals, scope=scope, kinds=kinds))
                for extra in ({}, {"entity_ids": ["ent_a"]}, {"valid_between": (T0 + timedelta(days=10), T0 + timedelta(days=30))}):
                    out.append(store.search(text=WORDS[0], vector=vector, principals=principals, scope=scope, k=9, kinds=kinds, **extra))
    return out


def test_rows_held_in_memory_answer_like_lancedb(tmp_path, emb, monkeypatch):
    rows = _rows(400)
    for r in rows[::25]:
        r["session_id"] = "s 2!"
    for r in rows[3::40]:
        r["entry_id"] = "e_00007"  # one entry, several rows: a turn, its chunks, the claims drawn from it
    store = LanceVectorStore(tmp_path / "vectors")
    mine = lambda: [key for key in _HELD if key[0] == str(tmp_path / "vectors") and _HELD[key][4] is not None]  # noqa: E731

    def held_and_read() -> tuple[list, list]:
        monkeypatch.setenv("MEMC_EVIDENCE_ROWS_HELD", "0")  # off: every row from LanceDB
        read = _whole(store, emb)
        assert not mine()
        monkeypatch.delenv("MEMC_EVIDENCE_ROWS_HELD")
        return _whole(store, emb), read

    store.sync(evidence_table(rows), emb)
    held, read = held_and_read()
    assert held == read and sum(map(len, held)) > 300
    # each part of the table (the turns', the claims') held at its version
    assert {key[1]: _HELD[key][2] for key in mine()} == {part: store._open(part).version for part in table_parts("evidence")}

    # A sync makes a new version: read again, the new rows in and the dropped ones out.
    grown = rows[:300] + _rows(500, seed=3)[300:]
    store.sync(evidence_table(grown), emb)
    held, read = held_and_read()
    assert held == read
    assert {r["id"] for part in held for r in part} & {r["id"] for r in grown[300:]}

    # An erasure's rebuild swaps in another table: nothing of the retired one is served.
    store.rebuild(evidence_table(grown[:150]), emb)
    held, read = held_and_read()
    assert held == read
    assert not {r["id"] for part in held for r in part} & {r["id"] for r in grown[150:]}

    # A table larger than the limit is read from LanceDB each time, and answers the same (the
    # limit holds per part: here the turns' 108 rows and the claims' 42).
    monkeypatch.setenv("MEMC_EVIDENCE_ROWS_HELD", "20")
    assert _whole(store, emb) == read and not mine()


def test_a_vector_tie_at_the_kth_place_is_completed_from_the_held_rows_as_lancedb_would(tmp_path, emb, monkeypatch):
    # Claims repeat a sentence: rows of one text share one vector, so a tie at the k-th place is
    # common. Held, the tie group comes from the held rows of that text, filtered in Python as
    # LanceDB filters (visibility, scope, kind, entities, valid time); read, _top_k fetches again.
    # Both keep the k best, ties by id, whatever order the table was written in.
    rows = _rows(300)
    same = "Fenvek works at Helio Labs (since 2025-01-03)"
    for i, r in enumerate(rows[:120]):
        r.update(text=same, content_hash=text_hash(same), id=f"c_{text_hash(f'{i}:{same}')[:24]}")
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(rows), emb)
    vector = emb.encode([same])[0]

    def ties() -> list:
        out = []
        for principals in (["alice"], ["bob"], ["alice", "bob"]):
            for scope in (None, "acme"):
                for kinds in (None, ("claim",), ("message", "document")):
                    for extra in ({}, {"entity_ids": ["ent_a"]}, {"valid_between": (T0 + timedelta(days=5), T0 + timedelta(days=40))}):
                        for k in (3, 9, 40):
                            out.append(_key(store.search(vector=vector, principals=principals, scope=scope, k=k, kinds=kinds, **extra)))
        return out

    fetched: list[int] = []
    real_top_k = vectors_module._top_k
    monkeypatch.setattr(vectors_module, "_top_k", lambda fetch, k, first=None: real_top_k(lambda n: fetched.append(n) or fetch(n), k, first))
    held = ties()
    assert not fetched, "held: every tie completed from memory, no second fetch"
    assert store.hold() == 300
    monkeypatch.setenv("MEMC_EVIDENCE_ROWS_HELD", "0")
    read = ties()
    assert fetched, "read from LanceDB: ties fetched again"
    assert held == read
    # the tie is real: the best k of a visible group of one text are its smallest ids
    best = store.search(vector=vector, principals=["alice", "bob"], scope=None, k=9, kinds=("claim",))
    group = sorted(r["id"] for r in rows[:120] if r["kind"] == "claim" and set(r["visibility"] or ()) & {"public", "alice", "bob"})
    assert len(group) > 9 and [h["id"] for h in best] == group[:9]


def test_a_held_row_id_names_the_same_row_in_every_later_version_or_none(tmp_path, emb, monkeypatch):
    """views/evidence_rows.py `by_row_id`: a search on held rows selects LanceDB's row ids alone
    and takes the rows from memory. Read the ids a search returns on later versions (rows edited,
    dropped and added by a sync, then the table compacted) against the rows held at the first:
    each names the row it named then, or none held (and the search reads that row from LanceDB)."""
    from views.evidence_rows import ROW_ID, EvidenceRows
    from views.evidence_schema import HIT_COLUMNS

    rows = _rows(300)
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(rows), emb)
    held = EvidenceRows(store._scan(store._open("evidence"), list(HIT_COLUMNS), row_ids=True))

    def named_alike() -> tuple[int, int]:
        now = store._scan(store._open("evidence"), ["id", "text"], row_ids=True)
        same = 0
        for row_id, row, text in zip(now.column(ROW_ID).to_pylist(), now.column("id").to_pylist(), now.column("text").to_pylist()):
            got = held.by_row_id([row_id])
            if got is not None:
                assert (got[0]["id"], got[0]["text"]) == (row, text)
                same += 1
        return same, now.num_rows

    assert named_alike() == (held.rows.num_rows, held.rows.num_rows)
    edited = [{**r, "text": f"{r['text']} again", "content_hash": text_hash(f"{r['text']} again")} if i % 7 == 0 else r for i, r in enumerate(rows[50:])]
    store.sync(evidence_table(edited + _rows(400, seed=3)[300:]), emb)
    same, total = named_alike()
    assert 0 < same < total  # the rows kept still named by their ids; the edited and new ones not held
    store.compact()
    named_alike()
    assert held.by_row_id([]) == [] and held.by_row_id([2**63]) is None

    # A search on the rows the store holds selects the row ids alone, and answers as LanceDB does.
    selected: list[list[str]] = []
    real = vectors_module._searched
    monkeypatch.setattr(vectors_module, "_searched", lambda tbl, build, columns, score: selected.append(columns) or real(tbl, build, columns, score))
    vector = emb.encode(WORDS[:1])[0]
    found = [store.search(text=WORDS[0], vector=vector, principals=["alice"], scope=None, k=9)]
    assert selected and all(columns == [ROW_ID] for columns in selected), selected
    monkeypatch.setenv("MEMC_EVIDENCE_ROWS_HELD", "0")
    assert [store.search(text=WORDS[0], vector=vector, principals=["alice"], scope=None, k=9)] == found


def test_a_pinned_store_reads_each_tables_version_once_and_serves_nothing_retired(tmp_path, emb, monkeypatch):
    """views/vectors.py `pinned`: the store a compile reads through asks LanceDB for each table's
    version and schema once (each a call into LanceDB's loop), not on every search and lookup.
    A search still runs on the newest version (a row added since is found, read from the
    table), and after an erasure's rebuild nothing of the retired table is served."""
    from lancedb.table import LanceTable

    rows = _rows(300)
    store = LanceVectorStore(tmp_path / "vectors")
    store.sync(evidence_table(rows), emb)
    vector = emb.encode(WORDS[:1])[0]
    reads: list[str] = []
    for prop in ("version", "schema"):
        real = getattr(LanceTable, prop)
        monkeypatch.setattr(LanceTable, prop, property(lambda self, real=real, prop=prop: reads.append(prop) or real.fget(self)))

    def lookups(store: LanceVectorStore) -> list:
        out = []
        for principals in (["alice"], ["bob"]):
            out.append(store.search(text=WORDS[0], vector=vector, principals=principals, scope=None, k=9))
            out.append(store.search(vector=vector, principals=principals, scope="acme", k=9, kinds=("claim",)))
            out.append(store.session_rows(session_ids=["s1", "s3"], principals=principals, scope=None))
            out.append(store.entry_rows(entry_ids=["e_00001", "e_00042"], principals=principals, scope=None))
        return out

    unpinned = lookups(store)
    assert reads.count("version") >= 8  # every search and lookup asks
    reads.clear()
    pinned = LanceVectorStore(tmp_path / "vectors").pinned()
    assert lookups(pinned) == unpinned
    assert reads.count("version") <= len(table_parts("evidence")) and reads.count("schema") <= len(table_parts("evidence")), reads

    # A row written after the pin: the pinned store's search runs on the newest version and finds it.
    new = {**rows[0], "id": "c_written_after_the_pin", "entry_id": "e_99999", "visibility": ["public"], "kind": "message",
           "text": f"{WORDS[0]} {WORDS[0]} {WORDS[0]}", "content_hash": text_hash(f"{WORDS[0]} {WORDS[0]} {WORDS[0]}")}  # fmt: skip
    LanceVectorStore(tmp_path / "vectors").sync(evidence_table([*rows, new]), emb)
    hits = pinned.search(text=WORDS[0], principals=["alice"], scope=None, k=3)
    assert hits[0]["id"] == new["id"] and hits[0]["text"] == new["text"]

    # An erasure's rebuild swaps another table in: the pinned store serves none of the retired rows.
    kept = rows[150:]
    LanceVectorStore(tmp_path / "vectors").rebuild(evidence_table(kept), emb)
    gone = {r["id"] for r in rows[:150]} | {new["id"]}
    found = lookups(pinned)
    assert sum(map(len, found)) and not gone & {r["id"] for part in found for r in part}
