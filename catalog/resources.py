"""Resources: how assets reach the memory home and the embedding model."""

from __future__ import annotations

import dagster as dg

from ledger import Ledger, open_ledger
from memc.home import MemcHome
from views import published
from views.embedder_onnx import bulk_embedder


class MemcResource(dg.ConfigurableResource):
    """The memory home every asset reads and writes. ``home_dir`` unset means ``$MEMC_HOME``
    or ``./memc_home``, resolved when a run starts, never at import."""

    home_dir: str | None = None

    @property
    def home(self) -> MemcHome:
        """The home, its views brought up to date from object storage first when MEMC_STORAGE
        puts them there (one LIST, ~7 ms on loopback RGW, when nothing changed; nothing for local
        files): a step or a check that a distributed executor runs on another machine reads what
        the steps before it published, wherever they ran (views/published.py). Never skipped
        for being recent: a Celery worker runs one step after another in one process."""
        home = self._resolved()
        published.pull(home)
        return home

    def _resolved(self) -> MemcHome:
        """The home without pulling: for what reads no view (the ledger) or writes one."""
        return MemcHome.resolve(self.home_dir).ensure()

    def ledger(self) -> Ledger:
        return open_ledger(self._resolved().ledger)

    def publish(self, view: str, subs: tuple[str, ...] = ("",)) -> None:
        """Publish what a step wrote of ``view`` to object storage (MEMC_STORAGE; a no-op for
        local files)."""
        published.publish(self._resolved(), view, subs)


class EmbedderResource(dg.ConfigurableResource):
    """The sentence embedding model (all-MiniLM-L6-v2 from its package, CPU): on ONNX Runtime with
    a thread per core when its export is installed, else torch (MEMC_EMBED_RUNTIME,
    views/embedder_onnx.py)."""

    batch_size: int = 64

    def get(self):
        return bulk_embedder(batch_size=self.batch_size)
