"""Profile-guided views (PGO): the query profile from the query log, entity dossiers promoted from
it through Dagster with lineage, and the compiler's state route answering from a dossier exactly
as it would from a scan of state_current.

Two homes: a copy of the sample home built through Dagster (tests/conftest.py), asked a few
questions and then given its profile and dossiers by a real Dagster run; and small marts written
here, with what the sample lacks (conflicts, ties, a name in two scopes, an alias), for the
equality of both routes over many askers."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta, timezone

import dagster as dg
import pyarrow as pa
import pytest

import views.dossiers as dossier_views
import views.profile as profile
import views.state_index as state_index
from catalog import keys
from memc.atomic import read_parquet, write_parquet
from memc.home import MemcHome
from memc.watermark import read_watermark, write_watermark
from query import QueryConfig, compile_context
from query.compile import view_watermarks
from query.facts import state_facts as _state_facts
from query.facts import state_source
from query.log import read_log
from views import marts as mart_files

# (question, asker): Elena is asked about three times by three askers, Priya twice (once by
# tomasz, who may see none of her facts), Tomasz once: Elena and Priya are hot.
ASKS = [
    ("Where does Elena live now?", "tomasz"),
    ("Where does Elena live now?", "elena"),
    ("Where does Elena work?", "priya"),
    ("What does Priya do?", "tomasz"),
    ("Is Priya at Helio Labs?", "priya"),
    ("What does Tomasz like?", "tomasz"),
]


@pytest.fixture(scope="module")
def pgo_home(built_home, tmp_path_factory):
    """A copy of the built sample home with a fresh query log of ASKS, then query_profile and
    entity_dossiers materialized by a real Dagster run."""
    from orchestration.runner import build

    src, _ = built_home
    home = MemcHome.resolve(tmp_path_factory.mktemp("pgo") / "home")
    shutil.copytree(src.root, home.root)
    shutil.rmtree(home.root / "querylog", ignore_errors=True)  # other tests ask the shared home too
    saved = {k: os.environ.get(k) for k in ("DAGSTER_HOME", "MEMC_HOME")}
    for question, asker in ASKS:
        compile_context(question, asker, home=home, scope="team")
    report = build(home, selection=[keys.QUERY_PROFILE, keys.ENTITY_DOSSIERS])
    yield home, report
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _no_dossiers(monkeypatch):
    monkeypatch.setattr(dossier_views, "load_dossiers", lambda home: None)


def _both_ways(monkeypatch, home, question, asker, scope, **kw):
    """(_state_facts with the dossiers, its source, _state_facts scanning state_current)."""
    config = QueryConfig()
    with_dossiers = _state_facts(home, question, asker, scope, config, **kw)
    source = state_source()
    with monkeypatch.context() as m:
        _no_dossiers(m)
        scanned = _state_facts(home, question, asker, scope, config, **kw)
        assert state_source() == "state_current"
    return with_dossiers, source, scanned


# ------------------------------------------------------------------------------- the sample home


def test_profile_counts_what_is_asked_and_holds_no_question_text(pgo_home):
    home, _ = pgo_home
    assert len(read_log(home)) == len(ASKS)
    rows = {r["entity"]: r for r in profile.read_profile(home).to_pylist()}
    assert [r["entity"] for r in sorted(rows.values(), key=lambda r: r["rank"])] == ["Elena", "Priya", "Tomasz"]
    elena, priya = rows["Elena"], rows["Priya"]
    assert (elena["asked"], elena["askers"], elena["share"]) == (3, 3, 0.5)
    # tomasz asked about Priya and got nothing (her facts are private): still asked about
    assert (priya["asked"], priya["answered"], priya["askers"]) == (2, 1, 2)
    assert rows["Tomasz"]["asked"] == 1
    # nothing but ids, scopes and the mart's names: no question, no asker
    strings = {v for r in rows.values() for v in r.values() if isinstance(v, str)}
    assert strings <= {"team", *rows, *(r["entity_id"] for r in rows.values())}
    words = {w for q, a in ASKS for w in (q, a)}
    assert not strings & words


def test_evidence_usage_counts_what_contexts_showed_by_entry_id(pgo_home):
    """The Dagster run that compiled the profile also wrote evidence usage: every entry a compile
    of ASKS showed (its items' turns, its facts' sources), how often, when last; ids only."""
    home, _ = pgo_home
    log = read_log(home)
    shown = [set(rec["shown"]) for rec in log]
    assert all(shown), "every compile of ASKS showed something"
    usage = {r["entry_id"]: r for r in read_parquet(home.profile / profile.USAGE_FILE).to_pylist()}
    assert set(usage) == set().union(*shown)
    for eid, row in usage.items():
        assert row["shown"] == sum(eid in s for s in shown)
        assert row["last_shown"] == max(datetime.fromisoformat(rec["at"]) for rec, s in zip(log, shown) if eid in s)
    # The log's list is of ids, never text: no logged id is a turn's words.
    assert all(len(e) < 80 and " " not in e for e in usage)
    # What the compiler's decay reads: entry id -> last shown.
    assert profile.evidence_usage(home) == {e: r["last_shown"] for e, r in usage.items()}


def test_profile_and_dossiers_materialize_through_dagster_with_lineage(pgo_home):
    from orchestration.definitions import build_definitions

    home, report = pgo_home
    assert report.success, report.failed_steps
    assert {"query_profile", "entity_dossiers"} <= set(report.materialized)
    assert report.checks == {
        "query_profile:query_profile_names_known_entities": True,
        "entity_dossiers:entity_dossiers_match_state": True,
        # the ledger's blocking checks, in every run a build starts (orchestration/runner.py)
        "ledger:ledger_integrity": True,
        "ledger:ledger_expectations": True,
    }
    graph = build_definitions(str(home.root)).resolve_asset_graph()
    assert not graph.get(keys.QUERY_LOG).is_materializable, "the query log is external: written by compiles"
    assert graph.get(keys.QUERY_PROFILE).parent_keys == {keys.QUERY_LOG, keys.ENTITIES}
    assert graph.get(keys.ENTITY_DOSSIERS).parent_keys == {keys.QUERY_PROFILE, keys.STATE_CURRENT, keys.CONFLICTS, keys.ENTITY_GRAPH}
    assert keys.ENTITY_DOSSIERS in dg.AssetSelection.assets(keys.LEDGER).downstream().resolve(graph)

    instance = dg.DagsterInstance.get()  # the copy's instance: the runner pointed DAGSTER_HOME at it
    mat = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=keys.ENTITY_DOSSIERS), limit=1).records[0].asset_materialization
    md = {k: v.value for k, v in mat.metadata.items()}
    assert md["dagster/row_count"] == 2 and md["ledger_watermark"] == view_watermarks(home)["state"]
    assert mat.tags["dagster/code_version"] == dossier_views.DOSSIER_VERSION
    assert read_watermark(home.dossiers)["watermark"] == view_watermarks(home)["state"]

    dossiers = dossier_views.load_dossiers(home)
    assert {d["entity"] for d in dossiers.by_subject.values()} == {"Elena", "Priya"}
    elena = next(d for d in dossiers.by_subject.values() if d["entity"] == "Elena")
    # every row about her, unfiltered: the public Berlin (closed for elena and priya) and the private Potsdam
    lives = {f["object"]: f for f in elena["facts"] if f["predicate"] == "lives_in"}
    assert set(lives) == {"Berlin", "Potsdam"} and lives["Berlin"]["closed_for"] == ["elena", "priya"]
    assert lives["Potsdam"]["visibility"] == ["elena", "priya"]
    assert {"Tomasz", "Priya"} <= {n["name"] for n in elena["neighbours"]}, "1-hop neighbours from the graph"
    assert all(n["edge_evidence"] for n in elena["neighbours"])


@pytest.mark.parametrize("asker", ["tomasz", "elena", "priya", "nobody"])
def test_a_dossier_answers_exactly_as_the_scan(pgo_home, asker, monkeypatch):
    home, _ = pgo_home
    questions = ["Where does Elena live now?", "Does Priya work with Elena?", "What does Priya do?", "Hello, anyone?"]
    for question in questions:
        for scope in ("team", None):
            got, source, scanned = _both_ways(monkeypatch, home, question, asker, scope)
            assert source == "dossier", question
            assert got == scanned, (question, asker, scope)
    # bi-temporal: which subjects are named comes from the dossier, the facts from state_history
    then = datetime(2024, 3, 1, tzinfo=timezone.utc)
    got, source, scanned = _both_ways(monkeypatch, home, "Where did Elena live?", asker, "team", as_of=then)
    assert source == "dossier" and got == scanned
    # Tomasz is not hot: the scan answers
    _state_facts(home, "What does Tomasz like?", asker, "team", QueryConfig())
    assert state_source() == "state_current"


def test_the_compiler_uses_the_dossier_and_says_so(pgo_home):
    home, _ = pgo_home
    tomasz = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    assert state_source() == "dossier"
    elena = compile_context("Where does Elena live now?", "elena", home=home, scope="team")
    assert [f.object for f in tomasz.state if f.predicate == "lives_in"] == ["Berlin"]
    assert [f.object for f in elena.state if f.predicate == "lives_in"] == ["Potsdam"]


def test_a_dossier_of_another_state_build_is_not_used(pgo_home, tmp_path, monkeypatch):
    home = MemcHome.resolve(tmp_path / "home")
    shutil.copytree(pgo_home[0].root, home.root)
    _state_facts(home, "Where does Elena live now?", "tomasz", "team", QueryConfig())
    assert state_source() == "dossier"
    # the state is rebuilt at the same ledger head (a new extractor, a model change): same watermark
    mark = read_watermark(home.warehouse)
    write_watermark(home.warehouse, "state", mark["watermark"], extractor=mark["extractor"])
    _state_facts(home, "Where does Elena live now?", "tomasz", "team", QueryConfig())
    assert state_source() == "state_current"
    problems, _ = dossier_views.audit_dossiers(home)
    assert problems and "built against state" in problems[0]


# ------------------------------------------------------------------------------- small marts

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
PUBLIC = ["public"]


def _fact(n, scope, sid, subject, predicate, obj, *, card="functional", day=0, rec=0, vis=PUBLIC, closed=(), conflict=False):
    return {
        "scope": scope, "subject_id": sid, "subject": subject, "predicate": predicate, "object": obj,
        "cardinality": card, "valid_from": T0 + timedelta(days=day), "recorded_at": T0 + timedelta(days=day + rec),
        "visibility": list(vis), "claim_id": f"c{n:02d}", "source_entry_id": f"e{n:02d}", "source_ref": f"r{n}",
        "quote": f"{subject} {predicate} {obj}", "closed_for": list(closed), "in_conflict": conflict,
    }  # fmt: skip


def _conflict(sid, subject, predicate, a, b, vis_b=PUBLIC, resolution="unresolved"):
    side = lambda s, o, v: {  # noqa: E731
        f"object_{s}": o, f"source_entry_id_{s}": f"e-{o}", f"source_ref_{s}": f"r-{o}", f"quote_{s}": f"{subject} {o}",
        f"recorded_at_{s}": T0, f"visibility_{s}": list(v),
    }  # fmt: skip
    return {"scope": "s1", "subject_id": sid, "subject": subject, "predicate": predicate, "valid_at": T0, "resolution": resolution,
            **side("a", a, PUBLIC), **side("b", b, vis_b)}  # fmt: skip


STATE = [  # subjects interleaved on purpose: the dossier must keep the mart's order
    _fact(1, "s1", "ada", "Ada", "lives_in", "Paris", day=1, closed=["bob"]),
    _fact(2, "s1", "bob", "Bob", "works_at", "Acme"),
    _fact(3, "s1", "ada", "Ada", "lives_in", "Rome", day=60, vis=["bob"]),
    _fact(4, "s1", "cy", "Cy", "likes", "jazz", card="multi"),
    _fact(5, "s1", "ada", "Ada", "works_at", "Acme", day=30, conflict=True),
    _fact(6, "s2", "ada2", "Ada", "lives_in", "Oslo", day=5),
    _fact(7, "s1", "ada", "Ada", "works_at", "Globex", day=30, conflict=True),
    _fact(8, "s1", "ada", "Ada", "likes", "tea", card="multi", day=2),
    _fact(9, "s1", "ada", "Ada", "likes", "chess", card="multi", day=3, vis=["carol"]),
    _fact(10, "s1", "ada", "Ada", "born_in", "Lyon", day=-900),
    _fact(11, "s1", "ada", "Ada", "born_in", "Nice", day=-900),  # a tie the scan breaks by mart order
    _fact(12, "s1", "ada", "Adele", "nickname", "Dele", day=4),  # an alias, same subject id
    _fact(13, "s1", "bob", "Bob", "likes", "tea", card="multi", vis=["bob", "carol"]),
]
CONFLICTS = [
    _conflict("ada", "Ada", "works_at", "Acme", "Globex"),
    _conflict("cy", "Cy", "likes", "jazz", "blues"),
    _conflict("ada", "Ada", "lives_in", "Paris", "Rome", vis_b=["bob"], resolution="later_record"),
]
ENTITIES = [
    {"entity_id": "ada", "scope": "s1", "name": "Ada", "aliases": ["Ada", "Adele"]},
    {"entity_id": "bob", "scope": "s1", "name": "Bob", "aliases": ["Bob"]},
    {"entity_id": "cy", "scope": "s1", "name": "Cy", "aliases": ["Cy"]},
    {"entity_id": "ada2", "scope": "s2", "name": "Ada", "aliases": ["Ada"]},
]


def _log(question, asker, scope=None, minutes=0, entities=()):
    at = datetime.now(timezone.utc) - timedelta(minutes=minutes)
    return {"at": at.isoformat(), "asker": asker, "scope": scope, "question": question, "entities": list(entities), "plan": {}}


LOG = [
    _log("Where does Ada live?", "bob", minutes=5),
    _log("Where does Ada work?", "carol", minutes=4, entities=["Ada"]),
    _log("What about Adele's plans?", "dave", "s1", minutes=3),
    _log("Who is Bob?", "bob", "s1", minutes=2),
    _log("Bob and Ada at Acme?", "carol", "s1", minutes=1),
    _log("What does Cy like?", "bob", "s1"),
    _log("Where does Ada live?", "bob", minutes=60 * 24 * 45),  # outside the 30-day window
]


@pytest.fixture
def marts(tmp_path):
    """A home with small state marts, a state watermark, a profile of LOG and its dossiers."""
    home = MemcHome.resolve(tmp_path / "home").ensure()
    write_parquet(pa.Table.from_pylist(STATE), mart_files.mart_path(home, mart_files.STATE_CURRENT))
    write_parquet(pa.Table.from_pylist(CONFLICTS), mart_files.mart_path(home, mart_files.CONFLICTS))
    write_parquet(pa.Table.from_pylist(ENTITIES), mart_files.mart_path(home, mart_files.ENTITIES))
    write_watermark(home.warehouse, "state", 13, extractor="test")
    write_parquet(profile.profile_from(LOG, ENTITIES), home.profile / profile.PROFILE_FILE)
    stats = dossier_views.compile_dossiers(home)
    return home, stats


def test_profile_of_the_small_log():
    rows = {(r["scope"], r["entity_id"]): r for r in profile.profile_from(LOG, ENTITIES).to_pylist()}
    assert profile.profile_info(profile.profile_from(LOG, ENTITIES))["compiles"] == 6
    # an unscoped question names Ada in both scopes; "Adele's" names her by alias and possessive
    assert rows[("s1", "ada")]["asked"] == 4 and rows[("s2", "ada2")]["asked"] == 2
    assert rows[("s1", "ada")]["askers"] == 3 and rows[("s1", "ada")]["answered"] == 1
    assert rows[("s1", "bob")]["asked"] == 2 and rows[("s1", "cy")]["asked"] == 1
    assert rows[("s1", "ada")]["rank"] == 1


def test_an_entity_an_erasure_removed_from_the_mart_is_not_in_the_profile():
    """The log keeps the entity ids a compile resolved; after an erasure took an entity's only
    evidence the mart no longer holds it, and the profile named it with no name, which failed
    the query_profile_names_known_entities check and so the rebuild of every `memc forget` that
    followed a question about it (found on the S3 home, tests/platform/test_storage_s3.py)."""
    gone = [{**_log("", "ana", "s1"), "asked": [["s1", "bob"], ["s1", "erased"]], "answered": [["s1", "erased"]]}]
    rows = profile.profile_from(LOG + gone, ENTITIES).to_pylist()
    assert ("s1", "erased") not in {(r["scope"], r["entity_id"]) for r in rows}
    assert all(r["entity"] for r in rows)


def test_the_profile_reads_the_log_days_of_its_window(marts):
    import json

    from query.log import log_dir

    home, _ = marts
    d = log_dir(home)
    d.mkdir(parents=True)
    (d / "2000-01-01.jsonl").write_text(json.dumps(_log("Where does Cy live?", "bob", "s1")) + "\n")  # a day long gone
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    lines = [json.dumps(r) for r in LOG] + ['{"at": "torn']
    (d / f"{today}.jsonl").write_text("\n".join(lines) + "\n")
    got = profile.query_profile(home)
    assert got.to_pylist() == profile.profile_from(LOG, ENTITIES).to_pylist()
    assert profile.profile_info(got)["compiles"] == 6


def test_the_log_is_parsed_from_where_the_last_read_stopped(tmp_path, monkeypatch):
    """A day file is appended to: a build parses only what came after the last read, and what
    it keeps of a record is what the profile reads. A record being written counts once whole; a
    file written again (in place, or replaced) is read whole."""
    import json

    home = MemcHome.resolve(tmp_path / "home").ensure()
    home.querylog.mkdir(parents=True, exist_ok=True)
    day = home.querylog / f"{datetime.now(timezone.utc):%Y-%m-%d}.jsonl"
    since = datetime.now(timezone.utc) - timedelta(days=1)
    recs = [dict(_log(q, "bob", "s1", minutes=9 - i), plan={"state": "scan", "steps": [{"step": "fuse", "ids": ["x"] * 50}]})
            for i, q in enumerate(["Where does Ada live?", "Who is Bob?", "What does Cy like?", "Ada at Acme?", "Bob's plans?"])]  # fmt: skip
    lines = [json.dumps(r) + "\n" for r in recs]
    parsed: list[int] = []
    real = profile._parsed
    monkeypatch.setattr(profile, "_parsed", lambda data: parsed.append(data.count(b"\n")) or real(data))

    def read() -> list[dict]:
        got = list(profile._log_records(home, since))
        with profile._LOG_READ_LOCK:
            kept = dict(profile._LOG_READ)
        profile._LOG_READ.clear()
        assert got == list(profile._log_records(home, since)), "the same as a read from nothing"
        profile._LOG_READ.update(kept)
        return got

    day.write_text(lines[0] + lines[1])
    got = read()
    assert got == [profile._read(r) for r in recs[:2]] and got[0]["plan"] == {"state": "scan"} and "config" not in got[0]
    parsed.clear()
    with open(day, "a") as f:
        f.write(lines[2] + lines[3][:30])  # the fourth record being written
    assert [r["question"] for r in profile._log_records(home, since)] == [r["question"] for r in recs[:3]]
    assert parsed[0] == 1, "the two records read before are not parsed again"
    with open(day, "a") as f:
        f.write(lines[3][30:])
    assert [r["question"] for r in read()] == [r["question"] for r in recs[:4]]
    day.write_text(lines[4] + lines[0] + lines[1] + lines[2])  # in place, longer, another first record
    assert [r["question"] for r in read()] == [recs[i]["question"] for i in (4, 0, 1, 2)]
    fresh = day.with_suffix(".new")
    fresh.write_text(lines[1])
    os.replace(fresh, day)
    assert [r["question"] for r in read()] == [recs[1]["question"]]
    assert profile.profile_from(read(), ENTITIES).to_pylist() == profile.profile_from([recs[1]], ENTITIES).to_pylist()


def test_small_marts_dossiers_hold_every_row_of_the_hot_entities(marts):
    home, stats = marts
    assert stats["dossiers"] == 3 and stats["graph"] == "no graph"  # ada, ada2, bob; cy was asked once
    problems, md = dossier_views.audit_dossiers(home)
    assert problems == [] and md["facts"] == 12


@pytest.mark.parametrize("asker", ["bob", "carol", "dave", "nobody"])
def test_small_marts_dossier_answers_exactly_as_the_scan(marts, asker, monkeypatch):
    home, _ = marts
    questions = {
        "Where does Ada live?": "dossier",
        "Where does Adele work?": "dossier",
        "Bob and Ada at Acme?": "dossier",
        "Tell me about ada's plans": "dossier",  # no subject named (the compiler's word rule)
        "What does Cy like?": "state_current",  # not hot
        "Ada and Cy?": "state_current",  # one of the two is not hot
    }
    for question, expected in questions.items():
        for scope in (None, "s1", "s2"):
            got, source, scanned = _both_ways(monkeypatch, home, question, asker, scope)
            assert source == expected, question
            assert got == scanned, (question, asker, scope)
    facts, conflicts = _state_facts(home, "Where does Ada live?", asker, "s1", QueryConfig())
    lives = [f.object for f in facts if f.predicate == "lives_in"]
    assert lives == {"bob": ["Rome"], "carol": ["Paris"]}.get(asker, ["Paris"])
    born = [f.object for f in facts if f.predicate == "born_in"]
    assert born == ["Lyon"], "a tie is broken by mart order, as the scan does"
    assert len(conflicts) == (2 if asker == "bob" else 1)


def test_a_changed_mart_file_stops_the_dossier(marts):
    home, _ = marts
    assert dossier_views.load_dossiers(home) is not None
    rows = read_parquet(mart_files.mart_path(home, mart_files.STATE_CURRENT)).to_pylist()
    write_parquet(pa.Table.from_pylist(rows[:-1]), mart_files.mart_path(home, mart_files.STATE_CURRENT))  # same watermark
    assert dossier_views.load_dossiers(home) is None
    problems, _ = dossier_views.audit_dossiers(home)
    assert any("built against state" in p for p in problems)


def test_the_audit_names_a_missing_or_altered_fact(marts):
    home, _ = marts
    path = home.dossiers / dossier_views.DOSSIER_FILE
    table = read_parquet(path)
    facts = table.column("facts").to_pylist()
    i = table.column("entity_id").to_pylist().index("ada")
    dropped = facts[i].pop()
    facts[i][0] = {**facts[i][0], "object": "Atlantis"}
    tampered = table.set_column(table.column_names.index("facts"), "facts", pa.array(facts, table.schema.field("facts").type))
    write_parquet(tampered.replace_schema_metadata(table.schema.metadata), path)
    problems, _ = dossier_views.audit_dossiers(home)
    assert f"ada: state_current row {dropped['claim_id']} is missing from the dossier" in problems
    assert f"ada: fact {facts[i][0]['claim_id']} differs from state_current" in problems


def test_reads_are_cached_per_version_of_the_file(marts, monkeypatch):
    home, _ = marts
    from memc import filecache
    from views import marts as mart_reader

    reads = []
    real = dossier_views.read_parquet
    for module in (dossier_views, mart_reader):  # the dossiers' files, and the marts
        monkeypatch.setattr(module, "read_parquet", lambda p, **kw: reads.append(p.name) or real(p, **kw))
    filecache.clear()
    path = mart_files.mart_path(home, mart_files.STATE_CURRENT)
    for _ in range(3):
        _state_facts(home, "What does Cy like?", "bob", "s1", QueryConfig())  # scans
        _state_facts(home, "Where does Ada live?", "bob", "s1", QueryConfig())  # dossier
    assert sorted(reads) == sorted([f"{mart_files.STATE_CURRENT}.parquet", f"{mart_files.CONFLICTS}.parquet", dossier_views.DOSSIER_FILE, dossier_views.NAMES_FILE])
    write_parquet(read_parquet(path), path)  # a new version of the file (os.replace)
    assert state_index.state_index(home) is not None
    assert reads.count(f"{mart_files.STATE_CURRENT}.parquet") == 2


def test_an_erasure_drops_the_profile_views(marts):
    from forgetting import forget
    from ledger import Ledger, NewEntry

    home, _ = marts
    assert home.view_dirs()["profile"] == home.profile
    res = Ledger(home.ledger).append([NewEntry(kind="message", content="Ada lives in Paris, says a note", valid_at=T0, actor="bob")])
    report = forget(home, entry_ids=res.entry_ids, reason="test", by="admin", rebuild=False)
    assert report.status == "done" and "profile" in report.views_dropped
    assert not home.profile.exists()
    assert _state_facts(home, "Where does Ada live?", "bob", "s1", QueryConfig()) == ([], [])


# ------------------------------------------------------------------------------- automation


def test_the_profile_refreshes_daily_with_the_dossiers_after_it(tmp_path):
    from orchestration.automation import PROFILE_CRON
    from orchestration.definitions import build_definitions

    defs = build_definitions(str(tmp_path / "home"))
    instance = dg.DagsterInstance.ephemeral()
    hour, minute = int(PROFILE_CRON.split()[1]), int(PROFILE_CRON.split()[0])
    tick = (datetime.now(timezone.utc) + timedelta(days=1)).replace(hour=hour, minute=minute, second=0, microsecond=0)

    def requested(result):
        return {k.to_user_string() for k in defs.resolve_asset_graph().materializable_asset_keys if result.get_num_requested(k)}

    # a home whose views were built once (the dossiers never build over a state never built)
    for key in (keys.STATE_CURRENT, keys.CONFLICTS, keys.ENTITY_GRAPH, keys.ENTITIES):
        instance.report_runless_asset_event(dg.AssetMaterialization(key))
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=tick - timedelta(minutes=6))
    assert requested(r) <= {"entity_dossiers"}, "at most the dossiers, after that state build"
    instance.report_runless_asset_event(dg.AssetMaterialization(keys.ENTITY_DOSSIERS))
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=r.cursor, evaluation_time=tick - timedelta(minutes=5))
    assert requested(r) == set()
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=r.cursor, evaluation_time=tick + timedelta(minutes=1))
    assert requested(r) == {"query_profile", "entity_dossiers"}, "the profile, and in the same run the dossiers after it"
    for key in (keys.QUERY_PROFILE, keys.ENTITY_DOSSIERS):
        instance.report_runless_asset_event(dg.AssetMaterialization(key))
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=r.cursor, evaluation_time=tick + timedelta(minutes=2))
    assert requested(r) == set(), "nothing more until the next tick"
    graph = defs.resolve_asset_graph()
    assert graph.get(keys.QUERY_PROFILE).freshness_policy is not None, "daily: a cron freshness policy"
    # event-driven (with each state build): no time-window policy (docs/operations.md, "Freshness")
    assert graph.get(keys.ENTITY_DOSSIERS).freshness_policy is None
