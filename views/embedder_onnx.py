"""MiniLM on ONNX Runtime: the same model as :class:`views.embedder.Embedder`, exported once from the
shipped weights, for the processes that embed one question at a time.

Why: the question's embedding is the only reason an ask imports torch and sentence-transformers
(12-18 s of a cold ``memc ask`` on two cores, docs/benchmarks.md), and in a server torch's
per-module Python dispatch holds the GIL for 30 % of an ask. ONNX Runtime loads the exported graph
in ~0.2 s, runs a question in ~4 ms on one thread and releases the GIL while it runs.

The export (``python -m views.embedder_onnx``, run by ``make install``) traces the bundled weights
with torch once, then checks the ONNX model's vectors against torch's on sentences of several
lengths and batch sizes: any difference above ``TOLERANCE`` (float rounding is ~2e-7) and the file
is not written. Stored vectors therefore stay valid whichever runtime embedded the question; both
report the same ``model_version``. Bulk embedding (the index build, :func:`bulk_embedder`) runs
on it too, with a thread per core: on two cores it encoded LoCoMo's turns at 285-297 texts/s
against torch's 135-137 and texts of eight turns at 25-27 against 21-22, and it loads in 0.3 s
against torch's 4.5-4.7 s, most of a one-message build's embedding (docs/benchmarks.md).

``MEMC_EMBED_RUNTIME``: ``auto`` (the default: ONNX when the export exists), ``onnx`` (fail
without it) or ``torch``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from views.embedder import DEFAULT_BATCH_SIZE, EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION, Embedder, TextEmbedder, model_dir

# Largest difference from torch's vectors the export accepts (unit vectors; float32 rounding gives ~2e-7).
TOLERANCE = 1e-5
MAX_SEQ_LENGTH = 256  # the model's window (its sentence_bert_config.json)
# What the export is checked on: short and long, alone and padded in batches.
_PROBES = [
    "Where does Elena live now?",
    "hi",
    "I moved to Berlin last month and started at Helio Labs; the commute is long but the team is great.",
    "We went camping by the lake, roasted marshmallows and told stories until midnight. " * 6,
    "Ticket T-4821 was closed on 2024-03-02 after the refund.",
]


class OnnxUnavailable(RuntimeError):
    """MEMC_EMBED_RUNTIME=onnx, but the exported model or ONNX Runtime is missing."""


def onnx_path() -> Path:
    """Where the exported model lives: ``$MEMC_ONNX_DIR`` or the Python environment's
    ``share/memc`` (beside the installed weights), named by the weights' version."""
    root = os.environ.get("MEMC_ONNX_DIR", "").strip()
    base = Path(root) if root else Path(sys.prefix) / "share" / "memc"
    return base / f"{EMBEDDING_MODEL}-{EMBEDDING_MODEL_VERSION.replace('==', '-')}.onnx"


