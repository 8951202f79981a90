"""A small synthetic memory home for the view tests: a real ledger of conversations, plus the marts
the view assets read, written the way the dbt models export them (same files, same columns).

The marts are computed here in a few lines of Python rather than by running dbt, so the view tests
stay fast (~1 s instead of a 15 s dbt step) and independent of the state models; tests/platform/test_end_to_end.py
covers the real dbt path.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ledger import Ledger, NewEntry
from memc.home import MemcHome
from memc.ids import content_id, entity_id, text_hash
from memc.visibility import meet

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
PEOPLE = {"team": ["Ana", "Bruno", "Carla", "Dev", "Eli"], "ops": ["Olga", "Piet", "Quinn"]}
TOPICS = [
    "the Lisbon office move",
    "order ORD-{n} for the Rotterdam warehouse",
    "the quarterly budget review",
    "Bruno's peanut allergy at the team lunch",
    "the failing deployment pipeline",
    "green tea versus coffee",
    "the Falcon launch checklist",
    "the new hire starting in May",
]


def conversation_entries(n: int, *, seed: int = 1, start: int = 0, private_every: int = 7) -> list[NewEntry]:
    """``n`` message turns in sessions of 6, alternating speakers; every ``private_every``-th
    session is visible to its two main speakers only."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        session = i // 6
        scope = "ops" if session % 5 == 4 else "team"
        people = PEOPLE[scope]
        a, b = people[session % len(people)], people[(session + 1) % len(people)]
        speaker = a if i % 2 == 0 else b
        if rng.random() < 0.15:
            speaker = rng.choice(people)
        private = session % private_every == 3
        topic = rng.choice(TOPICS).format(n=10000 + i)
        out.append(
            NewEntry(
                kind="message",
                scope=scope,
                session_id=f"s{session:04d}",
                actor=speaker,
                content=f"Turn {i}: {speaker} talks about {topic}.",
                valid_at=T0 + timedelta(minutes=10 * i),
                source_ref=f"s{session:04d}:{i}",
                visibility=tuple(sorted({a.lower(), b.lower()})) if private else ("public",),
            )
        )
    return out


def make_home(root: Path, n: int = 200) -> MemcHome:
    home = MemcHome.resolve(root).ensure()
    Ledger(home.ledger).append(conversation_entries(n))
    write_claims(home)
    write_marts(home)
    return home


