"""The evidence index on object storage (views/vectors_s3.py) against a real Ceph RGW on loopback:
what one node builds another reads; a rebuild (the erasure path) publishes a whole new table
before readers can see it and then leaves no object, and no object version, of the old one; a
table a crashed rebuild left behind is removed by the next; reading never creates anything; one
home builds a prefix and any other home's write is refused, naming the builder.

Cost: Ceph's start when no other test of this worker started it (16-31 s), then ~20-40 s for
LanceDB's commits and index builds over HTTP.
"""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from test_vectors import CORPUS, row  # the local store's rows and texts, so both stores get the same
from views.evidence_schema import evidence_table
from views.vectors_s3 import PHYSICAL_SEP, S3LanceVectorStore

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def embedder():
    from views.embedder import Embedder

    e = Embedder()
    e.encode(["warm up"])
    return e


@pytest.fixture
def s3(ceph_rgw, monkeypatch):
    """(uri, client): a fresh prefix on the session's RGW; this process reads the AWS variables."""
    for k, v in ceph_rgw.env().items():
        monkeypatch.setenv(k, v)
    return f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}/vectors", ceph_rgw.client()


def _keys(client, uri: str) -> dict[str, bytes]:
    """Every object version under the store's prefix, with its bytes."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    out = {}
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for v in page.get("Versions", []):
            out[f"{v['Key']}@{v['VersionId']}"] = client.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"].read()
    return out


def _rows(texts: list[str]) -> pa.Table:
    return evidence_table([row(i, t) for i, t in enumerate(texts)])


def test_what_one_node_builds_another_reads(s3, embedder) -> None:
    uri, _ = s3
    writer = S3LanceVectorStore(uri)
    assert writer.count() == 0 and writer.search(text="Lisbon", principals=["public"], scope=None, k=3) == []
    stats = writer.sync(_rows(CORPUS), embedder)
    assert stats["rows"] == len(CORPUS) and stats["newly_embedded"] == len(CORPUS)

    reader = S3LanceVectorStore(uri)  # another process's store object: only the URI in common
    assert reader.count() == len(CORPUS) and reader.table_names() == ["evidence"]
    hits = reader.search(text="ORD-99812", principals=["public"], scope=None, k=3)
    assert hits and "ORD-99812" in hits[0]["text"]
    near = reader.search(vector=embedder.encode(["sunny weather in Portugal"])[0], principals=["public"], scope=None, k=1)
    assert "Lisbon" in near[0]["text"]
    health = reader.health()
    assert health["fts_index"] and health["fts_unindexed_rows"] == 0 and health["wrong_dimension"] == 0

    # an incremental sync on S3: one row gone, one new, nothing else embedded again
    stats = writer.sync(_rows([*CORPUS[:-1], "Bruno booked the ferry to Porto for Friday."]), embedder)
    assert (stats["deleted"], stats["newly_embedded"]) == (1, 1), stats
    assert reader.search(text="ferry Porto", principals=["public"], scope=None, k=1)[0]["text"].startswith("Bruno booked")
    assert reader.bytes_stored() > 0
    # the watermark is kept with the index, so the other node reads how current it is
    assert reader.read_watermark() is None and reader.built() and not S3LanceVectorStore(uri + "x").built()
    writer.write_watermark("evidence_index", 42, rows=len(CORPUS))
    assert reader.read_watermark()["watermark"] == 42
    writer.clear_watermark()
    assert reader.read_watermark() is None


def test_rebuild_publishes_a_whole_table_then_leaves_no_byte_of_the_old_one(s3, embedder) -> None:
    uri, client = s3
    canary = f"canary{uuid.uuid4().hex[:10]}"
    store = S3LanceVectorStore(uri)
    store.sync(_rows([*CORPUS, f"Ana whispered the code word {canary} to Bruno."]), embedder)
    old = store._physical("evidence")
    assert any(canary.encode() in body for body in _keys(client, uri).values())  # positive control
    opened_before = S3LanceVectorStore(uri)
    assert opened_before.search(text=canary, principals=["public"], scope=None, k=1)
    window = lambda: opened_before.session_rows(session_ids=["sess_1"], principals=["public"], scope=None)  # noqa: E731
    assert any(canary in r["text"] for r in window())  # held in memory by this process now

    stats = store.rebuild(_rows(CORPUS), embedder)  # what an erasure does
    assert stats["deleted"] == 1 and stats["newly_embedded"] == 0 and stats["fts_reindexed"]
    new = store._physical("evidence")
    assert new != old and new.startswith("evidence" + PHYSICAL_SEP)
    keys = _keys(client, uri)
    assert not [k for k, body in keys.items() if canary.encode() in body], "erased bytes still stored"
    assert not [k for k in keys if f"/{old}.lance/" in k], "an object of the old table is left"
    # every version LanceDB keeps of the live table, read through LanceDB (the bytes may be encoded)
    tbl = store._open("evidence")
    for v in tbl.list_versions():
        tbl.checkout(v["version"] if isinstance(v, dict) else v.version)
        assert canary not in json.dumps(tbl.to_arrow().drop_columns(["vector"]).to_pylist(), default=str)
    # a store object that read the old table answers from the new one when asked again
    assert opened_before.search(text=canary, principals=["public"], scope=None, k=1) == []
    assert opened_before.count() == len(CORPUS)
    # nor from what it held of the old table (a new physical table, whatever its version number)
    assert len(window()) == len(CORPUS) and not any(canary in r["text"] for r in window())


def test_a_table_a_crashed_rebuild_left_is_removed_and_never_read(s3, embedder) -> None:
    uri, client = s3
    store = S3LanceVectorStore(uri)
    store.sync(_rows(CORPUS[:3]), embedder)
    # a rebuild killed before its pointer: a whole physical table no reader is pointed at
    orphan = f"evidence{PHYSICAL_SEP}deadbeef0000"
    store._connection().create_table(orphan, data=store._open("evidence").to_arrow())
    assert S3LanceVectorStore(uri).count() == 3 and S3LanceVectorStore(uri).table_names() == ["evidence"]
    store.rebuild(_rows(CORPUS[:2]), embedder)
    assert not [k for k in _keys(client, uri) if f"/{orphan}.lance/" in k]
    store.drop()
    assert store.count() == 0
    left = _keys(client, uri)
    assert [k.split("@")[0].rsplit("/", 1)[-1] for k in left] == ["_builder.json"], left  # who builds, no evidence


def test_one_home_builds_a_prefix_and_the_others_only_read(s3, embedder) -> None:
    from views.vectors_s3 import IndexBuiltElsewhere

    uri, client = s3
    a = S3LanceVectorStore(uri, builder="home-a", where="node-a:/srv/memc")
    a.sync(_rows(CORPUS[:4]), embedder)
    a.write_watermark("evidence_index", 4)
    b = S3LanceVectorStore(uri, builder=lambda: "home-b", where="node-b:/srv/memc")
    assert b.count() == 4 and b.read_watermark()["watermark"] == 4  # reading needs no claim
    for write in (lambda: b.sync(_rows(CORPUS), embedder), lambda: b.rebuild(_rows(CORPUS), embedder),
                  lambda: b.write_watermark("evidence_index", 8), lambda: b.compact()):
        with pytest.raises(IndexBuiltElsewhere, match="built by home home-a at node-a:/srv/memc.*node-b:/srv/memc"):
            write()
    assert a.count() == 4 and a.read_watermark()["watermark"] == 4  # nothing of b's landed
    # an erasure may drop the index from any home; its builder writes it again
    b.drop()
    assert b.count() == 0
    a.rebuild(_rows(CORPUS[:2]), embedder)
    assert b.count() == 2
