"""Deterministic entity resolution: which written names are one entity, and why.

Rules, strongest first; each merge records its rule and the entry ids that support it:

- ``exact``: the name as a speaker writes it (its canonical form).
- ``case/space``: the same name up to case and spacing ("elena", "Elena ").
- ``prefix-in-conversation``: a short name one participant uses to *address* another in the
  same conversation ("Hey Jo!", "..., Jo?") that is a prefix of exactly one other
  participant's first name ("Tom" -> "Tomasz"). Addressing is required, so a capitalised word
  at the start of a sentence ("Rain stopped play") is never taken for a nickname.
- ``email-local-part``: an e-mail address that writes an entry (an .eml's sender) whose local
  part, with ``.``, ``_`` and ``-`` read as spaces and a ``+tag`` dropped, is the whole name of
  exactly one speaker of the scope (``priya@helio.example`` -> Priya, ``ana.lima@x`` -> Ana
  Lima). Anything less certain merges nothing: the address stays out of the entities (an
  address or a file name is never an entity name: the entities mart).

Entities are per scope: every lookup is keyed by (scope, normalized name), and the canonical id
is ``memc.ids.entity_id(scope, canonical_name)``, so two people who share a name in different
scopes never merge. A name with no row resolves to its own id (same function), which keeps
unknown names stable and matches the dbt macro of the same name.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

import pyarrow as pa

from memc.filecache import latest
from memc.ids import content_id, entity_id, normalize_name

VERSION = "0.1.0"
# Every rule an alias row may name, strongest first (the module docstring says what each means;
# the entity_aliases_explainable check refuses any other).
RULES = ("exact", "case/space", "prefix-in-conversation", "email-local-part")

ALIAS_SCHEMA = pa.schema(
    [
        pa.field("scope", pa.string(), nullable=False),
        pa.field("alias", pa.string(), nullable=False),
        pa.field("normalized", pa.string(), nullable=False),
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("canonical_name", pa.string(), nullable=False),
        pa.field("rule", pa.string(), nullable=False),
        pa.field("evidence", pa.list_(pa.string()), nullable=False),
    ]
)

# Evidence is a sample, not an index: enough entry ids to check a merge by hand. A speaker of a
# 600-turn conversation would otherwise carry 600 ids in every row.
MAX_EVIDENCE = 10
MIN_NICKNAME = 2  # "Tom" for "Tomasz"; a single letter is an initial, not a name

_WORD = r"[A-Z][a-z\u00E0-\u024F'\-]+"
_GREETING = r"(?:hey|hi|hello|thanks|thank you|bye|dear|congrats|congratulations|yes|yeah|oh|wow|sorry|sure|ok|okay|well|so|good morning|good night|great|aww|awesome|haha)"
# "Hey Jo!", "Thanks, Jo." / ", Jo!" / "Jo, ..." at the start of the text.
_ADDRESS = [
    re.compile(rf"\b{_GREETING}\s*,?\s+(?P<name>(?-i:{_WORD}))\s*[!?.,:;)]", re.I),
    re.compile(rf",\s+(?P<name>(?-i:{_WORD}))\s*[!?.]"),
    re.compile(rf"^\s*(?P<name>(?-i:{_WORD})),\s"),
]


@dataclass
class _Name:
    written: Counter = field(default_factory=Counter)
    evidence: list[str] = field(default_factory=list)


def _conversation(entry: dict[str, Any]) -> str | None:
    try:
        attrs = json.loads(entry.get("attributes") or "{}")
    except (TypeError, ValueError):
        attrs = {}
    return attrs.get("conversation_id") or entry.get("session_id")


def _is_name(actor: str | None) -> bool:
    return bool(actor) and "@" not in actor and not actor.endswith("-bot") and any(c.isalpha() for c in actor)


# A bare address, as the e-mail ingester records a sender (no display name, no angle brackets).
_EMAIL = re.compile(r"^(?P<local>[^\s@<>]+)@[^\s@<>]+\.[^\s@<>]+$")


def email_local_name(address: str | None) -> str | None:
    """The name an e-mail address's local part spells, normalized ("Priya.Nair+work@x.org" ->
    "priya nair"), or None when ``address`` is not a bare e-mail address."""
    m = _EMAIL.match(address or "")
    if not m:
        return None
    local = m.group("local").split("+", 1)[0]
    return normalize_name(re.sub(r"[._-]+", " ", local)) or None


# The ledger columns build_aliases and build_participants read (``Ledger.iter_entries(columns=...)``):
# turning every column of 100k entries into dicts was most of entity resolution's 3 s.
ALIAS_COLUMNS = ["entry_id", "kind", "scope", "actor", "session_id", "content", "attributes"]
PARTICIPANT_COLUMNS = ["kind", "scope", "actor", "session_id"]


def resolution_tables(ledger: Any, until_seq: int) -> tuple[pa.Table, pa.Table]:
    """(aliases, participants) of the ledger's entries up to ``until_seq``: what a build compares
    with the claims' resolver before its run, and what the run's entity_aliases asset writes. Made
    once per version of the ledger's files, and from the entries after those last folded in this
    process while no file they came from was replaced (a purge or a compaction writes new ones):
    at 100k entries folding every entry takes ~1.3 s a build, mostly the address patterns."""

    files = ledger.signature()

    def make() -> tuple[pa.Table, pa.Table]:
        with _FOLDS_LOCK:
            held = _FOLDS.pop(str(ledger.root), None)
        since, fold = 0, _Resolution()
        if held is not None and set(held[0]) <= set(files) and held[1] <= until_seq:
            _, since, fold = held
        fold.add(ledger.iter_entries(since_seq=since, until_seq=until_seq, columns=ALIAS_COLUMNS))
        tables = fold.aliases(), fold.participants()
        with _FOLDS_LOCK:
            _FOLDS.clear()  # one ledger's at a time, like `latest`
            _FOLDS[str(ledger.root)] = (files, until_seq, fold)
        return tables

    return latest("resolution_tables", (str(ledger.root), until_seq, files), make)


class _Resolution:
    """What the alias and participant tables are made from, gathered from entries in seq order:
    who speaks under which written forms, who speaks in each conversation and session, who is
    addressed by which name, which e-mail addresses write. Folding more entries (higher seqs)
    then gives what one pass over all of them gives; the tables are read from it without
    changing it."""

    def __init__(self) -> None:
        self.speakers: dict[tuple[str, str], _Name] = defaultdict(_Name)  # (scope, normalized) -> forms
        self.by_conv: dict[tuple[str, str], set[str]] = defaultdict(set)  # (scope, conversation) -> speakers (normalized)
        self.addressed: list[tuple[str, str, str, str, str]] = []  # scope, conversation, name, speaker, entry_id
        self.senders: dict[tuple[str, str], list[str]] = defaultdict(list)  # (scope, address) -> entry ids
        self.turns: dict[tuple[str, str, str], Counter] = defaultdict(Counter)  # scope, session, normalized -> forms

    def add(self, entries: Iterable[dict[str, Any]], *, aliases: bool = True) -> "_Resolution":
        """Fold ``entries`` (ALIAS_COLUMNS; PARTICIPANT_COLUMNS are enough without ``aliases``)."""
        for e in entries:
            actor, scope = e.get("actor"), e["scope"]
            is_name = e["kind"] == "message" and _is_name(actor)
            if is_name and e.get("session_id"):
                self.turns[(scope, e["session_id"], normalize_name(actor))][" ".join(actor.split())] += 1
            if not aliases:
                continue
            if email_local_name(actor) is not None:
                self.senders[(scope, " ".join(actor.split()))].append(e["entry_id"])
            if not is_name:
                continue
            norm = normalize_name(actor)
            s = self.speakers[(scope, norm)]
            s.written[" ".join(actor.split())] += 1
            if len(s.evidence) < MAX_EVIDENCE:
                s.evidence.append(e["entry_id"])
            conv = _conversation(e)
            if conv:
                self.by_conv[(scope, conv)].add(norm)
                for pattern in _ADDRESS:
                    for m in pattern.finditer(e["content"]):
                        self.addressed.append((scope, conv, m.group("name"), norm, e["entry_id"]))
        return self

    def aliases(self) -> pa.Table:
        """The alias table (rows sorted by scope, normalized alias)."""
        speakers, by_conv = self.speakers, self.by_conv
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        canonical: dict[tuple[str, str], str] = {}
        for (scope, norm), s in speakers.items():
            # The canonical form is the one written most often (ties: alphabetical, for determinism).
            name = sorted(s.written.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            canonical[(scope, norm)] = name
            eid = entity_id(scope, name)
            for form in sorted(s.written):
                rows[(scope, form)] = {
                    "scope": scope, "alias": form, "normalized": norm, "entity_id": eid, "canonical_name": name,
                    "rule": "exact" if form == name else "case/space", "evidence": list(s.evidence),
                }

        nick_evidence: dict[tuple[str, str, str], list[str]] = defaultdict(list)  # scope, nick, target -> ids
        ambiguous: set[tuple[str, str]] = set()
        targets: dict[tuple[str, str], str] = {}
        for scope, conv, name, speaker, eid in self.addressed:
            nick = normalize_name(name)
            if len(nick) < MIN_NICKNAME or (scope, nick) in speakers:
                continue  # a participant's own name, or too short to mean anything
            others = sorted(
                n for n in by_conv[(scope, conv)]
                if n != speaker and n.split()[0] != nick and n.split()[0].startswith(nick)
            )  # fmt: skip
            if len(others) != 1:
                continue  # no participant, or several, could be meant: no merge
            key = (scope, nick)
            if targets.setdefault(key, others[0]) != others[0]:
                ambiguous.add(key)  # the same nickname points at different people in two conversations
            ev = nick_evidence[(scope, nick, others[0])]
            if len(ev) < MAX_EVIDENCE // 2:
                ev.append(eid)
        for (scope, nick), target in sorted(targets.items()):
            if (scope, nick) in ambiguous:
                continue
            name = canonical[(scope, target)]
            written = nick_evidence[(scope, nick, target)]
            rows[(scope, nick)] = {
                "scope": scope, "alias": _title(nick), "normalized": nick, "entity_id": entity_id(scope, name),
                "canonical_name": name, "rule": "prefix-in-conversation",
                # where the nickname is used to address them, then where they speak under their name
                "evidence": written + speakers[(scope, target)].evidence[: MAX_EVIDENCE - len(written)],
            }
        for (scope, address), ids in sorted(self.senders.items()):
            target = email_local_name(address)
            if (scope, target) not in speakers:
                continue  # the local part names no speaker wholly ("pn", "priya" for "Priya Nair"): no merge
            name = canonical[(scope, target)]
            rows[(scope, normalize_name(address))] = {
                "scope": scope, "alias": address, "normalized": normalize_name(address), "entity_id": entity_id(scope, name),
                "canonical_name": name, "rule": "email-local-part",
                # where the address writes, then where the person speaks under their name
                "evidence": ids[: MAX_EVIDENCE // 2] + speakers[(scope, target)].evidence[: MAX_EVIDENCE - min(len(ids), MAX_EVIDENCE // 2)],
            }
        ordered = sorted(rows.values(), key=lambda r: (r["scope"], r["normalized"], r["alias"]))
        return pa.Table.from_pylist(ordered, schema=ALIAS_SCHEMA)

    def participants(self) -> pa.Table:
        """Every session's speakers, one row per (scope, session, speaker), sorted."""
        rows = [
            {"scope": scope, "session_id": session, "participant": sorted(forms.items(), key=lambda kv: (-kv[1], kv[0]))[0][0], "turns": sum(forms.values())}
            for (scope, session, _), forms in sorted(self.turns.items())
        ]
        return pa.Table.from_pylist(rows, schema=PARTICIPANT_SCHEMA)


