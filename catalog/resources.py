"""Resources: how assets reach the memory home and the embedding model."""

from __future__ import annotations

import dagster as dg

from ledger import Ledger, open_ledger
from memc.home import MemcHome
from views.embedder import Embedder


class MemcResource(dg.ConfigurableResource):
    """The memory home every asset reads and writes. ``home_dir`` unset means ``$MEMC_HOME``
    or ``./memc_home``, resolved when a run starts, never at import."""

    home_dir: str | None = None

    @property
    def home(self) -> MemcHome:
        return MemcHome.resolve(self.home_dir).ensure()

    def ledger(self) -> Ledger:
        return open_ledger(self.home.ledger)


class EmbedderResource(dg.ConfigurableResource):
    """The sentence embedding model (all-MiniLM-L6-v2, loaded from its package, CPU)."""

    batch_size: int = 64

    def get(self):
        return Embedder(batch_size=self.batch_size)
