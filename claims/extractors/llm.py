"""The LLM extractor: one chat-completions call per entry to any OpenAI-compatible server. A turn
of a session is sent with the session's two turns before it (``turns_before``), so that a short
reply is read by the question it answers ("How often do you swim?" - "Twice a week.") and an
"it" by what the speaker's own turn before named ("I completed my first wooden canoe!" - "What is
it made of?" - "It's a blend of cedar and walnut!"): the model may name that question
(``question_entry_id``, ``question_quote``) or that turn (``subject_entry_id``), which the
validators check in that entry as they check the quote in its own. A turn that shares a picture
goes with the picture's caption (``picture_caption``), which a claim may quote instead of the text
(the speaker's ``shared_photo``), as the clause extractor reads it.

Configuration (environment, or an ``LLMConfig`` passed in):

    MEMC_LLM_BASE_URL     e.g. http://127.0.0.1:8080/v1 (required); POST {base}/chat/completions
    MEMC_LLM_MODEL        model name sent with every request (required; part of the version)
    MEMC_LLM_API_KEY      sent as "Authorization: Bearer ..." when set
    MEMC_LLM_TIMEOUT      seconds per attempt (connect and read), default 60
    MEMC_LLM_MAX_RETRIES  retries after the first attempt, default 4
    MEMC_LLM_BACKOFF      exponential backoff factor in seconds, default 1 (1, 2, 4, 8 s ... capped at 30)

Retries are urllib3's (through a requests ``HTTPAdapter``): connection errors, read timeouts,
HTTP 429 and 5xx are retried with exponential backoff, and a ``Retry-After`` header on 429/503
is honoured (capped at ``max_retry_after`` seconds, so a server cannot park a build for hours).
When the retries are spent the extractor raises ``ExtractorError``: the partition fails whole
and stays out of date, nothing half-written.

The model is untrusted: its answer is parsed into proposals that go through the same validators
as the rules extractor's (a quote must occur verbatim, the object must occur in the quote, the
visibility may not widen). Valid times are not taken from the model when it gives a relative
phrase: the phrase is resolved here, against the entry's valid time.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Iterator

import requests
from pydantic import BaseModel, Field
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from claims import timephrase
from claims.extractors.base import Extractor, ExtractorError, UnusableAnswer
from claims.ontology import ONTOLOGY
from ledger.schema import image_caption

NAME = "llm"
# The prompt's version; the model name is appended, since another model is another extractor.
PROMPT_VERSION = "0.3.2"  # 0.3.2: the ontology it lists gained member_of (rules 0.6.2); 0.3.1: made_with


class LLMConfig(BaseModel):
    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    api_key: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)
    max_backoff_s: float = Field(default=30.0, ge=0)
    max_retry_after_s: float = Field(default=60.0, ge=0)

    @classmethod
    def from_env(cls) -> "LLMConfig":
        env = os.environ
        missing = [k for k in ("MEMC_LLM_BASE_URL", "MEMC_LLM_MODEL") if not env.get(k)]
        if missing:
            raise ExtractorError(f"MEMC_EXTRACTOR=llm needs {' and '.join(missing)} (an OpenAI-compatible server and model)")
        kw: dict[str, Any] = {"base_url": env["MEMC_LLM_BASE_URL"], "model": env["MEMC_LLM_MODEL"], "api_key": env.get("MEMC_LLM_API_KEY") or None}
        for field, var in (("timeout_s", "MEMC_LLM_TIMEOUT"), ("max_retries", "MEMC_LLM_MAX_RETRIES"), ("backoff_s", "MEMC_LLM_BACKOFF")):
            if env.get(var):
                kw[field] = env[var]
        try:
            return cls(**kw)
        except ValueError as exc:
            raise ExtractorError(f"bad LLM configuration: {exc}") from None

    @property
    def version(self) -> str:
        return f"{PROMPT_VERSION}+{re.sub(r'[^A-Za-z0-9._-]+', '_', self.model)}"


def _session(cfg: LLMConfig):
    class CappedRetry(Retry):
        """urllib3's Retry, with Retry-After capped."""

        max_retry_after = cfg.max_retry_after_s

        def get_retry_after(self, response):
            after = super().get_retry_after(response)
            return None if after is None else min(after, self.max_retry_after)

    retry = CappedRetry(
        total=cfg.max_retries,
        connect=cfg.max_retries,
        read=cfg.max_retries,
        status=cfg.max_retries,
        other=0,
        allowed_methods=None,  # POST too: a completion request has no side effect to repeat
        status_forcelist=(429, 500, 502, 503, 504),
        backoff_factor=cfg.backoff_s,
        backoff_max=cfg.max_backoff_s,
        respect_retry_after_header=True,
        raise_on_status=True,
    )
    s = requests.Session()
    s.mount("http://", HTTPAdapter(max_retries=retry))
    s.mount("https://", HTTPAdapter(max_retries=retry))
    if cfg.api_key:
        s.headers["Authorization"] = f"Bearer {cfg.api_key}"
    return s


