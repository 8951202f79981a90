"""A memory home whose ledger and evidence index are on object storage (MEMC_STORAGE=s3://..., a
real Ceph RGW on loopback): the demo's ingest, build, ask (and an ask from a second node with
read-only credentials) and an erasure through the CLI, with
nothing of the ledger on the local disk but dbt's mirror of its committed batches, and nothing of
the index (docs/scale.md). After the erasure no object version under the prefix,
the LanceDB tables' included, holds the erased turn's bytes.

Cost: Ceph's start (16-31 s, shared with the engine lane's S3 tests when they run in the same
process) plus two builds of the team corpus (~60-90 s each on 2 loaded cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import SAMPLES

pytestmark = pytest.mark.s3


def _memc(home: Path, env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), *args], env=env,
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        print(r.stdout, r.stderr, sep="\n")  # the whole story; the assertion shows its tail
    assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-3000:])
    return r


def _keys(client, bucket: str, prefix: str) -> list[str]:
    return [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for o in page.get("Contents", [])]


def _objects(client, bucket: str, prefix: str) -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for v in page.get("Versions", []):
            out[f"{v['Key']}@{v['VersionId']}"] = client.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"].read()
    return out


def test_a_home_with_its_ledger_on_s3_ingests_builds_answers_and_forgets(ceph_rgw, tmp_path):
    prefix = uuid.uuid4().hex
    env = {**os.environ, **ceph_rgw.env(), "MEMC_STORAGE": f"s3://{ceph_rgw.bucket}/{prefix}",
           "MEMC_PARQUET_COMPRESSION": "none"}  # uncompressed: a byte search can prove the erasure
    env.pop("MEMC_HOME", None)
    home = tmp_path / "home"
    client = ceph_rgw.client()

    _memc(home, env, "ingest", str(SAMPLES / "team"), "--scope", "team", "--visibility", "public")
    stats = json.loads(_memc(home, env, "ledger", "stats", "--json").stdout)
    assert stats["root"] == f"s3://{ceph_rgw.bucket}/{prefix}/ledger" and stats["head_seq"] > 0 and stats["bytes"] > 0, stats
    assert not list((home / "ledger").glob("*.parquet")), "a batch was written to the local disk"

    _memc(home, env, "build", "--quiet")
    mirror = sorted(p.name for p in (home / "warehouse" / "ledger_mirror").glob("*.parquet"))
    files = json.loads(_memc(home, env, "ledger", "stats", "--json").stdout)["files"]  # dreaming appended
    assert len(mirror) == files and not list((home / "ledger").glob("*.parquet")), mirror  # one file per committed batch
    # the evidence index beside the ledger on S3 (views/vectors_s3.py), its watermark with it
    index = [k for k in _keys(client, ceph_rgw.bucket, prefix) if k.startswith(f"{prefix}/vectors/evidence__")]
    assert any("/_versions/" in k for k in index) and any(k.endswith(".lance") for k in index), index
    # the claim sentences are a part of their own (views/vectors.py KIND_PARTS), there too
    assert any(k.startswith(f"{prefix}/vectors/evidence_claims__") for k in _keys(client, ceph_rgw.bucket, prefix))
    assert f"{prefix}/vectors/_watermark.json" in _keys(client, ceph_rgw.bucket, prefix)  # kept with the index
    assert not [p for p in (home / "vectors").rglob("*") if p.is_file()]
    # the views built as files, published beside them (views/published.py); dbt's DuckDB file stays
    views = [k.removeprefix(f"{prefix}/views/") for k in _keys(client, ceph_rgw.bucket, f"{prefix}/views/")]
    for published in ("warehouse/marts/state_current.parquet", "warehouse/_watermark.json", "graph/_watermark.json",
                      "claims/entities/aliases.parquet", "profile/dossiers/_watermark.json"):
        assert published in views, (published, views)
    assert any(k.startswith("claims/extractor=") and k.endswith("/claims.parquet") for k in views), views
    assert not [k for k in views if "duckdb" in k or k.startswith(("warehouse/dbt/", "warehouse/ledger_mirror/"))], views
    ask = _memc(home, env, "ask", "Where does Elena live now?", "--as", "tomasz", "--scope", "team", "--json")
    ctx = json.loads(ask.stdout)
    assert any(f["predicate"] == "lives_in" and "Berlin" in f["object"] for f in ctx["state"]), ctx["state"]
    assert all(v["lag_entries"] == 0 for v in ctx["staleness"].values()), ctx["staleness"]  # views at the S3 head
    # another node: a home of its own, nothing built there, credentials that may only read the
    # bucket (a write, even the ledger's conditional-put probe, is refused); its evidence comes
    # from the index on S3
    reader = {**env, **ceph_rgw.reader()}
    refused = subprocess.run([sys.executable, "-c", "import boto3; boto3.client('s3').put_object("
                              f"Bucket='{ceph_rgw.bucket}', Key='{prefix}/x', Body=b'1')"], env=reader, capture_output=True, text=True)
    assert refused.returncode != 0 and "AccessDenied" in refused.stderr, refused.stderr[-500:]  # the credentials are read-only
    other = json.loads(_memc(tmp_path / "node2", reader, "ask", "Where does Elena live now?", "--as", "tomasz",
                             "--scope", "team", "--json").stdout)
    assert any("Berlin" in json.dumps(item) for item in other["items"]), other["items"]
    assert other["staleness"]["evidence_index"]["lag_entries"] == 0, other["staleness"]
    # and what holds now, from the marts the build published: the same facts as on the builder
    assert [(f["predicate"], f["object"]) for f in other["state"]] == [(f["predicate"], f["object"]) for f in ctx["state"]]
    assert all(v["lag_entries"] == 0 for v in other["staleness"].values()), other["staleness"]
    listed = json.loads(_memc(tmp_path / "node2", reader, "claims", "--admin", "--json").stdout)
    assert listed and listed == json.loads(_memc(home, env, "claims", "--admin", "--json").stdout)
    assert not (tmp_path / "node2" / "config" / "home.id").exists()  # asking made no id and claimed nothing
    # and reads the ledger: its checks and counts need no write (no conditional-put probe)
    head = json.loads(_memc(home, env, "ledger", "stats", "--json").stdout)["head_seq"]
    assert json.loads(_memc(tmp_path / "node2", reader, "ledger", "stats", "--json").stdout)["head_seq"] == head
    assert "ok" in _memc(tmp_path / "node2", reader, "ledger", "verify").stdout.lower()

    # Erase the Lisbon turn: no object or version under the prefix, no mirror file, keeps its words.
    entries = [json.loads(line) for line in _memc(home, env, "ledger", "export").stdout.splitlines()]
    lisbon = [e for e in entries if "Lisbon" in (e.get("content") or "")]
    assert lisbon, "the sample corpus has a Lisbon turn"
    words = lisbon[0]["content"].encode()
    # and the sentence of the claim drawn from it, in the claims' part of the index
    drawn = [c for c in listed if c["source_entry_id"] == lisbon[0]["entry_id"] and c["predicate"] == "lives_in"]
    assert drawn, "the Lisbon turn yields a lives_in claim"
    sentence = f"{drawn[0]['subject']} lives in {drawn[0]['object']} (since".encode()
    stored = _objects(client, ceph_rgw.bucket, prefix)
    assert any(words in body for body in stored.values())  # positive controls
    assert any(sentence in body for key, body in stored.items() if "/vectors/evidence_claims__" in key), sentence
    _memc(home, env, "forget", "--entry", lisbon[0]["entry_id"], "--reason", "test", "--by", "admin")
    left = [k for k, body in _objects(client, ceph_rgw.bucket, prefix).items() if words in body or sentence in body]
    assert not left, f"erased bytes still stored: {left}"
    assert not [p for p in (home / "warehouse").rglob("*.parquet") if words in p.read_bytes()]
    # the other node held copies of the views with the erased words (a claim's quote of the turn,
    # in the claims it pulled, uncompressed); its next ask removes them
    quotes = [c["quote"].encode() for c in listed if c["source_entry_id"] == lisbon[0]["entry_id"]]
    assert quotes, "a claim is drawn from the Lisbon turn"
    words = quotes[0]
    assert [p for p in (tmp_path / "node2").rglob("*") if p.is_file() and words in p.read_bytes()]  # positive control
    again = json.loads(_memc(tmp_path / "node2", reader, "ask", "Where does Elena live now?", "--as", "tomasz",
                             "--scope", "team", "--json").stdout)
    assert any(f["predicate"] == "lives_in" and "Berlin" in f["object"] for f in again["state"]), again["state"]
    left = [p for p in (tmp_path / "node2").rglob("*") if p.is_file() and words in p.read_bytes()]
    assert not left, left
    verify = _memc(home, env, "ledger", "verify")
    assert "ok" in verify.stdout.lower(), verify.stdout
