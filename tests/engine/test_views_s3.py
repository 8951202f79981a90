"""Views published to object storage (memc/objectstore.py ``ObjectFolder``, views/published.py)
against a real Ceph RGW on loopback: what one node pushes another pulls byte for byte; only
changed files travel; steps that write different partitions on different machines never delete
each other's; a file removed or a view dropped (an erasure) leaves every node at its next pull;
what stays local stays local; and one home publishes a prefix, any other is refused by name.

Cost: Ceph's start when no other test of this worker started it (16-31 s), then a few seconds.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from memc.home import MemcHome
from memc.objectstore import RECORD, ObjectFolder
from views import published

pytestmark = pytest.mark.s3


@pytest.fixture
def s3(ceph_rgw, monkeypatch):
    """(uri, client): a fresh prefix on the session's RGW; this process reads the AWS variables."""
    for k, v in ceph_rgw.env().items():
        monkeypatch.setenv(k, v)
    return f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}", ceph_rgw.client()


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".objects.")}


def _keys(client, uri: str) -> list[str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return sorted(v["Key"][len(prefix) + 1:] for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix + "/")
                  for v in page.get("Versions", []) + page.get("DeleteMarkers", []))


def test_what_one_node_pushes_another_pulls_and_only_changes_travel(s3, tmp_path) -> None:
    uri, client = s3
    folder = ObjectFolder(f"{uri}/warehouse", skip=("memc.duckdb*", "dbt/*"))
    a, b = tmp_path / "a", tmp_path / "b"
    _write(a, "marts/state_current.parquet", b"PAR1 Berlin")
    _write(a, "marts/timeline.parquet", b"PAR1 timeline")
    _write(a, "_watermark.json", b'{"watermark": 7}')
    _write(a, "memc.duckdb", b"dbt's working state")  # stays on the node
    _write(a, "dbt/run-1/run_results.json", b"{}")
    assert folder.push(a) == {"uploaded": 3, "deleted": 0}
    assert _keys(client, uri) == ["warehouse/_watermark.json", "warehouse/marts/state_current.parquet", "warehouse/marts/timeline.parquet"]

    assert folder.pull(b) == {"downloaded": 3, "removed": 0}
    assert _files(b) == {k: v for k, v in _files(a).items() if not k.startswith(("memc.duckdb", "dbt/"))}
    assert folder.push(a) == {"uploaded": 0, "deleted": 0} and folder.pull(b) == {"downloaded": 0, "removed": 0}

    _write(a, "marts/state_current.parquet", b"PAR1 Berlin, then Porto")  # one mart rebuilt
    assert folder.push(a) == {"uploaded": 1, "deleted": 0}
    assert folder.pull(b) == {"downloaded": 1, "removed": 0}
    assert (b / "marts/state_current.parquet").read_bytes() == b"PAR1 Berlin, then Porto"

    (a / "marts/timeline.parquet").unlink()  # a mart dropped from the project
    assert folder.push(a) == {"uploaded": 0, "deleted": 1}
    assert folder.pull(b) == {"downloaded": 0, "removed": 1}
    assert not (b / "marts/timeline.parquet").exists()
    assert not [p for p in b.rglob("*.part")]  # no download left half-way


def test_steps_on_two_machines_publish_their_own_partitions(s3, tmp_path) -> None:
    uri, _ = s3
    folder = ObjectFolder(f"{uri}/claims")
    w1, w2, reader = tmp_path / "w1", tmp_path / "w2", tmp_path / "reader"
    _write(w1, "entities/aliases.parquet", b"aliases")
    folder.push(w1, ("entities",))
    # Both workers pull before their step, then each writes its own day, and each publishes that
    # day: neither deletes the other's, though neither has the other's day on its disk.
    folder.pull(w2)
    _write(w1, "extractor=rules-0.2.0/day=2024-05-01/claims.parquet", b"day 1")
    _write(w2, "extractor=rules-0.2.0/day=2024-05-02/claims.parquet", b"day 2")
    folder.push(w1, ("extractor=rules-0.2.0/day=2024-05-01",))
    folder.push(w2, ("extractor=rules-0.2.0/day=2024-05-02", "extractor=rules-0.2.0/_watermark.json"))
    folder.pull(reader)
    assert sorted(_files(reader)) == ["entities/aliases.parquet", "extractor=rules-0.2.0/day=2024-05-01/claims.parquet",
                                      "extractor=rules-0.2.0/day=2024-05-02/claims.parquet"]
    # a day re-extracted empty (its entries erased) leaves the store when its step publishes it
    (w1 / "extractor=rules-0.2.0/day=2024-05-01/claims.parquet").unlink()
    assert folder.push(w1, ("extractor=rules-0.2.0/day=2024-05-01",)) == {"uploaded": 0, "deleted": 1}
    folder.pull(reader)
    assert sorted(_files(reader)) == ["entities/aliases.parquet", "extractor=rules-0.2.0/day=2024-05-02/claims.parquet"]


