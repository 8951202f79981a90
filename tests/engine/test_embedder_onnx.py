"""MiniLM on ONNX Runtime (views/embedder_onnx.py): exported from the shipped weights with torch,
its vectors equal torch's within float rounding on sentences of its own, chosen for questions when
the export exists, and a process that embeds a question with it never imports torch.

Cost: one export (~8 s with torch's import) and a subprocess (~1 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from views.embedder import Embedder
from views.embedder_onnx import TOLERANCE, OnnxEmbedder, OnnxUnavailable, bulk_embedder, export, onnx_path, question_embedder

SENTENCES = [
    "Where does Elena work now?",
    "ok",
    "Priya adopted a grey cat named Pixel after her old one passed away last spring.",
    "Our team ships the quarterly report on Fridays; Tomasz reviews the figures and Elena signs off. " * 5,
    "Order #A-77213 arrived damaged, so I asked for a replacement and a refund of the shipping.",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx")
    os.environ["MEMC_ONNX_DIR"] = str(folder)
    try:
        yield export()
    finally:
        os.environ.pop("MEMC_ONNX_DIR", None)


def test_the_export_gives_torchs_vectors_within_float_rounding(exported, monkeypatch):
    monkeypatch.setenv("MEMC_ONNX_DIR", os.path.dirname(exported["path"]))
    assert exported["path"] == str(onnx_path()) and onnx_path().is_file()
    side = json.loads(onnx_path().with_suffix(".json").read_text())
    assert side["max_abs_diff"] <= TOLERANCE and side["model_version"] == Embedder.model_version
    onnx, torch_ = OnnxEmbedder(exported["path"]), Embedder()
    for batch in ([s] for s in SENTENCES):  # alone: no padding
        assert np.abs(onnx.encode(batch) - torch_.encode(batch)).max() <= TOLERANCE
    together = onnx.encode(SENTENCES)  # padded, in length order, back in the callers' order
    assert together.shape == (len(SENTENCES), 384) and together.dtype == np.float32
    assert np.abs(together - torch_.encode(SENTENCES)).max() <= TOLERANCE
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert onnx.encode([]).shape == (0, 384)


def test_many_texts_are_tokenized_a_chunk_at_a_time_with_the_same_vectors(exported, monkeypatch):
    """encode tokenizes TOKENIZE_CHUNK texts at a time (1.6M texts at once took a 1M-entry build
    past 12 GB): the vectors and their order are those of one pass."""
    import views.embedder_onnx as module

    onnx = OnnxEmbedder(exported["path"])
    texts = [f"{s} ({i})" for i in range(7) for s in SENTENCES]  # 35 texts of mixed lengths
    whole = onnx.encode(texts)
    monkeypatch.setattr(module, "TOKENIZE_CHUNK", 4)  # nine chunks, the last one short
    chunked = onnx.encode(texts)
    assert chunked.shape == whole.shape and np.abs(chunked - whole).max() <= 1e-6
    assert np.abs(chunked[5] - onnx.encode([texts[5]])[0]).max() <= TOLERANCE


def test_questions_take_the_onnx_model_when_it_is_exported(exported, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMC_ONNX_DIR", os.path.dirname(exported["path"]))
    monkeypatch.delenv("MEMC_EMBED_RUNTIME", raising=False)
    assert isinstance(question_embedder(), OnnxEmbedder)
    monkeypatch.setenv("MEMC_EMBED_RUNTIME", "torch")
    assert isinstance(question_embedder(threads=1), Embedder)
    monkeypatch.setenv("MEMC_EMBED_RUNTIME", "gpu")
    with pytest.raises(ValueError, match="auto, onnx or torch"):
        question_embedder()
    monkeypatch.setenv("MEMC_ONNX_DIR", str(tmp_path))  # nothing exported there
    monkeypatch.setenv("MEMC_EMBED_RUNTIME", "onnx")
    with pytest.raises(OnnxUnavailable, match="python -m views.embedder_onnx"):
        question_embedder()
    monkeypatch.setenv("MEMC_EMBED_RUNTIME", "auto")
    assert isinstance(question_embedder(), Embedder)  # falls back to torch


def test_builds_embed_on_it_with_a_thread_per_core_and_torchs_vectors(exported, monkeypatch):
    monkeypatch.setenv("MEMC_ONNX_DIR", os.path.dirname(exported["path"]))
    monkeypatch.delenv("MEMC_EMBED_RUNTIME", raising=False)
    bulk = bulk_embedder(batch_size=4)
    assert isinstance(bulk, OnnxEmbedder) and bulk.threads == len(os.sched_getaffinity(0)) and bulk.batch_size == 4
    texts = [f"{s} ({i})" for i in range(7) for s in SENTENCES]  # 35 texts: nine batches of like lengths
    assert np.abs(bulk.encode(texts) - Embedder(batch_size=4).encode(texts)).max() <= TOLERANCE
    monkeypatch.setenv("MEMC_EMBED_RUNTIME", "torch")
    assert isinstance(bulk_embedder(), Embedder) and bulk_embedder().threads is None  # torch's default: every core


def test_a_process_that_embeds_a_question_with_it_never_imports_torch(exported):
    code = (
        "import sys; from views.embedder_onnx import question_embedder; e = question_embedder(); "
        "v = e.encode(['Where does Elena work now?']); "
        "print(type(e).__name__, v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = {**os.environ, "MEMC_ONNX_DIR": os.path.dirname(exported["path"]), "MEMC_EMBED_RUNTIME": "auto"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["OnnxEmbedder", "(1,", "384)", "False", "False"], out.stdout
