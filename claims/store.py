"""The claims view on disk: one folder per extractor version, one sub-folder per ledger day.

    <home>/claims/extractor=rules-0.6.4/day=2024-05-14/claims.parquet
                                                      /rejections.parquet
                                                      /_watermark.json
                 /extractor=rules-0.6.4/_watermark.json      (the latest run, for staleness checks)
                 /entities/aliases.parquet                    (entity resolution, all extractors)

A ledger day is the UTC date of an entry's ``recorded_at``. Each day's files are replaced
atomically (write-then-rename), so a re-run of a partition swaps in the same content
(claim ids are content-addressed) and a new extractor version writes into its own folder,
never over another's. dbt reads ``claims/extractor=<key>/*/claims.parquet``.
"""

from __future__ import annotations

import os
import re
import threading
from datetime import date
from pathlib import Path

import pyarrow as pa

from claims.extract import ExtractionResult, Extractor
from claims.model import CLAIM_SCHEMA, REJECTION_SCHEMA
from claims.resolve import Resolver
from memc.atomic import read_parquet, write_parquet
from memc.filecache import signature
from memc.watermark import write_watermark

_DAY = re.compile(r"^day=(\d{4}-\d{2}-\d{2})$")


def extractor_dir(claims_root: Path, extractor_key: str) -> Path:
    return claims_root / f"extractor={extractor_key}"


def day_dir(claims_root: Path, extractor_key: str, day: str | date) -> Path:
    return extractor_dir(claims_root, extractor_key) / f"day={day if isinstance(day, str) else day.isoformat()}"


# What `memc claims` lists of a claim or a rejection (and `memc eval observations` exports).
LISTED_CLAIM_COLUMNS = (
    "subject", "subject_id", "predicate", "polarity", "object", "object_id", "valid_at", "time_phrase", "asserted_by", "quote",
    "source_entry_id", "subject_entry_id", "question_entry_id", "question_quote", "source_ref", "extractor", "extractor_version", "visibility", "claim_id",
)  # fmt: skip
LISTED_REJECTION_COLUMNS = ("validator", "reason", "source_entry_id", "source_ref", "extractor", "extractor_version", "proposal", "proposal_id")


def listed(rows: list[dict], *, rejected: bool = False) -> list[dict]:
    cols = LISTED_REJECTION_COLUMNS if rejected else LISTED_CLAIM_COLUMNS
    return [{c: r.get(c) for c in cols} for r in rows]


# One ledger day of one extractor version: its claims and its rejections.
CLAIMS_FILE = "claims.parquet"
REJECTIONS_FILE = "rejections.parquet"


def aliases_path(claims_root: Path) -> Path:
    return claims_root / "entities" / "aliases.parquet"


def participants_path(claims_root: Path) -> Path:
    return claims_root / "entities" / "participants.parquet"


def write_day(claims_root: Path, extractor: Extractor, day: str, result: ExtractionResult, watermark: int) -> Path:
    """Replace one ledger day's claims and rejections (each file atomically)."""
    d = day_dir(claims_root, extractor.key, day)
    write_parquet(result.claims, d / CLAIMS_FILE)
    write_parquet(result.rejections, d / REJECTIONS_FILE)
    write_watermark(
        d,
        "claims",
        watermark,
        day=day,
        extractor=extractor.name,
        extractor_version=extractor.version,
        entries=result.entries_read,
        claims=result.claims.num_rows,
        rejections=result.rejections.num_rows,
    )
    return d


def write_run_watermark(claims_root: Path, extractor: Extractor, watermark: int, **info) -> None:
    """The extractor folder's watermark: the ledger head up to which every day is compiled
    (the query module compares it with the ledger head). The caller writes it only when no
    ledger day is missing."""
    write_watermark(extractor_dir(claims_root, extractor.key), "claims", watermark, extractor=extractor.name, extractor_version=extractor.version, **info)


def days(claims_root: Path, extractor_key: str) -> list[str]:
    d = extractor_dir(claims_root, extractor_key)
    if not d.exists():
        return []
    return sorted(m.group(1) for p in d.iterdir() if (m := _DAY.match(p.name)) and (p / CLAIMS_FILE).exists())


# The day files last read in this process, for one claims directory and extractor (and one of
# rejections): a build reads every day's claims three times (the evidence index's rows, the
# provenance check, the GX suite) and one new message changes the newest day's file only. At
# 100k entries a read of the 101 day files took 0.23-0.33 s. A file is read again when its
# signature (inode, size, mtime) changed; the signature is taken before the read. Kept up to
# CLAIM_ROWS_KEPT rows (like the evidence rows, views/build.py): a claim is ~350 bytes in Arrow
# (85k claims, 28 MB at 100k entries), so the 1M-entry bench home's 704,831 would keep ~250 MB
# in a serving process for good.
CLAIM_ROWS_KEPT = 500_000
_DAYS_READ: dict[bool, tuple[tuple[str, str], dict[Path, tuple[tuple[int, int, int], pa.Table]]]] = {}
_DAYS_READ_LOCK = threading.Lock()


def read_claims(claims_root: Path, extractor_key: str, *, rejected: bool = False, day: str | None = None) -> pa.Table:
    """Every day's claims (or rejections) of one extractor version, in day order."""
    schema = REJECTION_SCHEMA if rejected else CLAIM_SCHEMA
    name = REJECTIONS_FILE if rejected else CLAIMS_FILE
    wanted = [day] if day else days(claims_root, extractor_key)
    paths = [day_dir(claims_root, extractor_key, d) / name for d in wanted]
    which = (os.path.realpath(claims_root), extractor_key)
    with _DAYS_READ_LOCK:
        held = _DAYS_READ.get(rejected)
        before = held[1] if held is not None and held[0] == which else {}
    now: dict[Path, tuple[tuple[int, int, int], pa.Table]] = {}
    for p in paths:
        sig = signature(p)
        if sig is None:
            continue
        hit = before.get(p)
        now[p] = hit if hit is not None and hit[0] == sig else (sig, read_parquet(p, schema=schema))
    tables = [table for _, table in now.values()]
    if day is None:  # a whole read says which files the extractor's claims are now
        with _DAYS_READ_LOCK:
            if sum(t.num_rows for t in tables) <= CLAIM_ROWS_KEPT:
                _DAYS_READ[rejected] = (which, now)
            else:
                _DAYS_READ.pop(rejected, None)
    return pa.concat_tables(tables) if tables else schema.empty_table()


def read_aliases(claims_root: Path) -> pa.Table | None:
    path = aliases_path(claims_root)
    return read_parquet(path) if path.exists() else None


def read_participants(claims_root: Path) -> pa.Table | None:
    path = participants_path(claims_root)
    return read_parquet(path) if path.exists() else None


def read_resolver(claims_root: Path) -> Resolver:
    """Entity resolution as the entity_aliases asset last wrote it (empty before its first run)."""
    return Resolver(read_aliases(claims_root), read_participants(claims_root))


def extractor_keys(claims_root: Path) -> list[str]:
    if not claims_root.exists():
        return []
    return sorted(p.name.split("=", 1)[1] for p in claims_root.glob("extractor=*") if p.is_dir())
