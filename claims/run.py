"""One extraction run over a range of ledger days: what the claims asset materializes. Each day's
entries are extracted, validated and written as that day's partition; the run's watermark is
written once every ledger day has claims, so the view says it is current only when it is."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow.compute as pc

from claims.extract import extract, extract_workers
from claims.extractors import Extractor
from claims.ledger_days import day_column, entries_by_day, ledger_days
from claims.resolve import Resolver, resolution_tables
from claims.store import days as stored_days
from claims.store import extractor_dir, read_resolver, write_day, write_run_watermark
from memc.home import MemcHome
from memc.watermark import read_watermark


@dataclass
class ExtractionRun:
    """What one run extracted: the numbers the asset reports as metadata."""

    extractor: str
    watermark: int
    days: int
    totals: Counter = field(default_factory=Counter)  # claims, rejections, entries
    rejected: Counter = field(default_factory=Counter)  # by validator
    predicates: Counter = field(default_factory=Counter)
    per_day: dict[str, int] = field(default_factory=dict)  # day -> claims, for days with entries
    missing: int = 0  # ledger days with no claims yet (the watermark waits for them)

    def summary(self) -> str:
        return (
            f"{self.extractor}: {self.totals['claims']} claims, {self.totals['rejections']} rejections from "
            f"{self.totals['entries']} entries over {self.days} day(s) at watermark {self.watermark}"
        )

    def metadata(self) -> dict[str, Any]:
        return {
            "dagster/row_count": self.totals["claims"],
            "rejections": self.totals["rejections"],
            "rejections_by_validator": dict(self.rejected),
            "claims_by_predicate": dict(self.predicates),
            "entries_read": self.totals["entries"],
            "days": self.days,
            "days_with_entries": len(self.per_day),
            "claims_by_day": {d: n for d, n in self.per_day.items() if n},
            "ledger_watermark": self.watermark,
            "extractor": self.extractor,
            "days_missing": self.missing,
        }


def extract_days(home: MemcHome, ledger, extractor: Extractor, days: Sequence[str]) -> ExtractionRun:
    """Extract the ledger ``days`` (ISO dates, in order) with ``extractor`` up to the ledger's head
    now, writing one partition per day that has entries."""
    watermark = ledger.head()
    resolver = read_resolver(home.claims)
    workers = extract_workers()
    run = ExtractionRun(extractor=extractor.key, watermark=watermark, days=len(days))
    for day, entries in entries_by_day(ledger, list(days), until_seq=watermark).items():
        if not entries:
            # A day inside the run's range with no ledger entries (the range spans the first
            # to the last ledger day): nothing to write, and no folder to mistake for data.
            continue
        result = extract(entries, extractor, resolver, workers=workers)
        write_day(home.claims, extractor, day, result, watermark)
        run.per_day[day] = result.claims.num_rows
        run.totals.update(claims=result.claims.num_rows, rejections=result.rejections.num_rows, entries=result.entries_read)
        run.rejected.update(result.rejections.column("validator").to_pylist())
        run.predicates.update(result.claims.column("predicate").to_pylist())
    missing = days_without_claims(home, ledger, extractor.key)
    run.missing = len(missing)
    if not missing:  # every ledger day is compiled: the view is current up to this head
        write_run_watermark(home.claims, extractor, watermark, days_last_run=[days[0], days[-1]], resolver=resolver.fingerprint())
    return run


def days_without_claims(home: MemcHome, ledger, extractor_key: str, every_day: Sequence[str] | None = None) -> list[str]:
    """The ledger days (``every_day``, read from the ledger if not given) that have no claims
    for ``extractor_key``, sorted."""
    every_day = ledger_days(ledger) if every_day is None else every_day
    return sorted(set(every_day) - set(stored_days(home.claims, extractor_key)))


def days_to_extract(home: MemcHome, ledger, extractor_key: str, every_day: Sequence[str] | None = None) -> list[str]:
    """The ledger days a build must extract (again) for ``extractor_key``, sorted: every day when
    entity resolution would now differ from the one the claims were extracted with (a new name,
    an alias merged, a session's speakers changed: any day's subjects, "you" or mentions may
    resolve differently) or when they never were; otherwise the days never extracted and those
    with entries above the claims' watermark. A chat app's message in a running conversation
    makes it one day, where a build re-extracted every day of the ledger.

    The resolver is computed from the ledger as the entity_aliases asset will write it in the
    same run (the build decides the claims' partitions before that asset runs). ``every_day``:
    the ledger's days, if the caller has read them."""
    days = list(ledger_days(ledger) if every_day is None else every_day)
    mark = read_watermark(extractor_dir(home.claims, extractor_key))
    if mark is None or not days:
        return days
    head = ledger.head()
    # The columns resolution reads, not every column as dicts (~3 s of a one-message build at 100k entries).
    resolver = Resolver(*resolution_tables(ledger, head))
    if mark.get("resolver") != resolver.fingerprint():
        return days
    wanted = set(days_without_claims(home, ledger, extractor_key, days))
    above = ledger.read(["recorded_at"], since_seq=int(mark["watermark"]), until_seq=head)
    wanted.update(d.isoformat() for d in pc.unique(day_column(above)).to_pylist())
    return sorted(wanted)
