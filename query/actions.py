"""The write policy, read back: what the fold did with each claim about an entity (the
``memory_actions`` mart: ADD, UPDATE, DELETE, NONE, the rule that decided, what it closed and
what it was compared with), for one asker, bi-temporally.

``--known-at T`` lists what had been decided by T (actions recorded by then); ``--as-of V``
the actions about valid times up to V. An asker sees the rows it may see; a closed claim it
may not see is named by id only, never by its value."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from memc.ids import normalize_name
from query.state import StateQueryError, _admits, _marts_connection, _rows, resolve_subjects
from views.marts import MEMORY_ACTIONS

__all__ = ["StateQueryError", "actions_for_entity", "render_actions"]


def actions_for_entity(
    marts: Path,
    entity: str | None,
    *,
    principal: str | None,
    as_of: datetime,
    known_at: datetime,
    scope: str | None = None,
) -> dict[str, Any]:
    """The actions about ``entity`` (a name, alias or entity id; None = every action) that
    ``principal`` (None = administrator) may see, recorded by ``known_at`` and about valid
    times up to ``as_of``, oldest first. Rejections carry no entity id: they are matched by the
    subject name they proposed. Erasures name no entity: they are listed only without one."""
    con = _marts_connection(marts, ("entities", "state_history", MEMORY_ACTIONS))
    params: dict[str, Any] = {"as_of": as_of, "known_at": known_at, "scope": scope}
    where = ["recorded_at <= $known_at", "valid_at <= $as_of", "($scope is null or scope = $scope)"]
    if principal is not None:
        params["p"] = principal
        where.append(_admits("visibility", "p"))
    subjects: list[dict[str, Any]] = []
    if entity is not None:
        subjects = resolve_subjects(con, entity, principal=principal, scope=scope)
        names = {normalize_name(entity)}
        if subjects:
            names |= {
                normalize_name(r["subject"])
                for r in _rows(
                    con.execute(
                        "select distinct subject from state_history where subject_id in (select unnest($ids))",
                        {"ids": [s["subject_id"] for s in subjects]},
                    )
                )
            }
        params.update(ids=[s["subject_id"] for s in subjects], names=sorted(names))
        where.append(
            "(subject_id in (select unnest($ids)) or (considered_kind = 'rejection' "
            "and lower(trim(regexp_replace(subject, '\\s+', ' ', 'g'))) in (select unnest($names))))"
        )
    rows = _rows(
        con.execute(
            f"select * from {MEMORY_ACTIONS} where {' and '.join(where)} "
            "order by recorded_at, source_seq, valid_at, action_id",
            params,
        )
    )
    # What a closing names: the value of each closed claim the asker may also see.
    closed_ids = sorted({i for r in rows for i in (r["closes"] or []) + (r["duplicate_of"] or []) + (r["closed_by"] or [])})
    values: dict[str, dict[str, Any]] = {}
    if closed_ids:
        vis, args = "", {"ids": closed_ids}
        if principal is not None:
            vis, args["p"] = f" and {_admits('visibility', 'p')}", principal
        for r in _rows(
            con.execute(
                f"select action_id, object, source_ref, valid_at from {MEMORY_ACTIONS} "
                f"where action_id in (select unnest($ids)){vis}",
                args,
            )
        ):
            values[r["action_id"]] = r
    con.close()
    return {
        "entity": entity,
        "subjects": subjects,
        "asker": principal if principal is not None else "(administrator)",
        "as_of": as_of,
        "known_at": known_at,
        "actions": rows,
        "closed_values": values,
    }


def render_actions(result: dict[str, Any]) -> str:
    who = result["entity"] or "every entity"
    lines = [f"Write policy for {who}, as {result['asker']} (known at {result['known_at']:%Y-%m-%d %H:%M}, as of {result['as_of']:%Y-%m-%d %H:%M})"]
    if not result["actions"]:
        lines.append("  no actions")
        return "\n".join(lines)
    values = result["closed_values"]

    def named(ids: list[str]) -> str:
        # A closed claim the asker may not see is named by id only.
        return ", ".join(
            f"{values[i]['object']} ({values[i]['source_ref'] or i})" if i in values else i for i in ids
        )

    # Actions from several scopes (no --scope): each line names its scope, so two scopes' claims
    # about one name are not read as one entity's history.
    scopes = sorted({a["scope"] for a in result["actions"] if a.get("scope")})
    if len(scopes) > 1:
        lines[0] += f"; in {len(scopes)} scopes ({', '.join(scopes)}): --scope S shows one"
    for a in result["actions"]:
        what = " ".join(str(x) for x in (a["subject"], a["predicate"], a["object"]) if x) or "(erased entries)"
        where = f"  [{a['scope']}]" if len(scopes) > 1 else ""
        line = f"  {a['valid_at']:%Y-%m-%d}{where}  {a['action']:<6}  {a['rule']:<24}  {what}"
        if a["closes"]:
            line += f"  closes {named(a['closes'])}" if a["considered_kind"] != "erasure" else f"  erases {', '.join(a['closes'])}"
        if a["duplicate_of"]:
            line += f"  same as {named(a['duplicate_of'])}"
        if a["closed_by"]:
            line += f"  already closed by {named(a['closed_by'])}"
        if a["detail"]:
            line += f"  ({a['detail']})"
        src = a["source_ref"] or a["source_entry_id"]
        line += f"  [{src}; {a['extractor'] or 'ledger'}-{a['extractor_version'] or ''} {a['fold_version']}]".replace("ledger- ", "ledger ")
        lines.append(line)
    return "\n".join(lines)
