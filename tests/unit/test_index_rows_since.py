"""The evidence index's rows made again from the last ones (views/evidence.py index_rows_since):
always the table index_rows makes from nothing, and after one new message only that message and
its session are rendered."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

import views.evidence as ve
from claims.model import CLAIM_SCHEMA
from memc.ids import entity_id
from views.evidence import ENTRY_SCHEMA, index_rows, index_rows_since

T0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
NAMES = ["Ana", "Ben", "Cleo", "Dev", "Porto", "Helio Labs", "green tea"]
SCOPE = "team"


class World:
    """Ledger entries, claims and the entities mart of a small home, changed a step at a time."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.entries: list[dict] = []
        self.claims: list[dict] = []
        self.entities: dict[str, list[str]] = {}  # name -> entry ids
        for _ in range(60):
            self.add_entry()
        for _ in range(30):
            self.add_claim()
        for name in NAMES[:4]:
            self.entities[name] = self.rng.sample([e["entry_id"] for e in self.entries], 5)

    def add_entry(self, session: str | None = None) -> dict:
        rng, n = self.rng, len(self.entries)
        kind = rng.choice(["message"] * 8 + ["document", "event"])
        words = " ".join(rng.choice(["move", "cake", "Porto", "tea", "launch", "desk"]) for _ in range(rng.choice([4, 9, 300])))
        entry = {
            "seq": n + 1, "entry_id": f"e_{n:04d}", "recorded_at": T0 + timedelta(minutes=n),
            "valid_at": T0 + timedelta(minutes=rng.randrange(0, 600)), "kind": kind, "scope": SCOPE,
            "session_id": session or (rng.choice(["s1", "s2", "s3", "s4"]) if kind == "message" else None),
            "actor": rng.choice(["Ana", "Ben", "Cleo"]), "content": words + rng.choice(["?", ".", "!"]),
            "source_ref": None, "visibility": rng.choice([["public"], ["ana"], ["public"]]),
            "attributes": json.dumps({"subject": "Porto"}) if rng.random() < 0.1 else "{}",
        }  # fmt: skip
        self.entries.append(entry)
        return entry

    def add_claim(self) -> None:
        rng, n = self.rng, len(self.claims)
        source = rng.choice(self.entries)
        obj = rng.choice(NAMES)
        self.claims.append({
            "claim_id": f"c_{n:04d}_{rng.randrange(10**6)}", "extractor": "rules", "extractor_version": "1", "scope": SCOPE,
            "subject": "Ana", "subject_id": entity_id(SCOPE, "Ana"), "predicate": rng.choice(["lives_in", "likes", "works_at", "shared_photo"]),
            "object": obj, "cardinality": rng.choice(["functional", "multi"]), "valid_at": source["valid_at"],
            "recorded_at": source["recorded_at"], "source_entry_id": source["entry_id"], "source_seq": source["seq"],
            "source_ref": None, "quote": "q", "visibility": source["visibility"], "confidence": 0.9,
            "polarity": rng.choice(["assert", "assert", "retract"]), "time_phrase": None,
            "object_id": entity_id(SCOPE, obj) if rng.random() < 0.3 else None, "asserted_by": None, "asserted_by_id": None,
            "subject_entry_id": None, "question_entry_id": None, "question_quote": None,
        })  # fmt: skip

    def change(self) -> None:
        rng = self.rng
        step = rng.choice(["append", "append", "earlier", "erase", "mentions", "entity", "claims", "claim_changed"])
        if step == "append":
            for _ in range(rng.choice([1, 1, 3])):
                self.add_entry()
        elif step == "earlier":  # a turn whose valid time falls before its session's last turns
            self.add_entry(session="s2")["valid_at"] = T0
        elif step == "erase":  # what an erasure's purge leaves of a turn: another text, no session
            e = rng.choice(self.entries)
            e.update(content="[erased]", session_id=None)
        elif step == "mentions":
            name = rng.choice(list(self.entities))
            self.entities[name] = sorted(set(self.entities[name]) ^ {rng.choice(self.entries)["entry_id"]})
        elif step == "entity":  # a name becomes an entity, or stops being one
            name = rng.choice(NAMES)
            if name in self.entities and rng.random() < 0.5:
                del self.entities[name]
            else:
                self.entities[name] = [rng.choice(self.entries)["entry_id"]]
        elif step == "claims":
            for _ in range(rng.choice([1, 4])):
                self.add_claim()
            if rng.random() < 0.5:
                self.claims.pop(rng.randrange(len(self.claims)))
        else:
            c = rng.choice(self.claims)
            c["object"] = rng.choice(NAMES)

    def inputs(self, *, claims: bool = True, entities: bool = True) -> tuple:
        table = pa.Table.from_pylist([dict(e) for e in self.entries], schema=ENTRY_SCHEMA)
        ents = pa.table({
            "entity_id": pa.array([entity_id(SCOPE, n) for n in self.entities], pa.string()),
            "evidence": pa.array(list(self.entities.values()), pa.list_(pa.string())),
        })  # fmt: skip
        return (
            table,
            pa.Table.from_pylist([dict(c) for c in self.claims], schema=CLAIM_SCHEMA) if claims else None,
            ents if entities else None,
        )


@pytest.mark.parametrize("seed", range(6))
def test_rows_made_from_the_last_ones_equal_rows_made_from_nothing(seed: int) -> None:
    rng = random.Random(seed)
    world = World(rng)
    before = world.inputs()
    rows = index_rows(*before)
    for step in range(25):
        world.change()
        # now and then the claims or the mart are missing (a home before its first state build)
        after = world.inputs(claims=rng.random() > 0.05, entities=rng.random() > 0.05)
        made = index_rows_since(before, rows, after)
        whole = index_rows(*after)
        assert made.equals(whole), f"seed {seed}, step {step}"
        before, rows = after, made


def test_one_new_message_renders_only_that_message_and_its_session(monkeypatch) -> None:
    world = World(random.Random(7))
    before = world.inputs()
    rows = index_rows(*before)
    rendered: list[str] = []
    real = ve.render
    monkeypatch.setattr(ve, "render", lambda entry: rendered.append(entry["content"]) or real(entry))
    world.add_entry(session="s3")
    after = world.inputs()
    made = index_rows_since(before, rows, after)
    session = sum(e["session_id"] == "s3" for e in world.entries)
    # the new turn once, and each reply of its session with its question
    assert 1 <= len(rendered) <= 1 + 2 * session
    rendered.clear()
    assert made.equals(index_rows(*after))
    assert len(rendered) > 1 + 2 * session  # from nothing, every entry is rendered