SYSTEM_PROMPT = """You extract typed facts from one piece of evidence (a conversation turn or a document).
Answer with one JSON object: {"claims": [ ... ]}, nothing else. Each claim is an object with:
  "subject": the person the fact is about; for "I"/"my" use the speaker's name,
  "predicate": one of PREDICATES,
  "object": the value, copied exactly from the text,
  "quote": the shortest span of the text that states the fact, copied verbatim (it must contain the object);
    for what a shared picture shows ("shared_photo"), a span of "picture_caption" instead, never of both,
  "polarity": "assert", or "retract" when the text says the fact no longer holds ("I don't live in X anymore"),
  "time_phrase": the relative time phrase in the quote that dates the fact ("last month", "yesterday"), or null,
  "asserted_by": for reported speech ("Jonas says Mira teaches ..."), the name of who is reported to have said it, else null,
  "question_entry_id", "question_quote": when the text answers a question that the last of "turns_before" asks (its
    speaker is someone else: "How often do you swim?" - "Twice a week."), that turn's entry_id and the question copied
    verbatim from it, ending with "?"; the object may then be the question's words followed by the answer's ("swim
    Twice a week"), and the quote is still a span of the text. Else null,
  "subject_entry_id": when the subject is only "it" or "they" in the text and the speaker's own earlier turn in
    "turns_before" names it ("I completed my first wooden canoe!" ... "It's a blend of cedar and walnut!"), that
    turn's entry_id, with the subject as that turn names it ("<speaker>'s first wooden canoe" for its "my first wooden
    canoe").
    Else null,
  "confidence": a number from 0 to 1.
State only what the text says; no guesses. If nothing qualifies, answer {"claims": []}.
Predicates:
"""


def _system_prompt() -> str:
    lines = [f"- {p.name} ({p.cardinality}; object: {p.object_type}): {p.description}" for p in ONTOLOGY.values() if p.name not in ("centrality", "community")]
    return SYSTEM_PROMPT.replace("PREDICATES", "the predicates below") + "\n".join(lines)


class LLMClient:
    def __init__(self, cfg: LLMConfig):
        self.cfg = cfg
        self._s = _session(cfg)
        self.url = cfg.base_url.rstrip("/") + "/chat/completions"

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The assistant message's content; raises ExtractorError once retries are spent."""

        body = {"model": self.cfg.model, "messages": messages, "temperature": 0, "response_format": {"type": "json_object"}}
        try:
            resp = self._s.post(self.url, json=body, timeout=(self.cfg.timeout_s, self.cfg.timeout_s))
            resp.raise_for_status()
        except requests.RequestException as exc:
            raise ExtractorError(f"LLM server {self.url} failed after {self.cfg.max_retries} retries: {_short(exc)}") from exc
        try:
            return resp.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise UnusableAnswer(f"not a chat-completions response ({type(exc).__name__}: {exc})", resp.text[:2000]) from None

    def close(self) -> None:
        self._s.close()


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 300 else text[:297] + "..."


_FENCE = re.compile(r"^\s*```(?:json)?\s*(?P<body>.*?)\s*```\s*$", re.S)


def parse_answer(content: str) -> list[Any]:
    """The claim items of a model's answer; UnusableAnswer if it is not the JSON asked for."""
    m = _FENCE.match(content)
    text = m.group("body") if m else content
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UnusableAnswer(f"LLM answer is not valid JSON ({exc})", content) from None
    items = data.get("claims") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise UnusableAnswer('LLM answer has no "claims" list', content)
    return items


