"""What an extractor is: a name, a version and a ``propose`` function turning one ledger entry
into claim proposals; and the two ways one can fail (it cannot run at all; one answer is
unusable). Every extractor (rules.py, llm.py) builds on this; registry.py picks the active one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from claims.model import Proposal

EXTRACTORS = ("rules", "llm")


class ExtractorError(RuntimeError):
    """An extractor could not run at all (misconfigured, or its server unreachable after retries).
    Raised, never recorded as rejections: the partition stays unmaterialized and can be retried."""


class UnusableAnswer(ValueError):
    """An extractor's answer for one entry could not be read as proposals (e.g. malformed JSON
    from a model). Recorded as a ``schema`` rejection of that entry, with the raw answer."""

    def __init__(self, reason: str, raw: str):
        super().__init__(reason)
        self.raw = raw


@dataclass(frozen=True)
class Extractor:
    name: str
    version: str
    propose: Callable[..., Iterable[Proposal | dict[str, Any]]]
    # True: ``propose(entry, resolver)`` (the rules extractor names known people it sees).
    uses_resolver: bool = False
    # True: a pure function of the entry, so a large pass may split its entries over worker
    # processes (claims.extract); a remote model keeps its client in one process.
    parallel: bool = False
    # Loads what every call needs (a language pipeline, tables, compiled patterns) into this
    # process: a pass calls it before forking its workers, which then inherit it.
    prepare: Callable[[], None] | None = None
    # A fresh memory of the conversation for one pass over entries in ledger order (the clause
    # extractor's: what each speaker's last turn named, for an "it" or "they" that names nothing
    # in its own turn): ``propose(entry, resolver, dialogue=...)``. A pass keeps each session's
    # entries in one process, so the claims do not depend on how it was split.
    dialogue: Callable[[], Any] | None = None

    @property
    def key(self) -> str:
        """Claims are stored per extractor key, so versions live side by side."""
        return f"{self.name}-{self.version}"
