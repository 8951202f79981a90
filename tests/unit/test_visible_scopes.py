"""The scopes an asker may see, remembered per version of the ledger's facts (query/acl.py)."""

from __future__ import annotations

from datetime import datetime, timezone

from ledger import Ledger
from ledger.schema import NewEntry
from query.acl import ledger_facts, visible_scopes

SAID = datetime(2025, 3, 2, 10, 0, tzinfo=timezone.utc)


def test_visible_scopes_follow_every_append_and_each_asker(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    note = lambda scope, who: NewEntry(kind="document", scope=scope, content=f"a note in {scope}", valid_at=SAID, visibility=who)  # noqa: E731
    ledger.append([note("team", ("public",)), note("pia-notes", ("pia",))])
    assert visible_scopes(ledger, "pia") == ["pia-notes", "team"]
    assert visible_scopes(ledger, "tom") == ["team"]
    assert ledger_facts(ledger).seen_scopes == {"pia": ("pia-notes", "team"), "tom": ("team",)}
    # a returned list is the caller's own: changing it changes nothing remembered
    visible_scopes(ledger, "tom").append("pia-notes")
    assert visible_scopes(ledger, "tom") == ["team"]
    # an append makes new facts: tom's new scope is seen at once, not what was remembered
    ledger.append([note("tom-notes", ("tom", "pia"))])
    assert visible_scopes(ledger, "tom") == ["team", "tom-notes"]
    assert visible_scopes(ledger, "pia") == ["pia-notes", "team", "tom-notes"]
    assert visible_scopes(ledger, "ana") == ["team"]