def write_claims(home: MemcHome) -> None:
    """A few claims of the active extractor, the way claims/store.py lays them out."""
    from claims.extract import CURRENT_RULES
    from claims.model import CLAIM_SCHEMA
    from claims.store import CLAIMS_FILE, day_dir

    msgs = [e for e in Ledger(home.ledger).iter_entries() if e["kind"] == "message"][:4]
    rows = []
    for i, e in enumerate(msgs):
        obj = ["Lisbon", "Carla", "green tea", "Porto"][i]
        pred = ["lives_in", "has_relative", "likes", "lives_in"][i]
        rows.append(
            {
                "claim_id": content_id("c", e["entry_id"], pred, obj),
                "extractor": CURRENT_RULES.name,
                "extractor_version": CURRENT_RULES.version,
                "scope": e["scope"],
                "subject": e["actor"],
                "subject_id": entity_id(e["scope"], e["actor"]),
                "predicate": pred,
                "object": obj,
                "cardinality": "multi" if pred in ("likes", "has_relative") else "functional",
                "valid_at": e["valid_at"],
                "recorded_at": e["recorded_at"],
                "source_entry_id": e["entry_id"],
                "source_seq": e["seq"],
                "source_ref": e["source_ref"],
                "quote": e["content"],
                "visibility": e["visibility"],
                "confidence": 0.9,
                "polarity": "retract" if i == 3 else "assert",
                "time_phrase": None,
                "object_id": entity_id(e["scope"], obj) if pred == "has_relative" else None,
            }
        )
    table = pa.Table.from_pylist(rows, schema=CLAIM_SCHEMA)
    path = day_dir(home.claims, CURRENT_RULES.key, T0.date().isoformat()) / CLAIMS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def write_marts(home: MemcHome) -> None:
    """entities, interactions and the graph marts, as dbt exports them (same grain and columns)."""
    entries = [e for e in Ledger(home.ledger).iter_entries() if e["kind"] != "erasure"]
    ents: dict[str, dict] = {}
    for e in entries:
        if e["kind"] == "message" and e["actor"]:
            eid = entity_id(e["scope"], e["actor"])
            d = ents.setdefault(eid, {"entity_id": eid, "scope": e["scope"], "name": e["actor"], "entity_type": "person", "aliases": [e["actor"]], "evidence": set(), "vis": []})
            d["evidence"].add(e["entry_id"])
            d["vis"].append(e["visibility"])
    entities = [
        {**{k: v for k, v in d.items() if k not in ("evidence", "vis")}, "evidence": sorted(d["evidence"]), "visibility": meet(d["vis"]), "mention_count": len(d["evidence"])}
        for d in ents.values()
    ]
    pairs: dict[tuple, dict] = {}
    last: dict[tuple, dict] = {}
    for e in sorted((e for e in entries if e["kind"] == "message"), key=lambda e: (e["scope"], e["session_id"], e["valid_at"], e["seq"])):
        key = (e["scope"], e["session_id"])
        prev = last.get(key)
        last[key] = e
        if prev is None or prev["actor"].lower() == e["actor"].lower():
            continue
        a, b = sorted([entity_id(e["scope"], e["actor"]), entity_id(e["scope"], prev["actor"])])
        p = pairs.setdefault((a, b, e["scope"]), {"src": a, "dst": b, "scope": e["scope"], "weight": 0, "first_at": e["valid_at"], "last_at": e["valid_at"], "evidence": [], "vis": []})
        p["weight"] += 1
        p["first_at"], p["last_at"] = min(p["first_at"], e["valid_at"]), max(p["last_at"], e["valid_at"])
        p["evidence"].append(e["entry_id"])
        p["vis"].append(e["visibility"])
    interactions = [{**{k: v for k, v in p.items() if k != "vis"}, "evidence": sorted(p["evidence"]), "visibility": meet(p["vis"])} for p in pairs.values()]
    graph_entries = [
        {
            "entry_id": e["entry_id"], "seq": e["seq"], "scope": e["scope"], "kind": e["kind"], "session_id": e["session_id"],
            "session_key": ("ses_" + text_hash(f"{e['scope']}\x1f{e['session_id']}")[:24]) if e["session_id"] else None,
            "actor": e["actor"], "source_ref": e["source_ref"], "valid_at": e["valid_at"], "recorded_at": e["recorded_at"], "visibility": e["visibility"],
        }
        for e in entries
    ]
    sessions: dict[str, dict] = {}
    for g in graph_entries:
        if g["session_key"]:
            s = sessions.setdefault(g["session_key"], {"session_key": g["session_key"], "scope": g["scope"], "session_id": g["session_id"], "entry_count": 0, "first_at": g["valid_at"], "last_at": g["valid_at"], "vis": []})
            s["entry_count"] += 1
            s["first_at"], s["last_at"] = min(s["first_at"], g["valid_at"]), max(s["last_at"], g["valid_at"])
            s["vis"].append(g["visibility"])
    session_rows = [{**{k: v for k, v in s.items() if k != "vis"}, "visibility": meet(s["vis"])} for s in sessions.values()]
    mentions = [{"entry_id": ev, "entity_id": d["entity_id"], "scope": d["scope"]} for d in entities for ev in d["evidence"]]
    # One relation: Ana has_relative Carla (both entities of scope team).
    ana, carla = entity_id("team", "Ana"), entity_id("team", "Carla")
    src = ents[ana]["evidence"] and sorted(ents[ana]["evidence"])[0]
    relations = [
        {"src": ana, "dst": carla, "scope": "team", "predicate": "has_relative", "object": "Carla", "valid_from": T0, "recorded_at": T0,
         "claim_id": "c_relation_1", "weight": 1, "evidence": [src], "visibility": ["public"]}
    ]
    home.marts.mkdir(parents=True, exist_ok=True)
    for name, rows in (
        ("entities", entities), ("interactions", interactions), ("graph_entries", graph_entries),
        ("graph_sessions", session_rows), ("graph_mentions", mentions), ("graph_relations", relations),
    ):
        pq.write_table(pa.Table.from_pylist(rows), home.marts / f"{name}.parquet")
    from memc.watermark import write_watermark

    write_watermark(home.warehouse, "state", Ledger(home.ledger).head())
