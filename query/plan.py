"""Read policy as a plan: the steps a compile ran, as data, and what changed between two plans.

A compile records its plan as it runs (``PlanRecorder``, handed down the stages), in order:
the staleness decisions, the prefilter every route applies (visibility, scope, time travel),
the state facts, the state route's keys, each evidence route with its k and the entries it
returned, the fusion, the items (windows, near-duplicates folded, the cut at k), memory units,
current-first order, the drops for erasures and by the independent visibility check, the cuts by
relevance floor and by budget, and what was packed. The query log keeps the steps under its
record's ``plan`` (query/log.py) beside the ``query_id`` the user is shown, and `memc replay`
compiles the question again and ``diff``s the two plans (query/replay.py, docs/context.md).

A step holds entry ids, counts, weights, names, times and token counts, never text: the query
log keeps no question words and no evidence (docs/security.md), and ``PlanRecorder.add`` refuses
a string that could be text. An erasure leaves a plan's entry ids as it leaves the log's
``shown`` ids: opaque ids, the ones its tombstone lists too.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

# An id, a name, a weight's key or an ISO time: no whitespace, short. Text has spaces; a plan
# string that has one is a bug that would put words in the log.
_TOKEN = re.compile(r"[\w:./@+#-]{0,100}")


def new_query_id() -> str:
    """A compile's id, shown to the user to replay it by: random, so it says nothing of the
    question (a content hash of the question would be a fingerprint anyone could test)."""
    return "q_" + uuid.uuid4().hex[:16]


class PlanRecorder:
    """The steps of one compile, appended by the stages as they run."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def add(self, step: str, name: str | None = None, **fields: Any) -> None:
        record = {"step": step, **({"name": name} if name else {}), **fields}
        _check(record, step)
        self.steps.append(record)


def _check(value: Any, where: str) -> None:
    if isinstance(value, str):
        if not _TOKEN.fullmatch(value):
            raise ValueError(f"plan step {where}: {value[:20]!r}... is not an id, a name or a time (a plan holds no text)")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check(k, where)
            _check(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        # A list of ids (a route's entry ids, ~1,100 a compile) matched in one pass, without a
        # call per id; anything else one by one, for the error that names it.
        if not (all(isinstance(v, str) for v in value) and all(map(_TOKEN.fullmatch, value))):
            for v in value:
                _check(v, where)
    elif not (value is None or isinstance(value, (bool, int, float))):
        raise ValueError(f"plan step {where}: a {type(value).__name__} is not plan data")


def label(step: dict[str, Any]) -> str:
    """'route fulltext', 'fusion', 'packed'."""
    return f"{step['step']} {step['name']}" if step.get("name") else step["step"]


@dataclass
class StepChange:
    """One step of two plans that differs: where (its position, 1-based, in the logged plan, or in
    the replayed one for a step only it ran), which, and how, field by field."""

    index: int
    step: str
    how: str  # "changed", "new" (only the replay ran it), "gone" (only the logged compile did)
    fields: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        if self.how == "new":
            return f"step {self.index} {self.step}: new, not in the logged plan"
        if self.how == "gone":
            return f"step {self.index} {self.step}: not run now"
        return f"step {self.index} {self.step}: " + "; ".join(_say(k, v) for k, v in self.fields.items())


def diff(logged: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> list[StepChange]:
    """The steps that differ, in plan order (a step only the replay ran sits at its position in
    the replay); empty when the plans are identical. Steps pair by kind and name, so a route
    that appears or disappears does not shift the steps after it."""
    old, new = _keyed(logged), _keyed(replayed)
    out = []
    for key, (i, a) in old.items():
        if key not in new:
            out.append(StepChange(i, label(a), "gone"))
            continue
        fields = _fields(a, new[key][1])
        if fields:
            out.append(StepChange(i, label(a), "changed", fields))
    out += [StepChange(i, label(b), "new") for key, (i, b) in new.items() if key not in old]
    return sorted(out, key=lambda c: (c.index, c.how != "gone"))


def _keyed(steps: list[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[int, dict[str, Any]]]:
    out: dict[tuple[str, str, int], tuple[int, dict[str, Any]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for i, s in enumerate(steps, 1):
        k = (s["step"], s.get("name") or "")
        seen[k] = seen.get(k, 0) + 1
        out[(*k, seen[k])] = (i, s)
    return out


def _fields(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """field -> how it changed: {"was", "now"} for a value; {"added", "removed"} (or
    {"order": ...}) for a list of ids; {"added", "dropped", "changed"} for packed items."""
    out: dict[str, Any] = {}
    for k in [*a, *(k for k in b if k not in a)]:
        if k in ("step", "name") and not prefix:
            continue
        va, vb = a.get(k), b.get(k)
        if va == vb:
            continue
        name = f"{prefix}{k}"
        if isinstance(va, dict) and isinstance(vb, dict):
            out.update(_fields(va, vb, f"{name}."))
        elif _items(va) and _items(vb):
            out[name] = _item_changes(va, vb)
        elif isinstance(va, list) and isinstance(vb, list) and all(isinstance(x, str) for x in va + vb):
            gone, came = set(va) - set(vb), set(vb) - set(va)
            if gone or came:
                out[name] = {"added": [x for x in vb if x in came], "removed": [x for x in va if x in gone]}
            else:
                out[name] = {"order": {"was": va, "now": vb}}
        else:
            out[name] = {"was": va, "now": vb}
    return out


def _items(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, dict) and "entry_id" in x for x in v)


def _item_changes(was: list[dict[str, Any]], now: list[dict[str, Any]]) -> dict[str, Any]:
    a, b = {x["entry_id"]: x for x in was}, {x["entry_id"]: x for x in now}
    out: dict[str, Any] = {
        "added": [x for x in b if x not in a],
        "dropped": [x for x in a if x not in b],
        "changed": {e: _fields(a[e], b[e]) for e in a if e in b and a[e] != b[e]},
    }
    if not any(out.values()):
        out = {"order": {"was": list(a), "now": list(b)}}
    return out


def _say(name: str, change: dict[str, Any]) -> str:
    """One field's change in words: 'candidates 12 -> 13', 'entry_ids added [e_1], removed []'."""
    if "was" in change:
        return f"{name} {_value(change['was'])} -> {_value(change['now'])}"
    if "order" in change:
        return f"{name} reordered {_ids(change['order']['was'])} -> {_ids(change['order']['now'])}"
    parts = []
    if change.get("added"):
        parts.append(f"added {_ids(change['added'])}")
    if change.get("removed"):
        parts.append(f"removed {_ids(change['removed'])}")
    if change.get("dropped"):
        parts.append(f"dropped {_ids(change['dropped'])}")
    for e, fields in (change.get("changed") or {}).items():
        parts.append(f"{e} " + ", ".join(_say(k, v) for k, v in fields.items()))
    return f"{name} " + ", ".join(parts)


def _ids(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return f"[{shown}{f', ... {len(ids) - limit} more' if len(ids) > limit else ''}]"


def _value(v: Any) -> str:
    if isinstance(v, list):
        return _ids([str(x) for x in v])
    return "none" if v is None else str(v)
