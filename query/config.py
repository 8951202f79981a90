"""How a compile is tuned: QueryConfig (routes, k, weights, windows, budget) and the presets
`fast`, `balanced`, `thorough` that the CLI, the HTTP API and MCP offer by name.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, Field

from query.staleness import DEFAULT_POLICIES, ViewPolicy

# What the evidence routes rank: the ledger's own text (claims rows in the same index are ranked
# by their own route).
EVIDENCE_KINDS = ("message", "document", "event", "observation", "correction")


class QueryConfig(BaseModel):
    """How much each route retrieves, how they are fused, and how much context is packed."""

    # Items at most: the budget decides how many are packed (a median of 20 at 2,000 tokens on
    # LoCoMo dev with the narrow windows below, 15 when every later hit showed its next turn); 10
    # cut dev at 2,000 tokens to 0.834 from 0.861, and 20 left the budget unfilled once a later
    # hit that states something is shown alone (docs/context.md).
    k: int = Field(default=30, ge=1, le=200)
    # Hits per route and the reciprocal rank fusion constant (Cormack et al.'s 60). Deeper routes
    # and a sharper fusion rank an entry that both routes found well above one that only one
    # found: on LoCoMo dev at 1,000 tokens 0.772 -> 0.80 with k 80 and 30 (40 and 60 before).
    vector_k: int = Field(default=80, ge=1)
    fulltext_k: int = Field(default=80, ge=1)
    rrf_k: int = Field(default=30, ge=1)
    max_state_facts: int = Field(default=10, ge=0)
    # Share of the budget state facts may take before the evidence (facts are dense but not all
    # relevant); the asked predicate's current value is kept whatever the share leaves, and the
    # facts the share left out fill what the evidence leaves (query/pack.py). Balanced gives none:
    # only the asked value goes before the evidence. On LoCoMo dev (whole context at 500 / 1,000 /
    # 2,000 tokens, multi-hop at 2,000; the rules-0.4.0 homes) none gives 0.739 / 0.853 / 0.905 and
    # 0.713, a twentieth 0.739 / 0.851 / 0.905 and 0.706 (docs/context.md, "Facts cited by their
    # ref, after the evidence"); earlier a tenth gave 0.833 / 0.894 at 1,000 / 2,000 against a
    # twentieth's 0.834 / 0.897, and by recall@10 a tenth 0.82, a quarter 0.80, all of it 0.74.
    state_share: float = Field(default=0.0, ge=0.0, le=1.0)
    budget_tokens: int = Field(default=2000, ge=50)
    staleness: dict[str, ViewPolicy] = Field(default_factory=lambda: dict(DEFAULT_POLICIES))
    # Route weights in the fusion. Full text leads: on LoCoMo dev, BM25-style full text alone
    # reaches recall@10 0.62 and MiniLM vectors 0.44; plain RRF of the two (equal weights) drops
    # to 0.58, while a 0.2 weight on vectors lifts it to 0.64.
    fulltext_weight: float = Field(default=1.0, ge=0)
    vector_weight: float = Field(default=0.2, ge=0)
    # Conversation turns before and after a hit shown with it, in the same session. One before
    # and two after since replies are keyed with their questions (``exchange_fulltext``): the
    # hit is then more often the reply itself, and the reply after a hit holds the answer more
    # often than the line before it; on LoCoMo dev 0.717 / 0.849 / 0.908 -> 0.735 / 0.853 /
    # 0.906 at 500 / 1,000 / 2,000 tokens, multi-hop +0.01-0.02 (docs/context.md). Before the
    # keys 1+2 moved recall@10 0.835 -> 0.833. Tried on LoCoMo dev and dropped: a penalty on
    # repeated sessions (0.80); vector pseudo-relevance feedback from the top 3 hits (0.81).
    window_before: int = Field(default=1, ge=0, le=10)
    window_after: int = Field(default=2, ge=0, le=10)
    # Only the first ``wide_items`` items show those windows; the later ones show ``narrow_before``
    # turns before the hit and ``narrow_after`` after it. A top hit is the answer, or its reply
    # or set-up is, far more often than a lower one (on LoCoMo dev a hit at rank 1 is evidence
    # 34 % of the time, its next turn 12 %; at ranks 5-8, 3 % and 2 %), while a list's items are
    # scattered over many sessions: a hit and its reply, at about half the tokens of five turns,
    # let the budget reach twice as many hits (dev at 1,000 tokens multi-hop 0.39 -> 0.45).
    wide_items: int = Field(default=2, ge=0, le=200)
    narrow_before: int = Field(default=0, ge=0, le=10)
    narrow_after: int = Field(default=1, ge=0, le=10)
    # ``narrow_after`` is for a hit that asks something (query/windows.py ``asks``); a later hit
    # that only states shows this many turns after it. Where the evidence lies around the fused
    # hits at ranks 3-10 on LoCoMo dev: a hit that asks is evidence 1.8 % of the time and its
    # reply 4.1 %; a hit that states 4.6 %, the other speaker's reply to it 0.6 % (the same
    # speaker's turn after that 2.6 %). Shown alone, a statement leaves room for more hits:
    # whole-context recall at 1,000 tokens 0.817 -> 0.821, multi-hop 0.455 -> 0.477.
    narrow_after_statement: int = Field(default=0, ge=0, le=10)
    # The graph route: evidence about the entities one typed relation (has_friend, has_relative,
    # ...) away from those the question names, for "where does Elena's friend work?". Ranking
    # the named entity's own evidence higher instead (a speaker filter) cost LoCoMo dev's
    # adversarial questions, which name the wrong person on purpose, 0.93 -> 0.73 recall@10.
    graph_weight: float = Field(default=0.5, ge=0)
    # The time-window route: evidence valid inside the window the question names ("in May
    # 2023", "last week", "before she moved"), ranked by full text and vectors within it.
    time_weight: float = Field(default=1.0, ge=0)
    # The state route (query/current.py): the source turns of the current facts the question asks
    # for ("Where does Elena live now?" -> her lives_in fact's turn), so the current value's
    # evidence is in the context even when no search ranks it; superseded values' evidence then
    # ranks below it. 0 turns both off.
    state_weight: float = Field(default=1.0, ge=0)
    # The facts route: the claim sentences of the evidence index searched by full text and
    # vectors (each at this share of its route's weight), every hit standing for the turn the
    # claim was drawn from. Measured on LoCoMo dev in docs/context.md.
    # In balanced the facts route by vectors only brings candidates for the learned order
    # (``ranker``), which weighs its ranks as a feature: at 0.01 a hit only it found fuses below
    # every other route's hits, and the first items are nearly those without it. Measured on dev
    # in docs/context.md ("The facts route as the learned order's candidates"). As a fused route
    # (0.15 and more) it cost recall.
    facts_weight: float = Field(default=0.01, ge=0)
    # The claims searched by full text too (`thorough`): in balanced its ranks added little to the
    # learned order for a second search a compile (~15 ms of CPU at 100k entries).
    facts_fulltext: bool = False
    # Hits a facts route takes (None: as many as its turns' route, vector_k / fulltext_k). 40
    # saves ~2.5 ms of a claims search at 100k entries; on dev within a few questions of 80 and
    # multi-hop at 2,000 tokens 0.702 -> 0.699 (docs/context.md, "Fewer claims a search").
    facts_k: int | None = Field(default=None, ge=1)
    # Replies keyed with the question they answer (views/evidence.py exchange_rows), ranked with
    # the turns by the full-text and the vector searches, each key's hit standing for its reply:
    # on LoCoMo dev 0.701 / 0.834 / 0.897 -> 0.717 / 0.849 / 0.908 at 500 / 1,000 / 2,000 tokens,
    # with windows of 2+2 (docs/context.md, "A reply keyed with its question"). As a route of its
    # own, fused beside the turns' routes, they cost recall (every reply got a second vote).
    exchange_fulltext: bool = True
    exchange_vector: bool = True
    # The goal route: full text of the agent's current task (``goal``), below the question's own
    # routes: the task conditions what ranks first, the question still decides.
    goal_weight: float = Field(default=0.5, ge=0)
    # Precision: an item that reached less than this share of the best score on every route that
    # found it (BM25 against the best BM25 hit, cosine against the best cosine) is not packed, so a
    # context can end short of its budget rather than fill it with what no route ranked as
    # relevant (0: fill the budget). Measured on LoCoMo dev in docs/context.md.
    relevance_floor: float = Field(default=0.0, ge=0, le=1)
    # Memory units (query/units.py): after each of the first ``unit_seeds`` items whose hit is in
    # a consolidated unit (views/units.py), one item with that unit's ``unit_turns`` turns most
    # similar to the question from other sessions. 0 seeds: off (on in `thorough`). Measured in
    # docs/context.md.
    unit_seeds: int = Field(default=0, ge=0, le=50)
    unit_turns: int = Field(default=2, ge=0, le=20)
    # Decay (query/retrieve.py decay()): old evidence that no context showed lately ranks lower,
    # never out. A hit loses up to ``decay_weight`` of its fused score with age, half of that after
    # ``decay_half_life_days``, its age counted from the later of its valid time and the last
    # time a context showed it. 0: off. On LoCoMo dev, whose questions ask about every month of a
    # conversation alike, any weight costs recall (docs/context.md): off in every preset.
    decay_weight: float = Field(default=0.0, ge=0, le=1)
    decay_half_life_days: float = Field(default=180.0, gt=0)
    # Procedural memory (views/skills.py): the skills whose trigger the question or the goal
    # matches, shown under "How this was done before" (packed with the state facts, within their
    # share of the budget). 0: off. A question that names no task matches none, so this costs
    # nothing elsewhere.
    max_skills: int = Field(default=2, ge=0, le=10)
    # The learned order of the fused hits after the first ``wide_items`` (query/rerank.py): a
    # ranker in query/rankers/ by name, or a path to one; None or "" keeps the fused order
    # (`memc eval locomo --set ranker=`). Fitted on
    # the balanced preset's routes by `memc eval ranker` (evaluation/ranker.py), so the presets
    # with other routes and fusion keep the fused order. Measured in docs/context.md.
    ranker: str | None = Field(default="linear-2", pattern=r"^[\w./-]*$")

    @classmethod
    def preset(cls, name: str) -> "QueryConfig":
        try:
            return PRESETS[name].model_copy()
        except KeyError:
            raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None


PRESETS: dict[str, QueryConfig] = {
    # fast and thorough keep the fusion and the windows they were measured with (every window wide).
    # Neither keys replies with their questions, and thorough keeps windows of 2+2: measured in
    # balanced only.
    "fast": QueryConfig(
        k=5, vector_k=15, fulltext_k=15, rrf_k=60, max_state_facts=8, budget_tokens=800, window_before=1, window_after=1, wide_items=5,
        facts_weight=0.0, ranker=None, exchange_fulltext=False, exchange_vector=False, state_share=0.05,
    ),
    "balanced": QueryConfig(),
    # Memory units on at 4,000 tokens: LoCoMo dev 0.917 -> 0.921, multi-hop 0.716 -> 0.728; at
    # 1,000 and 2,000 they cost more single-hop evidence than they add (docs/context.md). The facts
    # route too, over the clause extractor's claims: 0.919 -> 0.927, multi-hop 0.735 -> 0.741 (at
    # 1,000 tokens it costs 0.02 overall as a fused route, so balanced only takes candidates from it).
    "thorough": QueryConfig(
        k=20, vector_k=100, fulltext_k=100, rrf_k=60, max_state_facts=40, budget_tokens=4000, unit_seeds=5, wide_items=20, facts_weight=0.3,
        facts_fulltext=True, ranker=None, exchange_fulltext=False, exchange_vector=False, window_before=2, state_share=0.05,
    ),
}
# The preset names as a type, for the API's and MCP's schemas (the CLI offers ``list(PRESETS)``).
PresetName = Literal["fast", "balanced", "thorough"]
if set(get_args(PresetName)) != set(PRESETS):  # one list of names: a preset added above must be named here
    raise AssertionError(f"PresetName {get_args(PresetName)} does not name the presets {list(PRESETS)}")
