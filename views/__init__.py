"""Compiled views of the ledger: embeddings (``embedder``), vectors + full text (``vectors``) and the
entity graph (``graph``). Plain modules, no Dagster; heavy engines are imported lazily inside them."""
