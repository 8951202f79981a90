"""The data-quality checks inside real Dagster runs: a failing blocking GX check stops the
materializations below it, names the failing rows, and leaves the ledger as it was; the
watermark-lag checks see a view fall behind the ledger head."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil

import dagster as dg
import pyarrow as pa
import pytest

import claims.extract
import claims.run
from memc.home import MemcHome

from conftest import REPO, SAMPLES

STG_CLAIMS = dg.AssetKey("stg_memc__claims")
# stg_memc__claims is the active version's slice of stg_memc__claims_all_versions, and its dbt
# relationship test reads the ledger staging model
STG = [dg.AssetKey("stg_memc__claims_all_versions"), STG_CLAIMS, dg.AssetKey("stg_memc__ledger_entries")]


def _ledger_digest(home: MemcHome) -> dict[str, str]:
    return {str(p.relative_to(home.ledger)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(home.ledger.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path, monkeypatch) -> MemcHome:
    # the runner points these at the home; monkeypatch restores them after the test
    for var in ("DAGSTER_HOME", "MEMC_HOME"):
        monkeypatch.setenv(var, "")
    monkeypatch.delenv("MEMC_EXTRACTOR", raising=False)
    from ingestion import ingest_paths
    from ledger import Ledger

    h = MemcHome.resolve(tmp_path / "home").ensure()
    ingest_paths(Ledger(h.ledger), [SAMPLES / "team" / "elena_tomasz.jsonl"], scope="team", visibility=("public",))
    return h


def test_a_failing_blocking_check_stops_the_views_below_and_leaves_the_ledger(home, monkeypatch):
    from catalog.keys import ENTITY_ALIASES
    from catalog.keys import CLAIMS
    from orchestration.runner import build

    real_extract = claims.extract.extract
    bad_ids: list[str] = []

    def buggy_extract(*args, **kwargs):
        # An extraction pass with a bug the validators do not catch: a confidence above 1.
        # (The quote and visibility stay right, so claims_provenance still passes: only GX sees it.)
        result = real_extract(*args, **kwargs)
        t = result.claims
        i = t.schema.get_field_index("confidence")
        values = t.column("confidence").to_pylist()
        values[0] = 1.7
        bad_ids.append(t.column("claim_id")[0].as_py())
        return dataclasses.replace(result, claims=t.set_column(i, t.schema.field(i), pa.array(values, pa.float64())))

    monkeypatch.setattr(claims.run, "extract", buggy_extract)  # the pass the claims asset runs
    before = _ledger_digest(home)
    report = build(home, selection=[ENTITY_ALIASES, CLAIMS, *STG])
    assert report.checks.get("claims:claims_expectations") is False, report.checks
    assert report.checks.get("claims:claims_provenance") is True, report.checks
    assert "claims" in report.materialized
    assert not {"stg_memc__claims", "stg_memc__claims_all_versions"} & set(report.materialized), "the blocking check did not stop the dbt models below claims"
    assert _ledger_digest(home) == before, "a check modified the ledger"

    # the check's metadata names the failing claim
    instance = dg.DagsterInstance.get()
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([dg.AssetCheckKey(CLAIMS, "claims_expectations")])
    evaluation = next(iter(record.values())).event.dagster_event.event_specific_data
    assert not evaluation.passed
    assert bad_ids[0] in evaluation.metadata["failing_claim_ids"].value
    assert "confidence in [0, 1]" in evaluation.metadata["failed"].value

    # the same selection with a sound extraction pass compiles the model below
    monkeypatch.setattr(claims.run, "extract", real_extract)
    again = build(home, selection=[ENTITY_ALIASES, CLAIMS, *STG])
    assert again.success and again.checks["claims:claims_expectations"], again.checks
    assert "stg_memc__claims" in again.materialized
    assert _ledger_digest(home) == before

    # the ledger's own suite, run in each build's run (orchestration/runner.py, _observed_run)
    led = instance.event_log_storage.get_latest_asset_check_execution_by_key([dg.AssetCheckKey(dg.AssetKey("ledger"), "ledger_expectations")])
    assert next(iter(led.values())).event.dagster_event.event_specific_data.passed


def test_a_ledger_failing_its_integrity_check_stops_everything_below_it(home, monkeypatch):
    """The ledger's checks are blocking and run in each build's own run (its observation is
    recorded without a run): when the ledger fails one, Dagster runs nothing below the ledger,
    and the build reports it. A first build, then one new message onto the built state (the
    build's one run with the claims of the new day only), and both with the ledger broken."""
    from datetime import datetime, timezone

    from ledger.schema import NewEntry
    from ledger.store import Ledger, VerifyReport
    from orchestration.runner import build

    assert build(home).success
    Ledger(home.ledger).append([NewEntry(kind="message", scope="team", actor="Elena", session_id="elena-tomasz:S3",
                                         content="I moved my desk to the third floor.", valid_at=datetime.now(timezone.utc))])
    head = Ledger(home.ledger).head()
    broken = VerifyReport(files=1, entries=head, head=head, problems=[f"seq {head}: checksum mismatch"])
    monkeypatch.setattr(Ledger, "verify", lambda self: broken)
    for _ in range(2):  # the second: nothing was compiled by the first, so everything is due again
        report = build(home)
        assert not report.success and report.checks.get("ledger:ledger_integrity") is False, report.checks
        assert report.materialized == [], report.materialized
        assert [s for s in report.failed_steps if "ledger_integrity" in s], report.failed_steps


def test_a_claim_quoting_a_pictures_caption_passes_the_provenance_checks(tmp_path, monkeypatch):
    """A turn that shares a picture gives `shared_photo`, one quoting the caption and one the
    speaker's words for it: the blocking provenance check and the GX suite find both quotes in
    the entry, in a real run."""
    for var in ("DAGSTER_HOME", "MEMC_HOME"):
        monkeypatch.setenv(var, "")  # as the home fixture: the runner points them at the home
    monkeypatch.delenv("MEMC_EXTRACTOR", raising=False)
    from catalog.keys import CLAIMS, ENTITY_ALIASES
    from claims.extractors.registry import active_extractor_key
    from claims.store import read_claims
    from ingestion import ingest_paths
    from ledger import Ledger
    from orchestration.runner import build

    h = MemcHome.resolve(tmp_path / "pictured").ensure()
    ingest_paths(Ledger(h.ledger), [REPO / "tests" / "fixtures" / "ingestion" / "conversation.jsonl"], scope="s", visibility=("public",))
    report = build(h, selection=[ENTITY_ALIASES, CLAIMS])
    assert report.checks.get("claims:claims_provenance") is True, report.checks
    assert report.checks.get("claims:claims_expectations") is True, report.checks
    shared = [c for c in read_claims(h.claims, active_extractor_key()).to_pylist() if c["predicate"] == "shared_photo"]
    # the caption's words, and the speaker's ("Small but sunny. Look at the view.")
    assert {(c["subject"], c["object"], c["quote"]) for c in shared} == {
        ("Ana", "red rooftops and a river at sunset", "a photo of red rooftops and a river at sunset"),
        ("Ana", "the view", "Look at the view"),
    }


def test_watermark_lag_check_sees_a_view_behind_the_ledger(home):
    from checks.lag import view_lag
    from claims.extract import CURRENT_RULES
    from claims.store import extractor_dir
    from ingestion import ingest_paths
    from ledger import Ledger
    from memc.watermark import write_watermark

    head = Ledger(home.ledger).head()
    never = view_lag(home, "evidence_index")
    assert never.watermark is None and never.entries_behind == head
    write_watermark(extractor_dir(home.claims, CURRENT_RULES.key), "claims", head)
    assert view_lag(home, "claims").entries_behind == 0
    ingest_paths(Ledger(home.ledger), [SAMPLES / "team" / "orders.jsonl"], scope="team", visibility=("public",))
    lag = view_lag(home, "claims")
    assert lag.watermark == head and lag.entries_behind == Ledger(home.ledger).head() - head > 0
    assert lag.seconds_behind >= 0 and lag.metadata()["entries_behind"] == lag.entries_behind
    shutil.rmtree(home.claims)


def test_the_provenance_check_names_each_claim_without_its_quote_source_or_visibility(home):
    """claims_provenance on crafted claims: a quote its entry never said, a source the ledger
    does not hold, and a claim visible to everyone from an entry only Elena may see."""
    from datetime import datetime, timezone

    import pyarrow.parquet as pq

    from catalog.keys import CLAIMS, ENTITY_ALIASES
    from catalog.resources import MemcResource
    from checks.claims import claims_provenance
    from claims.extractors.registry import active_extractor_key
    from claims.store import CLAIMS_FILE, day_dir, days
    from ledger import Ledger
    from ledger.schema import NewEntry
    from orchestration.runner import build

    assert build(home, selection=[ENTITY_ALIASES, CLAIMS]).success
    assert claims_provenance(memc=MemcResource(home_dir=str(home.root))).passed
    private = Ledger(home.ledger).append([NewEntry(kind="message", scope="team", actor="Elena", visibility=("elena",),
                                                   content="My salary is 70k.", valid_at=datetime.now(timezone.utc))]).entry_ids[0]  # fmt: skip
    key = active_extractor_key()
    path = day_dir(home.claims, key, days(home.claims, key)[0]) / CLAIMS_FILE
    table = pq.read_table(path)
    rows = table.to_pylist()
    good = len(rows)
    crafted = [
        dict(rows[0], claim_id="c_misquoted", quote="words nobody said"),
        dict(rows[0], claim_id="c_no_source", source_entry_id="e_not_in_the_ledger"),
        dict(rows[0], claim_id="c_too_broad", source_entry_id=private, quote="salary is 70k", visibility=["public"]),
        dict(rows[0], claim_id="c_as_private", source_entry_id=private, quote="salary is 70k", visibility=["elena"]),
    ]
    pq.write_table(pa.Table.from_pylist(rows + crafted, schema=table.schema), path)
    res = claims_provenance(memc=MemcResource(home_dir=str(home.root)))
    meta = {k: v.value for k, v in res.metadata.items()}
    assert not res.passed and meta["claims"] == good + 4
    assert meta["quote_not_in_source"] == 2 and meta["visibility_too_broad"] == 1
    assert meta["failing_claim_ids"] == "c_misquoted, c_no_source, c_too_broad"