# The fold resolution_tables last made in this process: ledger root -> (its files, the seq folded
# up to, the fold).
_FOLDS: dict[str, tuple[tuple, int, _Resolution]] = {}
_FOLDS_LOCK = threading.Lock()


def build_aliases(entries: Iterable[dict[str, Any]]) -> pa.Table:
    """The alias table of a ledger (rows sorted by scope, normalized alias)."""
    return _Resolution().add(entries).aliases()


# Who speaks in each session: what "you" means in a two-party session (the other one).
PARTICIPANT_SCHEMA = pa.schema(
    [
        pa.field("scope", pa.string(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("participant", pa.string(), nullable=False),  # the speaker's name as most often written
        pa.field("turns", pa.int64(), nullable=False),
    ]
)


def build_participants(entries: Iterable[dict[str, Any]]) -> pa.Table:
    """Every session's speakers (message entries with a person as actor), one row per
    (scope, session, speaker), sorted."""
    return _Resolution().add(entries, aliases=False).participants()


def _title(nick: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in nick.split())


class Resolver:
    """Name -> canonical entity, per scope, from an alias table (empty: every name is its own)."""

    def __init__(self, aliases: pa.Table | None = None, participants: pa.Table | None = None):
        self._map: dict[tuple[str, str], tuple[str, str]] = {}
        if aliases is not None:
            for r in aliases.select(["scope", "normalized", "entity_id", "canonical_name"]).to_pylist():
                self._map[(r["scope"], r["normalized"])] = (r["entity_id"], r["canonical_name"])
        self._sessions: dict[tuple[str, str], list[str]] = defaultdict(list)
        if participants is not None:
            for r in participants.select(["scope", "session_id", "participant"]).to_pylist():
                self._sessions[(r["scope"], r["session_id"])].append(r["participant"])

    def resolve(self, scope: str, name: str) -> tuple[str, str]:
        """(entity_id, canonical name) of ``name`` in ``scope``."""
        hit = self._map.get((scope, normalize_name(name)))
        if hit:
            return hit
        clean = " ".join(name.split())
        return entity_id(scope, clean), clean

    def entity_id(self, scope: str, name: str) -> str:
        return self.resolve(scope, name)[0]

    def known(self, scope: str, name: str) -> bool:
        return (scope, normalize_name(name)) in self._map

    def other_participant(self, scope: str, session_id: str | None, speaker: str) -> str | None:
        """Whom ``speaker`` addresses as "you": the one other speaker of a two-party session; None
        when the session has more (or fewer) people, or ``speaker`` is not one of them."""
        names = self._sessions.get((scope, session_id or ""), [])
        ids = {self.entity_id(scope, n): n for n in names}
        me = self.entity_id(scope, speaker)
        if len(ids) != 2 or me not in ids:
            return None
        return next(n for i, n in ids.items() if i != me)

    def names(self, scope: str) -> list[str]:
        """Every normalized name known in ``scope`` (for mention detection)."""
        return [n for s, n in self._map if s == scope]

    def fingerprint(self) -> str:
        """A hash of everything resolution reads: the names, the entity each is, and who speaks
        in each session. Claims extracted with another fingerprint may resolve a name, a "you"
        or a mention differently; with the same, a day's claims are what they would be again."""
        sessions = sorted((k, sorted(v)) for k, v in self._sessions.items())
        return content_id("resolver", sorted(self._map.items()), sessions)