_FIELDS = (
    "subject", "predicate", "object", "quote", "polarity", "time_phrase", "asserted_by", "visibility", "source_entry_id",
    "question_entry_id", "question_quote", "subject_entry_id",
)  # fmt: skip


def to_proposal(item: Any, entry: dict[str, Any]) -> Any:
    """One answer item as a proposal dict (validated by pydantic and the validators later)."""
    if not isinstance(item, dict):
        return item  # fails schema validation with its own reason
    p: dict[str, Any] = {k: item[k] for k in _FIELDS if item.get(k) is not None}
    p.setdefault("source_entry_id", entry["entry_id"])
    p.setdefault("visibility", list(entry["visibility"] or ()))
    p.setdefault("polarity", "assert")
    # The model's confidence, never above the source's, and never above 0.9 unless it is sure.
    try:
        conf = float(item.get("confidence", 0.7))
    except (TypeError, ValueError):
        conf = -1.0  # rejected by the schema validator, with the field named
    p["confidence"] = min(conf, float(entry["confidence"])) if conf >= 0 else conf
    pred = ONTOLOGY.get(str(item.get("predicate")))
    resolved = None
    if p.get("time_phrase"):
        resolved = timephrase.resolve(str(p["time_phrase"]), entry["valid_at"], past=not (pred and pred.future_allowed))
    p["valid_at"] = resolved or item.get("valid_at") or entry["valid_at"]
    return p


class LastTurns:
    """Each session's last two turns, for one pass over entries in ledger order: what a turn is
    sent with (the other speaker's question just before, the speaker's own turn before that).
    Only turns the same principals saw (a claim drawn from two must not reach anyone either
    would not), and none further back than one turn of the speaker's own: as the clause
    extractor's ``Dialogue``, a topic further back is a guess."""

    TURNS = 2

    def __init__(self) -> None:
        self._last: dict[tuple[Any, Any], list[dict[str, Any]]] = {}

    def before(self, entry: dict[str, Any]) -> list[dict[str, Any]]:
        turns = self._last.get((entry["scope"], entry.get("session_id")), []) if entry.get("session_id") else []
        seen = set(entry["visibility"] or ())
        shown: list[dict[str, Any]] = []
        for turn in reversed(turns):  # newest first, stopping at a turn fewer (or other) principals saw
            if set(turn["visibility"] or ()) != seen:
                break
            shown.insert(0, {"entry_id": turn["entry_id"], "speaker": turn.get("actor"), "text": turn["content"]})
            if turn.get("actor") == entry.get("actor"):
                break  # the speaker's own turn: nothing before it is read
        return shown

    def read(self, entry: dict[str, Any]) -> None:
        if entry.get("session_id"):
            key = (entry["scope"], entry["session_id"])
            self._last[key] = [*self._last.get(key, [])[-(self.TURNS - 1) :], entry]


def llm_extractor(cfg: LLMConfig | None = None) -> Extractor:
    cfg = cfg or LLMConfig.from_env()
    client: LLMClient | None = None
    system = _system_prompt()

    def propose(entry: dict[str, Any], resolver: Any = None, *, dialogue: LastTurns | None = None) -> Iterator[Any]:
        nonlocal client
        if client is None:  # built on first use: constructing the extractor makes no connection
            client = LLMClient(cfg)
        user = {
            "entry_id": entry["entry_id"],
            "kind": entry["kind"],
            "speaker": entry.get("actor"),
            "said_at": entry["valid_at"].isoformat(),
            "text": entry["content"],
        }
        if caption := image_caption(entry.get("attributes")):
            user["picture_caption"] = caption
        if dialogue is not None:
            if before := dialogue.before(entry):
                user["turns_before"] = before
            dialogue.read(entry)  # read before the call: a failed answer is still the session's last turn
        content = client.complete([{"role": "system", "content": system}, {"role": "user", "content": json.dumps(user, ensure_ascii=False)}])
        for item in parse_answer(content):
            yield to_proposal(item, entry)

    return Extractor(NAME, cfg.version, propose, dialogue=LastTurns)
