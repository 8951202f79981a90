"""Two scopes can each hold an entity of one name (issue 20: an inbox drop about Elena landed in
scope default beside the team's Elena). Wherever rows of several scopes are shown together, each
says its scope; rows of one scope read as before. The renderers of `memc state`, `memc actions`
and the compiled context's "What holds now", on hand-made rows shaped like the marts' (no home)."""

from __future__ import annotations

from datetime import datetime, timezone

T = datetime(2025, 6, 1, tzinfo=timezone.utc)


def _fact(scope: str, city: str, since: datetime) -> dict:
    return {
        "scope": scope, "subject_id": f"p_{scope}", "subject": "Elena", "predicate": "lives_in", "object": city,
        "valid_from": since, "valid_to": None, "recorded_at": since, "source_ref": f"{scope}:1",
        "source_entry_id": f"e_{scope}", "source_kind": "message", "quote": f"I live in {city}", "source_ingested_by": None,
    }  # fmt: skip


def _state(*facts: dict) -> dict:
    return {
        "entity": "Elena", "asker": "tomasz", "as_of": T, "known_at": T, "conflicts": [], "facts": list(facts),
        "subjects": [{"subject_id": f["subject_id"], "scope": f["scope"]} for f in facts],
    }  # fmt: skip


def test_memc_state_groups_facts_by_scope_only_when_scopes_mix():
    from cli.ask import _render

    one = _render(_state(_fact("team", "Berlin", datetime(2024, 4, 1))))
    assert "scope" not in one and "  lives_in             Berlin  (since 2024-04-01)" in one

    two = _render(_state(_fact("default", "Madrid", datetime(2025, 5, 1)), _fact("team", "Berlin", datetime(2024, 4, 1))))
    lines = two.splitlines()
    assert lines[0].endswith("; in 2 scopes (default, team): --scope S shows one")
    madrid, berlin = lines.index(" scope default:"), lines.index(" scope team:")
    assert madrid < berlin
    assert lines[madrid + 1].strip().startswith("lives_in") and "Madrid" in lines[madrid + 1]
    assert "Berlin" in lines[berlin + 1]


def test_memc_actions_names_the_scope_of_each_line_only_when_scopes_mix():
    from query.actions import render_actions

    def action(scope: str, city: str) -> dict:
        return {
            "scope": scope, "valid_at": T, "action": "ADD", "rule": "new_value", "subject": "Elena", "predicate": "lives_in",
            "object": city, "closes": [], "duplicate_of": [], "closed_by": [], "detail": None, "considered_kind": "claim",
            "source_ref": f"{scope}:1", "source_entry_id": f"e_{scope}", "extractor": "rules", "extractor_version": "0.2.0", "fold_version": "f1",
        }  # fmt: skip

    base = {"entity": "Elena", "asker": "tomasz", "as_of": T, "known_at": T, "closed_values": {}}
    one = render_actions({**base, "actions": [action("team", "Berlin")]})
    assert "[team]" not in one and "scopes" not in one
    two = render_actions({**base, "actions": [action("team", "Berlin"), action("default", "Madrid")]}).splitlines()
    assert two[0].endswith("; in 2 scopes (default, team): --scope S shows one")
    assert "2025-06-01  [team]  ADD" in two[1] and "Berlin" in two[1]
    assert "2025-06-01  [default]  ADD" in two[2] and "Madrid" in two[2]


def test_what_holds_now_names_each_facts_scope_when_an_ask_mixes_scopes():
    from query.context import Context, StateFact
    from query.pack import pack

    def fact(scope: str, city: str) -> StateFact:
        return StateFact(subject="Elena", predicate="lives_in", object=city, valid_from="2025-05-01T00:00:00+00:00", valid_to=None,
                         source_entry_id=f"e_{scope}", source_ref=f"{scope}:1", quote=f"I live in {city}", scope=scope)  # fmt: skip

    one = Context(question="Where does Elena live?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
    one.state = [fact("team", "Berlin")]
    assert "  Elena lives_in Berlin  (since 2025-05-01" in one.render()

    two = Context(question="Where does Elena live?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
    two.state = [fact("team", "Berlin"), fact("default", "Madrid")]
    pack(two, 10_000, 0.5)  # the packer counts the lines as rendered, scope included
    text = two.render()
    assert "  [team] Elena lives_in Berlin  (since 2025-05-01" in text
    assert "  [default] Elena lives_in Madrid  (since 2025-05-01" in text
    assert two.tokens >= len(text.split())  # counted with the [scope] prefixes