def export(path: Path | None = None) -> dict[str, Any]:
    """Trace the bundled weights to ONNX at ``path`` (default :func:`onnx_path`), check its vectors
    against torch's, and write it (atomically, with a ``.json`` beside it saying how it was
    checked). Raises ValueError, writing nothing, when the vectors differ by more than TOLERANCE."""
    import torch  # lazy: the export is the one step that needs torch

    from views.embedder import load_model

    path = Path(path or onnx_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    st = load_model()
    bert = st[0].auto_model.eval()

    class _Hidden(torch.nn.Module):  # the transformer's last hidden state; pooling stays in numpy
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    sample = st.tokenizer(_PROBES[:2], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        # The tracer warns that shape checks become constants; the vector check below is what says
        # whether the traced graph is right for other shapes.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Hidden(bert), tuple(sample[n] for n in names), str(tmp), input_names=names, output_names=["last_hidden_state"],
                dynamic_axes=axes, opset_version=17, dynamo=False,
            )  # fmt: skip
        onnx = OnnxEmbedder(tmp)
        reference = Embedder()
        worst = 0.0
        for batch in ([p] for p in _PROBES):
            worst = max(worst, float(np.abs(onnx.encode(batch) - reference.encode(batch)).max()))
        worst = max(worst, float(np.abs(onnx.encode(_PROBES) - reference.encode(_PROBES)).max()))
        if worst > TOLERANCE:
            raise ValueError(f"the ONNX export of {EMBEDDING_MODEL} differs from torch by {worst:.2e} (> {TOLERANCE:.0e}): not written")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    info = {"model": EMBEDDING_MODEL, "model_version": EMBEDDING_MODEL_VERSION, "max_abs_diff": worst, "torch": torch.__version__, "opset": 17}
    path.with_suffix(".json").write_text(json.dumps(info, indent=1))
    return {"path": str(path), **info}


_SESSION_LOCK = threading.Lock()


# Texts tokenized at once by OnnxEmbedder.encode: bounds its memory (like lengths are still
# batched together within each chunk).
TOKENIZE_CHUNK = 8_192


@functools.lru_cache(maxsize=4)
def _session(path: str, threads: int) -> tuple[Any, Any]:
    import onnxruntime as ort  # lazy: ~0.1 s
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    tokenizer.no_padding()  # encode() pads each batch of like-length texts itself
    return session, tokenizer


class OnnxEmbedder:
    """The :class:`~views.embedder.TextEmbedder` of the exported MiniLM: unit-length float32
    vectors of 384 dimensions, equal to :class:`~views.embedder.Embedder`'s within TOLERANCE."""

    model_name: str = EMBEDDING_MODEL
    model_version: str = EMBEDDING_MODEL_VERSION
    dim: int = EMBEDDING_DIM

    def __init__(self, path: Path | str | None = None, *, threads: int = 1, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        """``threads``: ONNX Runtime's intra-op threads (1 for a question, as the servers' torch)."""
        self.path = str(path or onnx_path())
        self.threads = threads
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with _SESSION_LOCK:
            session, tokenizer = _session(self.path, self.threads)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Tokenized TOKENIZE_CHUNK texts at a time: the tokenizer's encodings take ~6 KB a text
        # (1.2 GB for 200k), and the evidence index of a 1M-entry home (1.6M texts) tokenized at
        # once took the build past 12 GB and the OOM killer ended it.
        for lo in range(0, len(texts), TOKENIZE_CHUNK):
            encoded = tokenizer.encode_batch(list(texts[lo : lo + TOKENIZE_CHUNK]))
            # Batches of texts of like length, so that a short text is not padded to a long one's size.
            order = sorted(range(len(encoded)), key=lambda k: len(encoded[k].ids))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                width = max(len(encoded[k].ids) for k in rows)
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                types = np.zeros((len(rows), width), dtype=np.int64)
                for r, k in enumerate(rows):
                    e = encoded[k]
                    n = len(e.ids)
                    ids[r, :n], mask[r, :n], types[r, :n] = e.ids, 1, e.type_ids
                hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)  # mean over real tokens
                out[[lo + k for k in rows]] = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return out

    def info(self) -> dict[str, Any]:
        return {"embedding_model": self.model_name, "embedding_model_version": self.model_version, "embedding_dim": self.dim, "runtime": "onnx"}

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model_name!r}, path={self.path!r}, threads={self.threads})"


def question_embedder(threads: int | None = None) -> TextEmbedder:
    """The embedder for questions (``MEMC_EMBED_RUNTIME``, module docstring): the ONNX one when
    its export exists and ONNX Runtime imports, else torch's :class:`~views.embedder.Embedder`.
    ``threads``: intra-op threads (None: one for ONNX, torch's default for torch)."""
    return _embedder(threads, 1, DEFAULT_BATCH_SIZE)


def bulk_embedder(batch_size: int = DEFAULT_BATCH_SIZE) -> TextEmbedder:
    """The embedder for builds (the evidence index): the same choice as :func:`question_embedder`,
    with one intra-op thread per core this process may use."""
    return _embedder(None, len(os.sched_getaffinity(0)), batch_size)


def _embedder(threads: int | None, onnx_threads: int, batch_size: int) -> TextEmbedder:
    runtime = os.environ.get("MEMC_EMBED_RUNTIME", "auto").strip().lower() or "auto"
    if runtime not in ("auto", "onnx", "torch"):
        raise ValueError(f"MEMC_EMBED_RUNTIME={runtime!r}: expected auto, onnx or torch")
    if runtime == "torch":
        return Embedder(batch_size=batch_size, threads=threads)
    path = onnx_path()
    if path.is_file() and importlib.util.find_spec("onnxruntime") is not None:
        return OnnxEmbedder(path, threads=threads or onnx_threads, batch_size=batch_size)
    if runtime == "onnx":
        raise OnnxUnavailable(f"MEMC_EMBED_RUNTIME=onnx but {path} is missing or onnxruntime is not installed: run `python -m views.embedder_onnx`")
    return Embedder(batch_size=batch_size, threads=threads)


if __name__ == "__main__":  # python -m views.embedder_onnx [PATH]
    print(json.dumps(export(Path(sys.argv[1]) if len(sys.argv) > 1 else None), indent=1))
