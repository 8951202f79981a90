"""Which entries an erasure names: selectors resolve to opaque entry ids, then lineage adds
every derived entry computed from one of them.

Selectors match on ids and metadata (entry id, source URI, scope, entity id), never on text:
an erasure must not depend on a content predicate (LanceDB writes a delete's predicate into its
manifests; docs/stack-notes.md, "Erasure"), and everything downstream of this module sees ids only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ledger import Ledger
from ledger.schema import PRINCIPAL_PATTERN, SCOPE_PATTERN
from ledger.stubs import is_erased_stub
from memc.atomic import read_parquet
from memc.home import MemcHome
from views.marts import ENTITIES, mart_path, read_mart

_PRINCIPAL = re.compile(PRINCIPAL_PATTERN)
_SCOPE = re.compile(SCOPE_PATTERN)
_ENTRY_ID = re.compile(r"^e_[0-9a-f]{24}$")
_ENTITY_ID = re.compile(r"^ent_[0-9a-f]{24}$")
MAX_REASON = 2000


@dataclass(frozen=True)
class Selector:
    kind: str  # "entry" | "source" | "scope" | "subject"
    entry_ids: tuple[str, ...] = ()
    value: str | None = None

    def describe(self) -> dict[str, Any]:
        # The source URI is not recorded: a file name can itself say what was erased.
        if self.kind == "entry":
            return {"kind": "entry", "count": len(self.entry_ids)}
        if self.kind == "source":
            return {"kind": "source"}
        return {"kind": self.kind, "value": self.value}


def make_selector(
    entry_ids: Sequence[str] = (),
    source_uri: str | None = None,
    scope: str | None = None,
    subject: str | None = None,
) -> Selector:
    """Exactly one kind of selector, well formed; ValueError with a clear message otherwise."""
    if isinstance(entry_ids, str):
        entry_ids = [entry_ids]
    given = [k for k, v in (("entry_ids", list(entry_ids)), ("source_uri", source_uri), ("scope", scope), ("subject", subject)) if v]
    if not given:
        raise ValueError("say what to forget: entry ids, a source URI, a scope or a subject entity id")
    if len(given) > 1:
        raise ValueError(f"give exactly one kind of selector, not {' and '.join(given)}")
    if entry_ids:
        bad = [e for e in entry_ids if not isinstance(e, str) or not _ENTRY_ID.match(e)]
        if bad:
            raise ValueError(f"malformed entry id(s) {bad[:5]!r}: an entry id looks like e_ followed by 24 hex digits")
        return Selector("entry", tuple(sorted(set(entry_ids))))
    if source_uri:
        if not isinstance(source_uri, str) or len(source_uri) > 4096 or "\x00" in source_uri:
            raise ValueError("malformed source URI")
        return Selector("source", value=source_uri)
    if scope:
        if not isinstance(scope, str) or not _SCOPE.match(scope):
            raise ValueError(f"malformed scope {scope!r}: use letters, digits and _.:-")
        return Selector("scope", value=scope)
    if not isinstance(subject, str) or not _ENTITY_ID.match(subject):
        raise ValueError(f"malformed subject {subject!r}: give an entity id (ent_ followed by 24 hex digits; see `memc state`)")
    return Selector("subject", value=subject)


def check_request(reason: str, by: str) -> tuple[str, str]:
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("an erasure needs a reason (--reason)")
    if len(reason) > MAX_REASON:
        raise ValueError(f"the reason is longer than {MAX_REASON} characters")
    if not isinstance(by, str) or not by.strip():
        raise ValueError("an erasure needs the principal who asks for it (--by)")
    if not _PRINCIPAL.match(by):
        raise ValueError(f"malformed principal {by!r}: use letters, digits and _.@:-")
    return reason.strip(), by


@dataclass
class Resolution:
    named: list[str] = field(default_factory=list)  # live entries the selector names
    cascaded: list[str] = field(default_factory=list)  # derived entries computed from them
    already_erased: list[str] = field(default_factory=list)  # named, but stubs already

    @property
    def erased(self) -> list[str]:
        return sorted({*self.named, *self.cascaded})


def _source_forms(uri: str) -> set[str]:
    forms = {uri}
    if "://" not in uri:  # a path: inbox files are recorded by their file URI
        try:
            forms.add(Path(uri).expanduser().resolve().as_uri())
        except (OSError, ValueError):
            pass
    return forms


def _subject_entries(home: MemcHome, entity: str) -> set[str]:
    """Entries about an entity: the turns it spoke and the entries it is mentioned in (the
    entities mart's evidence), the sources of every claim with it as subject or object (any
    extractor version), and derived claims about it."""
    out: set[str] = set()
    ents = mart_path(home, ENTITIES)
    if ents.exists():
        for r in read_mart(ents, columns=["entity_id", "evidence"]).to_pylist():
            if r["entity_id"] == entity:
                out.update(r["evidence"] or ())
    for path in sorted(home.claims.glob("extractor=*/day=*/claims.parquet")):
        t = read_parquet(path)
        cols = [c for c in ("subject_id", "object_id") if c in t.column_names]
        for r in t.select([*cols, "source_entry_id"]).to_pylist():
            if any(r.get(c) == entity for c in cols):
                out.add(r["source_entry_id"])
    return out


def resolve(home: MemcHome, ledger: Ledger, selector: Selector) -> Resolution:
    """The entries ``selector`` names, plus (transitively) every derived entry whose inputs
    include one of them: a dreaming claim computed from an erased turn goes too (it is
    recomputed from what remains on the next build). Erasure tombstones are never erased."""
    t = ledger.read(["entry_id", "kind", "scope", "source_uri", "derived_from", "attributes"])
    rows = t.to_pylist()
    by_id = {r["entry_id"]: r for r in rows}
    stub = {r["entry_id"] for r in rows if is_erased_stub(r)}
    tomb = {r["entry_id"] for r in rows if r["kind"] == "erasure" and r["entry_id"] not in stub}

    if selector.kind == "entry":
        unknown = [e for e in selector.entry_ids if e not in by_id]
        if unknown:
            raise ValueError(f"no such entry in the ledger: {', '.join(unknown[:5])}")
        tombs = [e for e in selector.entry_ids if e in tomb]
        if tombs:
            raise ValueError(f"erasure tombstones cannot be erased: {', '.join(tombs[:5])}")
        wanted = set(selector.entry_ids)
    elif selector.kind == "source":
        forms = _source_forms(selector.value or "")
        wanted = {r["entry_id"] for r in rows if r["source_uri"] in forms}
    elif selector.kind == "scope":
        wanted = {r["entry_id"] for r in rows if r["scope"] == selector.value}
    else:
        if not home.marts.exists() and not home.claims.exists():
            raise ValueError("erasing by subject needs the entity views: run `memc build` first")
        wanted = _subject_entries(home, selector.value or "") & set(by_id)
        wanted |= {
            r["entry_id"]
            for r in rows
            if r["kind"] == "derived_claim" and _attr(r, "subject_id") == selector.value
        }
    wanted -= tomb
    res = Resolution(named=sorted(wanted - stub), already_erased=sorted(wanted & stub))

    # Lineage closure over live derived entries (chains are short: dreaming reads the raw turns).
    gone = set(wanted)
    derived = [(r["entry_id"], set(r["derived_from"] or ())) for r in rows if r["derived_from"] and r["entry_id"] not in tomb]
    changed = True
    while changed:
        changed = False
        for eid, inputs in derived:
            if eid not in gone and inputs & gone:
                gone.add(eid)
                changed = True
    res.cascaded = sorted(gone - wanted - stub)
    return res


def _attr(row: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(row["attributes"] or "{}").get(key)
    except (TypeError, ValueError, AttributeError):
        return None
