"""What a claim may say: known predicates, their cardinality and their argument types.

Functional predicates hold one value at a time (a newer claim supersedes an older one in the
state fold); multi-valued predicates accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Cardinality = Literal["functional", "multi"]


@dataclass(frozen=True)
class Predicate:
    name: str
    cardinality: Cardinality
    subject_type: str
    object_type: str  # "place", "organization", "person", "text", "identifier", "number"
    description: str


ONTOLOGY: dict[str, Predicate] = {
    p.name: p
    for p in [
        Predicate("lives_in", "functional", "person", "place", "where the subject lives"),
        Predicate("works_at", "functional", "person", "organization", "the subject's employer"),
        Predicate("likes", "multi", "person", "text", "something the subject likes"),
        Predicate("plans", "multi", "person", "text", "a plan or intended event"),
        Predicate("has_relative", "multi", "person", "person", "a family member (relation in the quote)"),
        Predicate("mentions_identifier", "multi", "any", "identifier", "an order, booking or ticket id"),
        Predicate("centrality", "functional", "person", "number", "PageRank in the interaction graph (derived)"),
    ]
}
