"""Compiled views of the ledger: embeddings (``embedder``), evidence rows (``evidence``), vectors +
full text (``vectors``), the entity graph (``graph``), dreaming (``dreaming``), the per-home build
steps the assets call (``build``) and the audits the checks run (``audit``). Plain modules, no
Dagster; heavy engines are imported lazily inside them."""
