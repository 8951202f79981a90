"""Asked as whom, for what: the asker's own facts, and the agent's goal.

* **Who asks.** "Where do I live now?" asked as elena is about Elena: first-person words name
  the asker, so "What holds now" shows what memory knows of them. That is also how memory
  colours an answer, and ``uncolored`` compiles without it: no fact about the asker (their
  profile, their dossier's facts), for a take not shaped by what memory knows of them. The
  evidence stays; only the facts about the asker go, and the context says so.
* **For what.** A ``Goal`` is the agent's current task (``--goal TEXT``, or a structured agent
  state over HTTP and MCP: a text, entities, predicates). Its entities are named beside the
  question's, its predicates rank with the asked ones (after them), and its text is one more
  full-text route; the context names the goal that shaped it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from claims.ontology import ONTOLOGY
from query import intent

# First-person words of a question: they name the asker.
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"})


class GoalError(ValueError):
    """A goal names a predicate the ontology does not have; the message names it."""


@dataclass(frozen=True)
class Goal:
    text: str | None = None
    entities: tuple[str, ...] = ()
    predicates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [p for p in self.predicates if p not in ONTOLOGY]
        if unknown:
            raise GoalError(f"goal.predicates: unknown predicate {unknown[0]!r} (known: {', '.join(sorted(ONTOLOGY))})")

    @classmethod
    def of(cls, goal: "Goal | str | None") -> "Goal | None":
        if goal is None or isinstance(goal, Goal):
            return goal if goal is None or not goal.empty() else None
        return cls(text=goal) if goal.strip() else None

    def empty(self) -> bool:
        return not ((self.text or "").strip() or self.entities or self.predicates)

    def said(self) -> str:
        """The goal as words: its text and its entities' names (what names subjects)."""
        return " ".join([self.text or "", *self.entities])

    def asked(self) -> dict[str, int]:
        """Predicates the goal asks for: those its text names (query/intent.py) and those it lists."""
        out = intent.asked(self.text or "")
        for p in self.predicates:
            out[p] = out.get(p, 0) + 2
        return out

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def words_of(text: str) -> set[str]:
    """The case-folded words of a text that may name a subject ("Elena's" names Elena)."""
    words = set(re.findall(r"[\w'-]+", text.casefold()))
    return words | {w[:-2] for w in words if w.endswith(("'s", "’s"))}


def subject_words(question: str, asker: str, goal: Goal | None, *, uncolored: bool) -> set[str]:
    """Words naming the subjects whose facts a compile shows: the question's and the goal's, and
    the asker for a first-person question unless ``uncolored``."""
    words = words_of(question) | (words_of(goal.said()) if goal else set())
    if words & FIRST_PERSON and not uncolored:
        words.add(asker.casefold())
    return words


def asked_with_goal(question: str, goal: Goal | None) -> dict[str, int]:
    """The question's predicates first, then the goal's (ranked after any the question names)."""
    asked = {p: 100 * n for p, n in intent.asked(question).items()}
    for p, n in (goal.asked() if goal else {}).items():
        asked[p] = asked.get(p, 0) + n
    return asked
