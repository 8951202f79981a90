"""Two folds of the same ledger, side by side: what the write policy decided differently and what
holds now differently when the state is folded from extractor version A's claims or from B's
(`memc compare`). Plain DuckDB over two folders of mart exports (memory_actions, state_current
and entities, as dbt writes them); orchestration/compare.py folds each version into its own.

Claim ids differ between versions by design (they hash the extractor key), so an action is
matched by what it is about: the source entry, the subject, the predicate, the object (case and
white space folded) and the polarity, as ``int_extractor_facts_compared`` matches facts. A
rejection has no entity id: its subject's id is computed from the proposed name, as the
``entity_id`` macro does, so a fact A rejected and B kept is one changed decision, not two
unrelated rows. A state row is matched by its value (scope, subject, predicate, object): the same
value held from another source is no change in what holds now.

An asker sees only rows it may see (visibility), and in state_current only what is current for it
(not in ``closed_for``), exactly as `memc actions` and the compiler read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memc.ids import normalize_name
from query.state import StateQueryError, _admits, _marts_connection, _rows
from views.marts import ENTITIES, MEMORY_ACTIONS, STATE_CURRENT

__all__ = ["COMPARED_MARTS", "StateQueryError", "diff_folds", "render_diff"]

# What each fold must export for the comparison.
COMPARED_MARTS = (MEMORY_ACTIONS, STATE_CURRENT, ENTITIES)

_NORM = "lower(trim(regexp_replace({c}, '\\s+', ' ', 'g')))"  # memc.ids.normalize_name


def _norm(column: str) -> str:
    return _NORM.format(c=column)


# The entity a row is about: its subject id, or for a rejection (no id) the id the entity_id macro
# gives the proposed name in its scope.
_SUBJECT_KEY = "coalesce(subject_id, 'ent_' || left(sha256(scope || chr(31) || lower(trim(subject))), 24))"


def _connect(marts_a: Path, marts_b: Path):
    con = _marts_connection(marts_a, COMPARED_MARTS, prefix="a_", missing="the fold of this version did not export it")
    return _marts_connection(marts_b, COMPARED_MARTS, con=con, prefix="b_", missing="the fold of this version did not export it")


def _subject_filter(con, entity: str) -> tuple[str, dict[str, Any]]:
    """SQL (over a row with ``subject_key`` and ``subject``) that keeps the rows about
    ``entity``: an entity id, a canonical name or an alias in either fold's entities, or a
    subject as written. The ids found are used only to filter rows the asker may see, and are
    never reported themselves."""
    key = normalize_name(entity)
    ids = [
        r["entity_id"]
        for r in _rows(
            con.execute(
                f"""
                select entity_id from a_{ENTITIES} where entity_id = $e or lower(name) = $k
                    or list_contains(list_transform(aliases, lambda x: lower(x)), $k)
                union
                select entity_id from b_{ENTITIES} where entity_id = $e or lower(name) = $k
                    or list_contains(list_transform(aliases, lambda x: lower(x)), $k)
                """,
                {"e": entity, "k": key},
            )
        )
    ]
    return (
        f"(subject_key in (select unnest($ids)) or subject_key = $e or {_norm('subject')} = $k)",
        {"ids": ids, "e": entity, "k": key},
    )


def diff_folds(
    marts_a: Path,
    marts_b: Path,
    *,
    principal: str | None,
    entity: str | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    """The actions and current state rows that differ between fold A and fold B (two folders of
    mart exports), per entity, as ``principal`` (None = administrator) may see them.

    ``actions``: one row per matched fact whose decisions (action and rule) differ, or that only
    one fold considered; each side lists its decisions and the values its UPDATE or DELETE
    closed. ``state``: one row per value current in one fold and not the other, with the sources
    it holds from. Erasures come from the ledger, not the extractor, and are the same in both
    folds: they are left out."""
    con = _connect(marts_a, marts_b)
    params: dict[str, Any] = {"scope": scope}
    vis = "true"
    if principal is not None:
        params["p"] = principal
        vis = _admits("visibility", "p")
    about = "true"
    if entity is not None:
        about, extra = _subject_filter(con, entity)
        params.update(extra)
    for side in ("a", "b"):
        # The asker's rows of this fold, each with the values its closing names (those the asker
        # may see; a closed claim it may not see counts, by nothing but its being there).
        con.execute(
            f"""
            create temp table {side}_acts as
            with rows as (
                select *, {_SUBJECT_KEY} as subject_key, {_norm('object')} as object_key
                from {side}_{MEMORY_ACTIONS}
                where considered_kind <> 'erasure' and {vis} and ($scope is null or scope = $scope)
            ),
            seen as (select action_id, object from {side}_{MEMORY_ACTIONS} where {vis})
            select
                r.*,
                coalesce((select list(s.object order by s.object) from seen as s
                          where s.action_id in (select unnest(r.closes))), []) as closes_values,
                len(r.closes) - coalesce((select count(*) from seen as s
                          where s.action_id in (select unnest(r.closes))), 0) as closes_unseen
            from rows as r
            where {about}
            """,
            params,
        )
        con.execute(
            f"""
            create temp table {side}_facts as
            select
                scope, source_entry_id, subject_key, predicate, object_key, polarity,
                any_value(subject) as subject, any_value(object) as object,
                min(valid_at) as valid_at, min(recorded_at) as recorded_at, min(source_seq) as source_seq,
                any_value(source_ref) as source_ref, max(quote) as quote, any_value(visibility) as visibility,
                list_sort(list(distinct action || ' ' || rule)) as decided,
                list(struct_pack(
                    action := action, rule := rule, considered_kind := considered_kind, detail := detail,
                    closes := closes_values, closes_unseen := closes_unseen
                ) order by action, rule, action_id) as decisions
            from {side}_acts
            group by scope, source_entry_id, subject_key, predicate, object_key, polarity
            """
        )
        current = "true" if principal is None else f"{vis} and not list_contains(closed_for, $p)"
        con.execute(
            f"""
            create temp table {side}_now as
            with rows as (
                select *, subject_id as subject_key, {_norm('object')} as object_key
                from {side}_{STATE_CURRENT}
                where {current} and ($scope is null or scope = $scope)
            )
            select
                scope, subject_key, predicate, object_key,
                any_value(subject) as subject, any_value(object) as object,
                bool_or(in_conflict) as in_conflict,
                list(struct_pack(
                    source_ref := source_ref, source_entry_id := source_entry_id, quote := quote,
                    valid_from := valid_from, recorded_at := recorded_at
                ) order by valid_from, source_seq) as sources
            from rows
            where {about}
            group by scope, subject_key, predicate, object_key
            """,
            params,
        )
    key = "scope, source_entry_id, subject_key, predicate, object_key, polarity"
    actions = _rows(
        con.execute(
            f"""
            select
                case when a.decided is null then 'only_b' when b.decided is null then 'only_a' else 'changed' end as change,
                coalesce(a.scope, b.scope) as scope,
                coalesce(a.subject_key, b.subject_key) as subject_id,
                coalesce(a.subject, b.subject) as subject,
                coalesce(a.predicate, b.predicate) as predicate,
                coalesce(a.object, b.object) as object,
                coalesce(a.polarity, b.polarity) as polarity,
                coalesce(a.valid_at, b.valid_at) as valid_at,
                coalesce(a.recorded_at, b.recorded_at) as recorded_at,
                coalesce(a.source_seq, b.source_seq) as source_seq,
                coalesce(a.source_entry_id, b.source_entry_id) as source_entry_id,
                coalesce(a.source_ref, b.source_ref) as source_ref,
                coalesce(a.quote, b.quote) as quote,
                coalesce(a.visibility, b.visibility) as visibility,
                a.decisions as a,
                b.decisions as b
            from a_facts as a
            full outer join b_facts as b using ({key})
            where a.decided is distinct from b.decided
            order by subject, scope, recorded_at, source_seq, valid_at, predicate, object
            """
        )
    )
    state = _rows(
        con.execute(
            """
            select
                case when a.subject_key is null then 'added' else 'removed' end as change,
                coalesce(a.scope, b.scope) as scope,
                coalesce(a.subject_key, b.subject_key) as subject_id,
                coalesce(a.subject, b.subject) as subject,
                coalesce(a.predicate, b.predicate) as predicate,
                coalesce(a.object, b.object) as object,
                coalesce(a.in_conflict, b.in_conflict) as in_conflict,
                coalesce(a.sources, b.sources) as sources
            from a_now as a
            full outer join b_now as b using (scope, subject_key, predicate, object_key)
            where a.subject_key is null or b.subject_key is null
            order by subject, scope, predicate, change desc, object
            """
        )
    )
    con.close()
    entities: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, rows in (("actions", actions), ("state", state)):
        for r in rows:
            e = entities.setdefault(
                (r["scope"], r["subject_id"]),
                {"subject": r["subject"], "subject_id": r["subject_id"], "scope": r["scope"], "actions": [], "state": []},
            )
            e[kind].append(r)
    return {
        "entity": entity,
        "asker": principal if principal is not None else "(administrator)",
        "counts": {
            "actions_changed": sum(r["change"] == "changed" for r in actions),
            "actions_only_a": sum(r["change"] == "only_a" for r in actions),
            "actions_only_b": sum(r["change"] == "only_b" for r in actions),
            "state_added": sum(r["change"] == "added" for r in state),
            "state_removed": sum(r["change"] == "removed" for r in state),
        },
        "entities": sorted(entities.values(), key=lambda e: (normalize_name(e["subject"] or ""), e["scope"], e["subject_id"])),
    }


def _fact(r: dict[str, Any]) -> str:
    what = f"{r['predicate']} {r['object']}" if r["object"] is not None else str(r["predicate"])
    return f"not {what}" if r.get("polarity") == "retract" else what


def _decisions(ds: list[dict[str, Any]] | None) -> str:
    if not ds:
        return "-"
    out = []
    for d in ds:
        s = f"{d['action']} {d['rule']}"
        named = list(d["closes"] or []) + ([f"{d['closes_unseen']} unseen"] if d["closes_unseen"] else [])
        if named:
            s += f" (closes {', '.join(named)})"
        out.append(s)
    return "; ".join(out)


def _source(ref: str | None, entry_id: str, quote: str | None) -> str:
    s = f"[{ref or entry_id}]"
    return f'{s} "{quote}"' if quote else s


def render_diff(result: dict[str, Any]) -> str:
    a, b, c = result["a"], result["b"], result["counts"]
    who = result["entity"] or "every entity"
    lines = [
        f"Write policy and state for {who}, folded from {a} (A) and from {b} (B), "
        f"over the ledger up to seq {result['ledger_watermark']}, as {result['asker']}",
        f"  actions: {c['actions_changed']} decided differently, {c['actions_only_a']} only in A, {c['actions_only_b']} only in B;"
        f" state now: {c['state_added']} added, {c['state_removed']} removed by B",
    ]
    for key, only in result["days_only_in"].items():
        if only:
            lines.append(f"  note: only {key} has claims of ledger days {', '.join(only)}: every action of those days differs")
    if not result["entities"]:
        lines.append("  no differences")
    for e in result["entities"]:
        lines.append("")
        lines.append(f"{e['subject'] or '(no subject)'} ({e['scope']})")
        for r in e["actions"]:
            label = {"changed": "changed", "only_a": "only A", "only_b": "only B"}[r["change"]]
            lines.append(
                f"  {label:<8} {r['valid_at']:%Y-%m-%d}  {_fact(r)}  A: {_decisions(r['a'])}  B: {_decisions(r['b'])}"
            )
            lines.append(f"           {_source(r['source_ref'], r['source_entry_id'], r['quote'])}")
        for r in e["state"]:
            sign = "+" if r["change"] == "added" else "-"
            flag = "  (in conflict)" if r["in_conflict"] else ""
            lines.append(f"  state {sign}  {_fact(r)}{flag}  ({'only B' if sign == '+' else 'only A'} holds it now)")
            for s in r["sources"]:
                lines.append(f"           {s['valid_from']:%Y-%m-%d}  {_source(s['source_ref'], s['source_entry_id'], s['quote'])}")
    return "\n".join(lines)
