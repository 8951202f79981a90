"""`memc eval observations DIR`: what the extraction pass turns into typed claims, per conversation.

For each conversation of DIR (LoCoMo format): a fresh memory home, its turns ingested, every view
built through Dagster with the chosen extractor, and its claims exported as `memc claims --admin
--json` lists them, to ``<out>/<conversation_id>.json``. ../shared/eval/observation_score.py
scores that folder against the benchmark's observations (``--claims-dir OUT``); this module
reports memc's own figure beside it: typed claims (any predicate but ``mentions``) per turn,
by predicate, and the rejections by validator.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

from claims.extractors import active_extractor
from claims.store import listed, read_claims
from evaluation.locomo import conversation_home, read_jsonl


def run_observations(
    data_dir: Path,
    out: Path,
    *,
    extractor: str | None = None,
    work_dir: Path | None = None,
    conversations: list[str] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    key = active_extractor(extractor).key  # fails here, before any build, on an unknown name
    turns = read_jsonl(Path(data_dir) / "conversations.jsonl")
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        by_conv[t["conversation_id"]].append(t)
    conv_ids = conversations or sorted(by_conv)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.TemporaryDirectory(prefix="memc-eval-") if work_dir is None else None
    root = Path(tmp.name) if tmp else Path(work_dir)
    previous = os.environ.get("MEMC_EXTRACTOR")
    os.environ["MEMC_EXTRACTOR"] = key  # the build's definitions read it (claims/extractors/registry.py)
    predicates: Counter[str] = Counter()
    rejections: Counter[str] = Counter()
    n_turns = 0
    try:
        for conv in conv_ids:
            home, seconds = conversation_home(root, conv, by_conv[conv])
            claims = read_claims(home.claims, key).to_pylist()
            (out / f"{conv}.json").write_text(json.dumps(listed(claims), indent=1, default=_iso, ensure_ascii=False))
            predicates.update(c["predicate"] for c in claims if c["predicate"] != "mentions")
            rejections.update(r["validator"] for r in read_claims(home.claims, key, rejected=True).to_pylist())
            n_turns += len(by_conv[conv])
            if on_progress:
                on_progress(f"{conv}: built in {seconds} s, {len(claims)} claims")
    finally:
        if previous is None:
            os.environ.pop("MEMC_EXTRACTOR", None)
        else:
            os.environ["MEMC_EXTRACTOR"] = previous
        if tmp:
            tmp.cleanup()
    typed = sum(predicates.values())
    return {
        "extractor": key,
        "conversations": conv_ids,
        "turns": n_turns,
        "typed_claims": typed,
        "typed_claims_per_turn": round(typed / n_turns, 3) if n_turns else 0.0,
        "typed_claims_by_predicate": dict(predicates.most_common()),
        "rejections_by_validator": dict(rejections.most_common()),
        "out": str(out),
    }


def render(result: dict[str, Any]) -> str:
    by_pred = ", ".join(f"{k} {v}" for k, v in result["typed_claims_by_predicate"].items())
    rejected = ", ".join(f"{k} {v}" for k, v in result["rejections_by_validator"].items()) or "none"
    return "\n".join(
        [
            f"{result['extractor']} over {len(result['conversations'])} conversations ({result['turns']} turns): "
            f"{result['typed_claims']} typed claims, {result['typed_claims_per_turn']:.3f} per turn",
            f"by predicate: {by_pred}",
            f"rejections: {rejected}",
            f"claims exported to {result['out']}/<conversation_id>.json; score them with "
            f"../shared/eval/observation_score.py --claims-dir {result['out']}",
        ]
    )


def _iso(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
