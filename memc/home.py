"""Where a memory lives on disk.

One memory home holds everything: the ledger (the only thing that cannot be rebuilt) and
every compiled view. Chosen by, in order: an explicit path (``--home``), ``$MEMC_HOME``,
``./memc_home``.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = "memc_home"


@dataclass(frozen=True)
class MemcHome:
    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> "MemcHome":
        raw = explicit or os.environ.get("MEMC_HOME") or DEFAULT_HOME
        return cls(Path(raw).expanduser().resolve())

    # The evidence.
    @property
    def ledger(self) -> Path:
        return self.root / "ledger"

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    # Compiled views: each may be deleted and rebuilt from the ledger.
    @property
    def claims(self) -> Path:
        return self.root / "claims"

    @property
    def warehouse(self) -> Path:
        """dbt owns this folder: the DuckDB file and the marts it exports as Parquet."""
        return self.root / "warehouse"

    @property
    def warehouse_db(self) -> Path:
        return self.warehouse / "memc.duckdb"

    @property
    def marts(self) -> Path:
        return self.warehouse / "marts"

    @property
    def vectors(self) -> Path:
        return self.root / "vectors"

    @property
    def graph(self) -> Path:
        return self.root / "graph"

    @property
    def units(self) -> Path:
        """Consolidated memory units (views/units.py): pointers to the turns each unit groups,
        never their text."""
        return self.root / "units"

    @property
    def skills(self) -> Path:
        """Procedural memory (views/skills.py): skills mined from the ledger's trajectories."""
        return self.root / "skills"

    @property
    def profile(self) -> Path:
        """Profile-guided views (views/profile.py, views/dossiers.py): the query profile and the entity dossiers
        promoted from it. Holds no question text; dropped with the other views on erasure."""
        return self.root / "profile"

    @property
    def dossiers(self) -> Path:
        return self.profile / "dossiers"

    @property
    def querylog(self) -> Path:
        """The query log (query/log.py): one JSON line per compile, a file per UTC day. Written
        by the compiler, read by the query profile; holds entity ids, never question text."""
        return self.root / "querylog"

    @property
    def querylog_key(self) -> Path:
        """The secret key of the query log's question fingerprints (query/log.py), mode 0600. An
        erasure deletes it (forgetting/cascade.py): the fingerprints logged before can then no
        longer be tested against a guessed question."""
        return self.root / "config" / "querylog.key"

    @property
    def home_id(self) -> str:
        """A random id of this home, made on first use (``config/home.id``): what names the home
        that builds an evidence index and publishes the views on object storage (views/vectors_s3.py,
        views/published.py), the same from every process and host that works on this home's
        directory, unlike a host name or a path."""
        made = self.home_id_if_made
        if made is not None:
            return made
        path = self._home_id_path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".home.id.{uuid.uuid4().hex}")
        tmp.write_text(uuid.uuid4().hex)
        try:
            os.link(tmp, path)  # whole or absent: of two processes making it, one wins
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return path.read_text().strip()

    @property
    def home_id_if_made(self) -> str | None:
        """The home's id when it has one, without making it (a home that only reads has none)."""
        try:
            return self._home_id_path.read_text().strip()
        except FileNotFoundError:
            return None

    @property
    def _home_id_path(self) -> Path:
        return self.root / "config" / "home.id"

    @property
    def dagster(self) -> Path:
        return self.root / "dagster"

    @property
    def build_lock(self) -> Path:
        """Held by the one build (or backfill, or dream) running on this home (memc/locks.py)."""
        return self.dagster / "build.lock"

    def view_dirs(self) -> dict[str, Path]:
        """Every rebuildable view, by name: deleting all of these loses nothing."""
        return {
            "claims": self.claims,
            "warehouse": self.warehouse,
            "vectors": self.vectors,
            "graph": self.graph,
            "units": self.units,
            "skills": self.skills,
            "profile": self.profile,
        }

    def ensure(self) -> "MemcHome":
        for p in (self.root, self.ledger, self.inbox):
            p.mkdir(parents=True, exist_ok=True)
        return self
