"""The independent visibility checker: every compiled context passes through it.

It trusts nothing the stores returned. For each item it re-reads from the ledger itself the
visibility of every entry the item shows (``ContextItem.entry_ids``: a conversation window
covers several turns) and of every state fact's source entry, and drops the item when the asker
may not see one of them. Derived entries (dreaming) must also be visible through their whole
lineage: an asker sees one only if it may see every entry it was derived from. Erased entries
are dropped for everyone, including entries an erasure names whose purge has not run yet (the
tombstone is enough) and derived entries computed from them.

Every drop is a violation of a store's own filter (the stores push visibility into their
queries): it is logged at ERROR and counted, and the compiled context says how many.

It shares only :func:`memc.visibility.may_see` (the definition of the rule) with the stores,
not their code paths. The ledger columns it needs are read once per ledger state and cached by
the batch files' (name, size, mtime, inode), so a compile costs one ``stat`` per batch file when
nothing changed, and only the new entries are read after an append.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from ledger import Ledger, shared_reader
from ledger.stubs import is_erased_stub
from memc.visibility import may_see

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LedgerFacts:
    visibility: dict[str, Any]  # entry id -> visibility list (None when malformed)
    derived_from: dict[str, tuple[str, ...]]
    erased: frozenset[str]  # named by a tombstone, stubbed, or derived from either
    ingested_by: dict[str, str | None] = field(default_factory=dict)  # entry id -> who wrote it
    # scope -> the distinct visibilities of its entries: which scopes an asker may see, without a
    # pass over every entry per ask (a scope holds a handful of distinct visibilities).
    scopes: dict[str, frozenset[tuple[str, ...]]] = field(default_factory=dict)
    # asker -> the scopes it may see (visible_scopes), worked out once per version of the facts:
    # at 100k entries the compile bench's two scopes hold 1,828 distinct visibilities, ~1 ms a
    # compile to go through again for every ask.
    seen_scopes: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class _Cached:
    signature: tuple  # the batch files the facts were read from
    head: int  # the highest seq read
    facts: LedgerFacts
    named: frozenset[str]  # erased before the lineage closure: stubs and ids tombstones name


_cache: dict[str, _Cached] = {}
_SEEN_SCOPES_ASKERS = 4096  # askers whose visible scopes one version of the facts remembers
_cache_lock = threading.Lock()
_COLUMNS = ["seq", "entry_id", "kind", "visibility", "derived_from", "attributes", "ingested_by", "scope"]


def ledger_facts(ledger: Ledger) -> LedgerFacts:
    """The facts of the ledger as it is now, cached per ledger directory and signature.

    When the only change since the cached facts is new batch files (appends: every file read
    before is still there, byte for byte the same by its signature), only the new entries are
    read and added; any other change (an erasure's purge rewrote a file) reads everything again.
    Reads go through one long-lived reader per directory, so each file's checksum is verified
    once per process rather than once per compile."""
    key = ledger.root if isinstance(ledger.root, str) else str(ledger.root.resolve())  # an s3:// URI, or a directory
    sig = ledger.signature()
    with _cache_lock:
        hit = _cache.get(key)
        if hit and hit.signature == sig:
            return hit.facts
    reader = shared_reader(ledger.root)
    if hit and len(sig) > len(hit.signature) and sig[: len(hit.signature)] == hit.signature:
        t = reader.read(_COLUMNS, since_seq=hit.head)
        vis, derived_map, named, head = dict(hit.facts.visibility), dict(hit.facts.derived_from), set(hit.named), hit.head
        writers = dict(hit.facts.ingested_by)
        scopes = {sc: set(v) for sc, v in hit.facts.scopes.items()}
    else:
        t = reader.read(_COLUMNS)
        vis, derived_map, named, head, writers, scopes = {}, {}, set(), 0, {}, {}
    ids = t.column("entry_id").to_pylist()
    kinds = t.column("kind").to_pylist()
    derived = t.column("derived_from").to_pylist()
    attrs = t.column("attributes").to_pylist()
    for eid, kind, a in zip(ids, kinds, attrs):
        if kind != "erasure":
            continue
        row = {"kind": kind, "attributes": a}
        if is_erased_stub(row):
            named.add(eid)
            continue
        try:
            listed = json.loads(a or "{}").get("entry_ids") or []
        except (TypeError, ValueError, AttributeError):
            listed = []
        named.update(e for e in listed if isinstance(e, str))
    vis.update(zip(ids, t.column("visibility").to_pylist()))
    writers.update((e, w) for e, w in zip(ids, t.column("ingested_by").to_pylist()) if w)
    derived_map.update((e, tuple(d)) for e, d in zip(ids, derived) if d)
    for sc, v in zip(t.column("scope").to_pylist(), t.column("visibility").to_pylist()):
        if sc is not None:
            scopes.setdefault(sc, set()).add(tuple(v) if v is not None else ())
    if t.num_rows:
        head = max(head, int(pc.max(t.column("seq")).as_py()))
    # Derived entries computed from an erased one are erased too (chains are short).
    erased = set(named)
    changed = True
    while changed:
        changed = False
        for e, inputs in derived_map.items():
            if e not in erased and any(i in erased for i in inputs):
                erased.add(e)
                changed = True
    facts = LedgerFacts(
        visibility=vis, derived_from=derived_map, erased=frozenset(erased), ingested_by=writers,
        scopes={sc: frozenset(v) for sc, v in scopes.items()},
    )  # fmt: skip
    with _cache_lock:
        _cache[key] = _Cached(sig, head, facts, frozenset(named))
    return facts


@dataclass
class AclReport:
    checked_items: int = 0
    checked_facts: int = 0
    checked_conflicts: int = 0
    dropped_items: int = 0
    dropped_facts: int = 0
    dropped_conflicts: int = 0
    dropped_skills: int = 0
    violations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return self.dropped_items + self.dropped_facts + self.dropped_conflicts + self.dropped_skills


class Checker:
    """May ``asker`` see an entry, by the ledger's own record and the entry's lineage?"""

    def __init__(self, facts: LedgerFacts, asker: str):
        self.facts = facts
        self.asker = asker
        self._memo: dict[str, str | None] = {}

    def why_not(self, entry_id: str) -> str | None:
        """None when visible, else the reason (unknown, erased, not visible, lineage)."""
        if entry_id in self._memo:
            return self._memo[entry_id]
        self._memo[entry_id] = "lineage cycle"  # a cycle in derived_from is refused, not looped
        reason: str | None = None
        if entry_id not in self.facts.visibility:
            reason = "not in the ledger"
        elif entry_id in self.facts.erased:
            reason = "erased"
        elif not may_see(self.asker, self.facts.visibility[entry_id]):
            reason = "not visible to the asker"
        else:
            for src in self.facts.derived_from.get(entry_id, ()):
                if self.why_not(src) is not None:
                    reason = f"derived from {src}, which the asker may not see"
                    break
        self._memo[entry_id] = reason
        return reason


def check_context(ctx: Any, ledger: Ledger) -> AclReport:
    """Drop, in place, every item and state fact of ``ctx`` (a query.context.Context) that cites
    an entry its asker may not see or that was erased; return what was checked and dropped."""
    conflicts = list(getattr(ctx, "conflicts", None) or [])
    skills = list(getattr(ctx, "skills", None) or [])
    report = AclReport(checked_items=len(ctx.items), checked_facts=len(ctx.state), checked_conflicts=len(conflicts))
    if not ctx.items and not ctx.state and not conflicts and not skills:
        return report
    checker = Checker(ledger_facts(ledger), ctx.asker)
    kept = []
    for it in ctx.items:
        cited = list(it.entry_ids or [it.entry_id])
        if it.entry_id not in cited:
            cited.append(it.entry_id)
        bad = [(e, checker.why_not(e)) for e in cited]
        bad = [(e, why) for e, why in bad if why]
        if bad:
            report.dropped_items += 1
            report.violations.append({"item": it.entry_id, "entries": [e for e, _ in bad], "why": bad[0][1]})
        else:
            # duplicates are only named, never shown: an unseeable one is dropped from the list
            if getattr(it, "duplicates", None):
                it.duplicates = [e for e in it.duplicates if not checker.why_not(e)]
            # Provenance from the ledger itself, not from a view: who wrote each entry shown.
            it.ingested_by = [checker.facts.ingested_by.get(e) for e in (it.entry_ids or [it.entry_id])]
            kept.append(it)
    facts = []
    for f in ctx.state:
        why = checker.why_not(f.source_entry_id)
        if why:
            report.dropped_facts += 1
            report.violations.append({"state": f"{f.subject} {f.predicate}", "entries": [f.source_entry_id], "why": why})
        else:
            f.source_ingested_by = checker.facts.ingested_by.get(f.source_entry_id)
            # a restated value's other sources are cited too: an unseeable one is dropped
            f.sources = [s for s in f.sources if not checker.why_not(s["source_entry_id"])]
            facts.append(f)
    ctx.items, ctx.state = kept, facts
    if conflicts:
        kept_conflicts = []
        for c in conflicts:
            # a conflict shows both sides' text: both sources must pass
            sources = list(c.get("source_entry_ids") or []) or [c.get(k) for k in ("source_entry_id_a", "source_entry_id_b") if c.get(k)]
            bad = [(e, checker.why_not(e)) for e in sources] if sources else [("-", "no source entry")]
            bad = [(e, why) for e, why in bad if why]
            if bad:
                report.dropped_conflicts += 1
                report.violations.append({"conflict": c.get("predicate"), "entries": [e for e, _ in bad], "why": bad[0][1]})
            else:
                for side in c.get("sides") or ():
                    side["ingested_by"] = checker.facts.ingested_by.get(side.get("source_entry_id"))
                kept_conflicts.append(c)
        ctx.conflicts = kept_conflicts
    if skills:
        # A skill's numbers come from every trajectory it was computed from: all must pass (the
        # view derives its visibility as their meet; an erasure whose rebuild has not run yet
        # still names them there).
        kept_skills = []
        for sk in skills:
            cited = [*sk.get("source_entry_ids", ()), *sk.get("compared_entry_ids", ())]
            bad = [(e, why) for e in cited if (why := checker.why_not(e))]
            if bad:
                report.dropped_skills += 1
                report.violations.append({"skill": sk["skill_id"], "entries": [e for e, _ in bad], "why": bad[0][1]})
            else:
                kept_skills.append(sk)
        ctx.skills = kept_skills
    for v in report.violations:
        # Erased entries still in a view between the tombstone and the purge are expected, not
        # a filter bug: logged at INFO. Anything else means a store filter let it through.
        level = logging.INFO if v["why"] == "erased" else logging.ERROR
        log.log(level, "acl: dropped %s for asker %s: %s (%s)", v.get("item") or v.get("state") or v.get("conflict") or v.get("skill"), ctx.asker, v["why"], ",".join(v["entries"]))
    return report


class UnknownScopeError(LookupError):
    """An ask named a scope holding nothing the asker may see: a typo, or someone else's scope.
    Answered as an error, not as an empty context that looks like memory knowing nothing. It
    names only the scopes the asker may see, so it tells no one that a private scope exists."""

    def __init__(self, scope: str, visible: list[str]):
        self.scope = scope
        self.visible = visible
        listed = ", ".join(repr(s) for s in visible) if visible else "none"
        super().__init__(f"unknown scope {scope!r}: it holds no evidence you may see; the scopes you may see: {listed}")


def visible_scopes(ledger: Ledger, asker: str) -> list[str]:
    """The scopes holding at least one entry ``asker`` may see, sorted."""
    facts = ledger_facts(ledger)
    seen = facts.seen_scopes.get(asker)
    if seen is None:
        seen = tuple(sorted(sc for sc, vis in facts.scopes.items() if any(may_see(asker, v) for v in vis)))
        if len(facts.seen_scopes) < _SEEN_SCOPES_ASKERS:
            facts.seen_scopes[asker] = seen
    return list(seen)


def check_scope(ledger: Ledger, asker: str, scope: str | None) -> None:
    """Raises :class:`UnknownScopeError` when ``scope`` holds nothing ``asker`` may see."""
    if scope is None:
        return
    visible = visible_scopes(ledger, asker)
    if scope not in visible:
        raise UnknownScopeError(scope, visible)


def may_see_entries(ledger: Ledger, asker: str, entry_ids: list[str]) -> dict[str, str | None]:
    """For tests and audits: entry id -> None (visible) or why not."""
    checker = Checker(ledger_facts(ledger), asker)
    return {e: checker.why_not(e) for e in entry_ids}
