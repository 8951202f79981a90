"""A learned order for the fused hits below the first items: a linear ranker over what the
routes and the session say of each hit.

Reciprocal rank fusion adds up ranks; it cannot tell that a long turn by the person a question
names is worth more than a short turn by the other, or that a turn right after a hit that asks
is likely its answer. The ranker scores every fused hit by a few features of its own (its rank
on the full-text and vector routes, its fused score, its neighbours' fused scores in the
session, whether it or the turn before it asks something, its length, whether its speaker is
the one the question names or the other, its place in the session) with a logistic regression
fitted on LoCoMo dev (`memc eval ranker`, evaluation/ranker.py), whose coefficients are a small
JSON file in query/rankers/. The first ``wide_items`` hits keep their fused order (they show
whole windows, which the fusion was tuned for); the rest are shown in the ranker's order.

Features are computed here for the compiler and, through :func:`collecting`, for the trainer,
so that a ranker is fitted on exactly what it is later given.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memc.ids import entity_id
from query.windows import said
from views.evidence import asks

# The features, in the order of a ranker's coefficients; a ranker file names them and is refused
# when they differ (one fitted on other features would score nonsense without an error).
FEATURES = (
    "fulltext",  # rrf_k / (rrf_k + rank) on the full-text route, 0 when it did not find the hit
    "vector",  # the same on the vector route
    "fused",  # the fused score x rrf_k: every route's say, the time and graph routes included
    "prev",  # the fused score x rrf_k of the turn before, in the session as the asker sees it
    "next",  # of the turn after
    "asks",  # the hit asks something ("?")
    "asks_prev",  # the turn before it asks something: the hit may be its answer
    "words",  # log(1 + the hit's words)
    "speaker_named",  # the question names the hit's speaker
    "other_named",  # the question names a speaker, and this hit is another speaker's
    "position",  # the hit's place in its session, 0 (first turn) to 1
    "facts_vector",  # rrf_k / (rrf_k + rank) on the facts route by vectors (a claim drawn from the hit matched)
)

RANKERS_DIR = Path(__file__).resolve().parent / "rankers"

# The neighbour features (prev, next, asks_prev, position) need the hit's session: the sessions of
# the first this many fused hits are read for them, and a deeper hit has them only when it shares
# such a session (0 otherwise, in training as in use). Reading every hit's session (~130 a
# question on LoCoMo dev) took the session windows from 4 to 22 ms a compile at 100k entries;
# on dev, neighbour features for the first 60 hits keep nearly all of what all of them give
# (docs/context.md).
FEATURE_DEPTH = 60


@dataclass(frozen=True)
class Ranker:
    """A linear ranker: score = ((x - mean) / scale) . coef + intercept."""

    name: str
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def scores(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.coef + self.intercept

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "mean": self.mean.tolist(), "scale": self.scale.tolist(), "coef": self.coef.tolist(), "intercept": self.intercept}

    @classmethod
    def from_dict(cls, name: str, data: dict[str, Any], where: str = "ranker") -> "Ranker":
        if list(data.get("features") or []) != list(FEATURES):
            raise ValueError(f"{where}: features {data.get('features')} are not the compiler's {list(FEATURES)}")
        arrays = {}
        for key in ("mean", "scale", "coef"):
            arr = np.asarray(data.get(key), dtype=np.float64)
            if arr.shape != (len(FEATURES),) or not np.all(np.isfinite(arr)):
                raise ValueError(f"{where}: {key} must be {len(FEATURES)} finite numbers")
            arrays[key] = arr
        if np.any(arrays["scale"] <= 0):
            raise ValueError(f"{where}: scale must be positive")
        intercept = data.get("intercept")
        if not isinstance(intercept, (int, float)) or not math.isfinite(intercept):
            raise ValueError(f"{where}: intercept must be a finite number")
        return cls(name=name, intercept=float(intercept), **arrays)


@functools.cache
def load_ranker(name: str) -> Ranker:
    """The ranker ``name``: query/rankers/<name>.json, or a path to such a file."""
    path = Path(name) if name.endswith(".json") else RANKERS_DIR / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in RANKERS_DIR.glob("*.json"))
        raise ValueError(f"no ranker {name!r}: {path} does not exist (shipped: {', '.join(known) or 'none'})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    return Ranker.from_dict(path.stem, data.get("ranker", data), where=str(path))


def _on_route(ranks: dict[str, int], route: str, rrf_k: int) -> float:
    """A hit's rank on one route on the fusion's scale: ``ranks`` counts from 0, so the route's
    first hit gives rrf_k / (rrf_k + 1); 0 when the route did not find the hit."""
    return rrf_k / (rrf_k + ranks[route] + 1) if route in ranks else 0.0


def features(
    ranked: list[dict[str, Any]], windows: Mapping[str, list[dict[str, Any]]], named: dict[str, str], rrf_k: int
) -> np.ndarray:
    """One row of :data:`FEATURES` per fused slot (``{"hit", "score", "ranks"}``), in order.
    ``windows``: each message hit's session turns around it as the asker sees them, with their
    ``turn_no`` and ``session_turns`` (query/windows.py); ``named``: the entities the question
    names (query/entities.py)."""
    fused = {s["hit"]["entry_id"]: s["score"] * rrf_k for s in ranked}
    # Each hit's speaker as an entity, hashed once per (scope, name): ~180 hits, a few speakers.
    ids = {(scope, actor): entity_id(scope, actor) for s in ranked if (actor := s["hit"].get("actor")) and (scope := s["hit"].get("scope"))}
    speakers = set(ids.values())
    named_speakers = speakers & set(named)
    out = np.zeros((len(ranked), len(FEATURES)), dtype=np.float64)
    for i, s in enumerate(ranked):
        hit, ranks = s["hit"], s.get("ranks", {})
        actor, eid = hit.get("actor"), hit["entry_id"]
        text = said(hit)
        prev = nxt = None
        position = 0.0
        around = windows.get(eid)
        if around:
            at = next((j for j, t in enumerate(around) if t["entry_id"] == eid), None)
            if at is not None:
                prev = around[at - 1] if at > 0 else None
                nxt = around[at + 1] if at + 1 < len(around) else None
                position = around[at].get("turn_no", 0) / max(1, around[at].get("session_turns", 1))
        speaker = ids.get((hit.get("scope"), actor))
        out[i] = (
            _on_route(ranks, "fulltext", rrf_k),
            _on_route(ranks, "vector", rrf_k),
            fused[eid],
            fused.get(prev["entry_id"], 0.0) if prev else 0.0,
            fused.get(nxt["entry_id"], 0.0) if nxt else 0.0,
            float(asks(text)),
            float(bool(prev) and asks(prev.get("text") or "")),
            math.log1p(len(text.split())),
            float(speaker in named_speakers),
            float(bool(named_speakers) and speaker is not None and speaker not in named_speakers),
            position,
            _on_route(ranks, "facts/vector", rrf_k),
        )
    return out


# The trainer's collector: (entry ids, features) of every compile's fused hits while set.
_COLLECTED: ContextVar[list[tuple[list[str], np.ndarray]] | None] = ContextVar("memc_rerank_collected", default=None)


@contextmanager
def collecting() -> Iterator[list[tuple[list[str], np.ndarray]]]:
    """Within this block, every compile of this thread appends its fused hits' entry ids and
    features to the list yielded (evaluation/ranker.py fits a ranker on them)."""
    got: list[tuple[list[str], np.ndarray]] = []
    token = _COLLECTED.set(got)
    try:
        yield got
    finally:
        _COLLECTED.reset(token)


def wants_features() -> bool:
    return _COLLECTED.get() is not None


def rerank(
    ranked: list[dict[str, Any]], windows: Mapping[str, list[dict[str, Any]]], named: dict[str, str], *, ranker: Ranker | None, keep: int, rrf_k: int
) -> list[dict[str, Any]]:
    """The fused slots in the order their items are made: the first ``keep`` as fused, the rest
    by the ranker's score (ties in fused order). Without a ranker, the fused order."""
    collected = _COLLECTED.get()
    if ranker is None and collected is None:
        return ranked
    x = features(ranked, windows, named, rrf_k)
    if collected is not None:
        collected.append(([s["hit"]["entry_id"] for s in ranked], x))
    if ranker is None or len(ranked) <= keep:
        return ranked
    score = ranker.scores(x[keep:])
    order = sorted(range(len(score)), key=lambda i: (-score[i], i))
    return ranked[:keep] + [ranked[keep + i] for i in order]
