"""Entity resolution of e-mail senders (claims/resolve.py, rule email-local-part): an address
whose local part is the whole name of exactly one speaker of the scope is that person's alias;
anything less certain merges nothing (the entities mart then leaves the address out)."""

from __future__ import annotations

from claims.resolve import RULES, Resolver, build_aliases, email_local_name


def _entry(eid: str, actor: str, *, kind: str = "message", scope: str = "team") -> dict:
    return {"entry_id": eid, "actor": actor, "kind": kind, "scope": scope, "content": "Hello.", "session_id": "s1", "attributes": "{}"}


def test_an_address_spelling_a_speakers_name_is_an_alias_of_that_speaker():
    ledger = [
        _entry("e1", "Priya"),
        _entry("e2", "Ana Lima"),
        _entry("m1", "priya@helio.example", kind="document"),
        _entry("m2", "Ana.Lima+work@helio.example", kind="document"),
    ]
    rows = {r["alias"]: r for r in build_aliases(ledger).to_pylist()}
    priya = rows["priya@helio.example"]
    assert (priya["canonical_name"], priya["rule"]) == ("Priya", "email-local-part") and priya["rule"] in RULES  # the check's list
    assert priya["entity_id"] == rows["Priya"]["entity_id"] and priya["evidence"][:1] == ["m1"]
    assert rows["Ana.Lima+work@helio.example"]["canonical_name"] == "Ana Lima"
    resolver = Resolver(build_aliases(ledger))
    assert resolver.resolve("team", "priya@helio.example") == (rows["Priya"]["entity_id"], "Priya")


def test_an_address_that_names_no_speaker_wholly_merges_nothing():
    ledger = [
        _entry("e1", "Priya Nair"),
        _entry("e2", "Priya", scope="other"),  # another scope's Priya is not this one's
        _entry("m1", "priya@helio.example", kind="document"),
        _entry("m2", "pn@helio.example", kind="document"),
        _entry("m3", "design@helio.example", kind="document"),
    ]
    assert {r["rule"] for r in build_aliases(ledger).to_pylist()} == {"exact"}


def test_only_bare_addresses_are_read():
    assert email_local_name("priya@helio.example") == "priya"
    assert email_local_name("ana_lima@x.org") == "ana lima"
    for not_an_address in ("Priya", "team-notes.md", "Priya <priya@helio.example>", "@priya", None):
        assert email_local_name(not_an_address) is None, not_an_address
