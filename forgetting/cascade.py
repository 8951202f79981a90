"""The erasure cascade, step by step, with a journal that makes it crash-safe and idempotent.

One erasure = one journal file ``<home>/forgetting/<erasure_id>.json`` (ids, who, why, the step
reached; never erased text) and these steps, each idempotent and recorded when done:

1. ``requested``     the journal is written (the tombstone's fields are fixed, so its entry id
                     and idempotency key are known before it is appended);
2. ``recorded``      the tombstone is appended to the ledger (kind "erasure", visible to
                     administrators, attributes list the erased ids). From here every compile
                     excludes the erased entries (query/acl.py reads the tombstones): a pending
                     erasure is never served;
3. ``aux_scrubbed``  files no id leads to are searched for the erased text, cut into needles
                     while the ledger still holds it (forgetting/scrub.py);
4. ``ledger_purged`` the ledger batches holding the entries are rewritten with stubs in their
                     place (``Ledger.purge``: new file beside, ``os.replace``, markers kept right);
5. ``views_dropped`` every view directory (claims, warehouse, vectors, graph) is renamed aside
                     and deleted, and an evidence index on object storage is dropped with
                     every object version, as are the views published beside it (claims,
                     marts, graph...): in-place deletes in DuckDB, LanceDB and Kùzu keep
                     the bytes (docs/stack-notes.md), a fresh build writes fresh files; and
                     the query log's fingerprint key is deleted (query/log.py);
6. ``rebuilt``       with ``rebuild``: every view compiled again from the purged ledger by the
                     rebuild the caller passes (``orchestration.runner.rebuild_views``: the
                     whole build through Dagster; dreaming recomputes the derived claims whose
                     inputs changed). Without it, views stay absent until the next `memc build`
                     (compiles return nothing from an absent view: fail closed);
7. ``done``          temp files of crashed writers removed.

A kill at any point leaves the journal at the last finished step; ``resume`` (called first by
every ``forget``) redoes the next step, which is safe because every step is idempotent: the
append by idempotency key, the scrub by search, the purge skips stubs, dropping a missing view
is a no-op. A tombstone whose journal is missing (written by an older memc, or the journal was
deleted) is found in the ledger and purged the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ledger import open_ledger
from ledger.schema import NewEntry
from ledger.stubs import is_erased_stub
from memc.atomic import write_json
from memc.home import MemcHome
from memc.ids import digest
from memc.locks import exclusive
from memc.visibility import ADMIN

from forgetting.scrub import entry_texts, needles, remove_temp_files, scrub_home
from forgetting.select import Resolution, Selector, check_request, make_selector, resolve

STEPS = ("requested", "recorded", "aux_scrubbed", "ledger_purged", "views_dropped", "rebuilt", "done")
JOURNAL_DIR = "forgetting"

StepHook = Callable[[str, str], None]  # (erasure_id, step reached)
# Compiles every view again from the purged ledger; returns the failed steps (none: success).
Rebuild = Callable[[MemcHome], Sequence[str]]


@dataclass
class ForgetReport:
    """What one ``forget`` did. ``status``: "done" (purged, views rebuilt or dropped for the next
    build), "nothing_to_erase" (the selector matched no live entry), "rebuild_failed" (purged;
    the erased entries are gone from the ledger and every compile, but a view failed to build:
    run `memc build`, or `memc forget` again)."""

    status: str
    erasure_id: str | None = None
    selector: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    by: str = ""
    named: list[str] = field(default_factory=list)
    cascaded: list[str] = field(default_factory=list)
    already_erased: list[str] = field(default_factory=list)
    ledger_files_rewritten: int = 0
    ledger_rows_stubbed: int = 0
    views_dropped: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    files_rewritten: list[str] = field(default_factory=list)
    sqlite_scrubbed: list[str] = field(default_factory=list)
    files_skipped: list[str] = field(default_factory=list)
    temp_removed: list[str] = field(default_factory=list)
    rebuilt: bool = False
    build_failed_steps: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)  # interrupted erasures completed first
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def erased(self) -> list[str]:
        return sorted({*self.named, *self.cascaded})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["erased"] = self.erased
        return d


# ------------------------------------------------------------------------------- journal


def journal_dir(home: MemcHome) -> Path:
    return home.root / JOURNAL_DIR


def _journal_path(home: MemcHome, erasure_id: str) -> Path:
    return journal_dir(home) / f"{erasure_id}.json"


def _save(home: MemcHome, journal: dict[str, Any], step: str) -> None:
    journal["step"] = step
    journal.setdefault("history", []).append([step, datetime.now(timezone.utc).isoformat()])
    write_json(journal, _journal_path(home, journal["erasure_id"]))


def journals(home: MemcHome) -> list[dict[str, Any]]:
    """Every erasure's journal, oldest first."""
    out = []
    d = journal_dir(home)
    if not d.is_dir():
        return out
    for p in sorted(d.glob("e_*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue  # a torn journal cannot exist (atomic writes); an alien file is ignored
    return sorted(out, key=lambda j: (j.get("created_at", ""), j.get("erasure_id", "")))


def pending(home: MemcHome) -> list[str]:
    """Erasure ids whose cascade has not finished."""
    return [j["erasure_id"] for j in journals(home) if j.get("step") != "done"]


def _home_lock(home: MemcHome):
    """One erasure at a time per home (across processes; a second waits); a killed holder releases it."""
    return exclusive(journal_dir(home) / ".lock", "memc forget", wait=True)


# ------------------------------------------------------------------------------- tombstone


def _tombstone(res: Resolution, selector: Selector, reason: str, by: str, scope: str) -> NewEntry:
    erased = res.erased
    # Who, when, why, which ids. The key covers the request, not the time, so a retried
    # request with the same ids, reason and principal appends one tombstone.
    key = "erasure_" + digest("erasure", erased, reason, by)[:32]
    return NewEntry(
        kind="erasure",
        scope=scope,
        content=f"erasure of {len(erased)} entr{'y' if len(erased) == 1 else 'ies'} requested by {by}: {reason}",
        valid_at=datetime.now(timezone.utc),
        actor=by,
        visibility=(ADMIN,),
        idempotency_key=key,
        ingested_by="memc:forget",
        attributes={
            "entry_ids": erased,
            "named": len(res.named),
            "cascaded": res.cascaded,
            "selector": selector.describe(),
            "reason": reason,
            "by": by,
        },
    )


def _entry_from_journal(journal: dict[str, Any]) -> NewEntry:
    return NewEntry.model_validate(journal["tombstone"])


# ------------------------------------------------------------------------------- the steps


def _drop_views(home: MemcHome) -> list[str]:
    dropped = []
    for name, path in home.view_dirs().items():
        if path.exists() or path.is_symlink():
            trash = home.root / f".trash-{name}-{uuid.uuid4().hex}"
            os.replace(path, trash)  # atomic: the view is there whole or gone
            dropped.append(name)
    for p in home.root.glob(".trash-*"):
        shutil.rmtree(p, ignore_errors=True)
    # The evidence index on object storage (MEMC_STORAGE) is no directory of the home: its tables
    # go with every object version (views/vectors_s3.py). On a local home the directory is gone
    # already and this finds no table.
    from views.build import vector_store  # lazy: 0.35 s of imports no other step needs

    store = vector_store(home)
    store.drop()
    store.clear_watermark()
    # The views published there (views/published.py): every object and version, from every node
    # at its next pull.
    from views import published

    published.drop()
    return dropped


def _advance(home: MemcHome, journal: dict[str, Any], report: ForgetReport, *, hook: StepHook | None) -> None:
    """Run the journal's remaining steps up to ``views_dropped`` (and on to ``done`` when no
    rebuild is wanted: the caller then rebuilds, once for every erasure waiting on it)."""
    eid = journal["erasure_id"]
    erased: list[str] = journal["erased"]

    def mark(step: str, t0: float) -> None:
        report.seconds[step] = round(report.seconds.get(step, 0.0) + time.perf_counter() - t0, 3)
        _save(home, journal, step)
        if hook:
            hook(eid, step)

    ledger = open_ledger(home.ledger)
    if journal["step"] == "requested":
        t0 = time.perf_counter()
        ledger.append([_entry_from_journal(journal)])
        mark("recorded", t0)
    if journal["step"] == "recorded":
        t0 = time.perf_counter()
        wanted = set(erased)
        rows = [
            r
            for r in ledger.read(["entry_id", "kind", "content", "attributes", "source_uri", "source_ref"]).to_pylist()
            if r["entry_id"] in wanted and not is_erased_stub(r)
        ]
        texts = [t for r in rows for t in entry_texts(r)]
        sr = scrub_home(home, needles(texts), [r["source_uri"] for r in rows], skip=list(home.view_dirs().values()))
        report.files_removed += sr.removed
        report.files_rewritten += sr.rewritten
        report.sqlite_scrubbed += sr.sqlite
        report.files_skipped += sr.skipped
        mark("aux_scrubbed", t0)
    if journal["step"] == "aux_scrubbed":
        t0 = time.perf_counter()
        pr = ledger.purge({e: eid for e in erased})
        report.ledger_files_rewritten += len(pr.files_rewritten)
        report.ledger_rows_stubbed += pr.rows_stubbed
        mark("ledger_purged", t0)
    if journal["step"] == "ledger_purged":
        t0 = time.perf_counter()
        report.views_dropped += _drop_views(home)
        # The query log's question fingerprints could confirm a guessed question that quoted the
        # erased text: with their key gone, none logged so far can be tested (query/log.py). The
        # log's plans and `shown` lists keep their entry ids, the ids the tombstone lists too.
        home.querylog_key.unlink(missing_ok=True)
        mark("views_dropped", t0)
    if journal["step"] == "views_dropped" and not journal.get("rebuild"):
        t0 = time.perf_counter()
        _finish(home, journal, report)
        mark("done", t0)


def _finish(home: MemcHome, journal: dict[str, Any], report: ForgetReport) -> None:
    report.temp_removed += remove_temp_files(home)
    open_ledger(home.ledger).recover()


def _rebuild_and_finish(home: MemcHome, batch: list[dict[str, Any]], report: ForgetReport, hook: StepHook | None, rebuild: Rebuild) -> None:
    """One build for every erasure waiting on it (a resume after several interrupted ones)."""
    waiting = [j for j in batch if j["step"] == "views_dropped"]
    if waiting:
        t0 = time.perf_counter()
        _drop_views(home)  # a view built between the drop and now may predate the purge
        try:
            failed = list(rebuild(home))  # called while this cascade holds the erasure lock
        except Exception as exc:  # a blocking check or a broken view: the erasure itself stands
            failed = [f"{type(exc).__name__}: {exc}"[:500]]
        report.seconds["rebuilt"] = round(report.seconds.get("rebuilt", 0.0) + time.perf_counter() - t0, 3)
        if failed:
            # The journals stay at views_dropped: the next forget or resume builds again.
            report.status = "rebuild_failed"
            report.build_failed_steps = failed
            return
        report.rebuilt = True
        for j in waiting:
            _save(home, j, "rebuilt")
            if hook:
                hook(j["erasure_id"], "rebuilt")
    for j in batch:
        if j["step"] == "rebuilt":
            t0 = time.perf_counter()
            _finish(home, j, report)
            _save(home, j, "done")
            report.seconds["done"] = round(report.seconds.get("done", 0.0) + time.perf_counter() - t0, 3)
            if hook:
                hook(j["erasure_id"], "done")


def _orphan_tombstones(home: MemcHome, known: set[str]) -> list[dict[str, Any]]:
    """Tombstones in the ledger with no journal whose erased entries are not all stubs yet."""
    ledger = open_ledger(home.ledger)
    rows = ledger.read(["entry_id", "kind", "attributes", "scope", "actor"]).to_pylist()
    stubs = {r["entry_id"] for r in rows if is_erased_stub(r)}
    live = {r["entry_id"] for r in rows} - stubs
    out = []
    for r in rows:
        if r["kind"] != "erasure" or r["entry_id"] in stubs or r["entry_id"] in known:
            continue
        try:
            ids = list(json.loads(r["attributes"] or "{}").get("entry_ids") or [])
        except (TypeError, ValueError):
            continue
        if set(ids) & live:
            out.append(
                {
                    "erasure_id": r["entry_id"],
                    "erased": sorted(ids),
                    "created_at": datetime.now(timezone.utc).isoformat(),
                    "rebuild": True,
                    "step": "recorded",
                    "history": [["recorded", "found in the ledger without a journal"]],
                }
            )
    return out


def _resume_locked(home: MemcHome, report: ForgetReport, *, rebuild: Rebuild | None, hook: StepHook | None) -> list[dict[str, Any]]:
    """Bring every unfinished erasure to ``views_dropped`` (or ``done``); returns those left
    waiting for a rebuild."""
    js = journals(home)
    todo = [j for j in js if j.get("step") != "done"]
    todo += _orphan_tombstones(home, {j["erasure_id"] for j in js})
    waiting = []
    for j in todo:
        report.resumed.append(j["erasure_id"])
        if not rebuild:
            j["rebuild"] = False
        _advance(home, j, report, hook=hook)
        if j["step"] in ("views_dropped", "rebuilt"):
            waiting.append(j)
    return waiting


# ------------------------------------------------------------------------------- the API


def forget(
    home: MemcHome,
    *,
    entry_ids=(),
    source_uri: str | None = None,
    scope: str | None = None,
    subject: str | None = None,
    reason: str,
    by: str,
    rebuild: Rebuild | None = None,
    on_step: StepHook | None = None,
) -> ForgetReport:
    """Erase what ``selector`` names (see the module docstring). ``rebuild`` compiles every view
    again once the purge is done (``orchestration.runner.rebuild_views``); without it, the views
    stay dropped until the next build. The caller passes it, so that this package never names
    the layer that runs Dagster (which itself finishes interrupted erasures before a build)."""
    rebuild = rebuild or None
    selector = make_selector(entry_ids, source_uri, scope, subject)
    reason, by = check_request(reason, by)
    home.ensure()
    report = ForgetReport(status="done", selector=selector.describe(), reason=reason, by=by)
    t_start = time.perf_counter()
    with _home_lock(home):
        waiting = _resume_locked(home, report, rebuild=rebuild, hook=on_step)
        t0 = time.perf_counter()
        res = resolve(home, open_ledger(home.ledger), selector)
        report.named, report.cascaded, report.already_erased = res.named, res.cascaded, res.already_erased
        report.seconds["resolve"] = round(time.perf_counter() - t0, 3)
        if not res.erased:
            report.status = "nothing_to_erase"
            if waiting and rebuild:
                _rebuild_and_finish(home, waiting, report, on_step, rebuild)
            report.seconds["total"] = round(time.perf_counter() - t_start, 3)
            return report
        scopes = {s for s in _scopes(home, res.erased)}
        tomb = _tombstone(res, selector, reason, by, scopes.pop() if len(scopes) == 1 else "default")
        journal: dict[str, Any] = {
            "erasure_id": tomb.entry_id,
            "created_at": datetime.now(timezone.utc).isoformat(),
            "selector": selector.describe(),
            "reason": reason,
            "by": by,
            "erased": res.erased,
            "named": len(res.named),
            "cascaded": len(res.cascaded),
            "rebuild": rebuild is not None,
            "tombstone": json.loads(tomb.model_dump_json()),
        }
        report.erasure_id = tomb.entry_id
        existing = _journal_path(home, tomb.entry_id)
        if existing.exists():  # the same request, interrupted and not resumed above: continue it
            journal = json.loads(existing.read_text())
        else:
            _save(home, journal, "requested")
            if on_step:
                on_step(tomb.entry_id, "requested")
        _advance(home, journal, report, hook=on_step)
        if rebuild:
            _rebuild_and_finish(home, [*waiting, journal], report, on_step, rebuild)
    report.seconds["total"] = round(time.perf_counter() - t_start, 3)
    return report


def resume(home: MemcHome, *, rebuild: Rebuild | None = None, on_step: StepHook | None = None) -> ForgetReport:
    """Finish every interrupted erasure (the journal says where each stopped). Cheap when there
    is none: one directory listing and one read of the ledger's erasure rows."""
    report = ForgetReport(status="done")
    if not home.ledger.exists():
        return report
    with _home_lock(home):
        waiting = _resume_locked(home, report, rebuild=rebuild, hook=on_step)
        if waiting and rebuild:
            _rebuild_and_finish(home, waiting, report, on_step, rebuild)
    return report


def _scopes(home: MemcHome, ids: list[str]) -> set[str]:
    wanted = set(ids)
    t = open_ledger(home.ledger, write=False).read(["entry_id", "scope"]).to_pylist()
    return {r["scope"] for r in t if r["entry_id"] in wanted}


__all__ = ["ForgetReport", "STEPS", "forget", "journals", "make_selector", "pending", "resume"]
