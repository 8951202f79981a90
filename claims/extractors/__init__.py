"""The extractors: the base type (base.py), the rules extractor (rules.py), the LLM extractor
(llm.py) and the registry that picks the active one (registry.py). claims/extract.py runs the
active one over ledger entries, gated by the validators."""

from claims.extractors.base import EXTRACTORS, Extractor, ExtractorError, UnusableAnswer
from claims.extractors.registry import RULES, active_extractor, active_extractor_key

__all__ = ["EXTRACTORS", "RULES", "Extractor", "ExtractorError", "UnusableAnswer", "active_extractor", "active_extractor_key"]