def test_a_local_change_not_yet_pushed_stays_until_the_object_changes(s3, tmp_path) -> None:
    uri, _ = s3
    folder = ObjectFolder(f"{uri}/graph")
    builder, other = tmp_path / "builder", tmp_path / "other"
    _write(builder, "kuzu/graph.kuzu", b"v1")
    folder.push(builder)
    _write(builder, "kuzu/graph.kuzu", b"v2, being written")  # the graph step has not published yet
    assert folder.pull(builder) == {"downloaded": 0, "removed": 0}
    assert (builder / "kuzu/graph.kuzu").read_bytes() == b"v2, being written"
    folder.pull(other)
    _write(other, "kuzu/graph.kuzu", b"v3")  # another machine's step published after it
    folder.push(other)
    folder.pull(builder)
    assert (builder / "kuzu/graph.kuzu").read_bytes() == b"v3"


def test_a_dropped_view_leaves_every_node_at_its_next_pull(s3, tmp_path, monkeypatch) -> None:
    uri, client = s3
    monkeypatch.setenv("MEMC_STORAGE", uri)
    home, node2 = MemcHome(tmp_path / "home").ensure(), MemcHome(tmp_path / "node2")
    _write(home.marts, "state_current.parquet", b"PAR1 the erased turn's words")
    _write(home.graph, "kuzu/graph.kuzu", b"graph")
    published.publish(home, "warehouse")
    published.publish(home, "graph")
    published.pull(node2)
    assert (node2.marts / "state_current.parquet").exists() and (node2.graph / "kuzu/graph.kuzu").exists()
    assert not node2.claims.exists()  # nothing published, nothing made
    _write(node2.marts, "mine.parquet", b"a file this node made itself")
    published.drop()
    assert [k for k in _keys(client, uri) if not k.endswith("_builder.json")] == []  # every object and version
    published.pull(node2)
    assert _files(node2.marts) == {"mine.parquet": b"a file this node made itself"}
    assert not (node2.graph / "kuzu/graph.kuzu").exists()


def test_one_home_publishes_a_prefix_and_pulls_are_spaced(s3, tmp_path, monkeypatch) -> None:
    uri, _ = s3
    monkeypatch.setenv("MEMC_STORAGE", uri)
    builder, other = MemcHome(tmp_path / "builder").ensure(), MemcHome(tmp_path / "other").ensure()
    assert published.built_elsewhere(other) is None  # nobody publishes yet: any home may build
    _write(builder.skills, "skills.parquet", b"skills")
    published.publish(builder, "skills")
    assert published.built_elsewhere(builder) is None  # the builder builds
    assert published.built_elsewhere(other)["builder"] == builder.home_id  # a serving node pulls instead
    assert published.built_elsewhere(MemcHome(tmp_path / "reader")) is not None and not (tmp_path / "reader").exists()
    _write(other.skills, "skills.parquet", b"other skills")
    with pytest.raises(published.ViewsBuiltElsewhere, match=f"built by home {builder.home_id} at .*{builder.root.name}"):
        published.publish(other, "skills")
    reader = MemcHome(tmp_path / "reader")
    assert published.pull(reader, ("skills",), max_age=60) == {"skills": {"downloaded": 1, "removed": 0}}
    _write(builder.skills, "skills.parquet", b"skills, rebuilt")
    published.publish(builder, "skills")
    assert published.pull(reader, ("skills",), max_age=60) == {}  # pulled a moment ago: not listed again
    assert published.pull(reader, ("skills",)) == {"skills": {"downloaded": 1, "removed": 0}}
    assert (reader.skills / "skills.parquet").read_bytes() == b"skills, rebuilt"
    assert not (reader.root / "config" / "home.id").exists()  # reading makes no id and claims nothing
    assert RECORD in os.listdir(reader.skills)


def test_no_storage_setting_no_objects(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("MEMC_STORAGE", raising=False)
    home = MemcHome(tmp_path / "home").ensure()
    assert published.publish(home, "warehouse") is None and published.pull(home) is None
    assert published.built_elsewhere(home) is None
    assert published.views_uri() is None
