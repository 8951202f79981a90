"""Each view records the ledger watermark (highest seq) it was compiled from.

The query module compares these with the ledger head to decide whether a view is stale.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memc.atomic import write_json

FILE = "_watermark.json"


def watermark_record(view: str, watermark: int, **info: Any) -> dict[str, Any]:
    """What a view records: its name, the ledger seq it was compiled from, when, and ``info``."""
    return {"view": view, "watermark": int(watermark), "built_at": datetime.now(timezone.utc).isoformat(), **info}


def write_watermark(view_dir: Path, view: str, watermark: int, **info: Any) -> dict[str, Any]:
    record = watermark_record(view, watermark, **info)
    write_json(record, view_dir / FILE)
    return record


def read_watermark(view_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((view_dir / FILE).read_text())
    except FileNotFoundError:
        return None
