"""Packing a context into its token budget: state facts up to their share, then evidence items
in rank order, an item that does not fit shown with a narrower window.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterator

from query.context import NO_EVIDENCE, Context, ContextItem, item_lines, mixed_scopes, skill_lines, state_line
from query.plan import PlanRecorder
from query.tokens import count_tokens, prime


def pack(
    ctx: Context, budget: int, state_share: float, relevance_floor: float = 0.0, recorder: PlanRecorder | None = None, *, keep_first: bool = False
) -> None:
    """Keep the state facts up to their share, then the evidence items, then the facts the share
    left out, that fit the token budget, each in rank order. An item whose window does not fit
    is shown with a narrower one (down to the hit alone) rather than dropped: on LoCoMo dev this
    packs 9 items into 2,000 tokens instead of 8, and lifts evidence recall@10 0.835 -> 0.842
    (multi-hop 0.500 -> 0.528).

    ``relevance_floor``: items that reached less than that share of the best score on every route
    that found them (``ContextItem.relevance``) are not packed at all (QueryConfig.relevance_floor),
    so the context may end short of the budget.

    ``keep_first``: the first state fact is the current value of a predicate the question asks
    for (query/compile.py), kept whenever the budget holds it, whatever ``state_share`` leaves.
    The rendering keeps the facts' rank order whichever pass kept them.

    ``recorder``: the compile's plan gets three steps, the cut by the floor, the cut by the
    budget (with the items shown narrower) and what was packed, each item with its tokens."""
    recorder = recorder or PlanRecorder()
    show_scope = mixed_scopes(ctx.state)
    # Every line counted below, in one call of the tokenizer: each item above the floor at the
    # place it would take if every item before it were kept (a narrower form's turns are among
    # its lines).
    prime(
        [
            *ctx.header(), "What holds now:", "Evidence:", NO_EVIDENCE, "How this was done before:",
            *(state_line(f, ctx.asker, show_scope=show_scope) for f in ctx.state),
            *(line for sk in ctx.skills for line in skill_lines(sk)),
            *(line for i, it in enumerate(ctx.items, 1) if it.relevance >= relevance_floor for line in item_lines(i, it, ctx.asker)),
        ]
    )  # fmt: skip

    # Fixed lines (header, section titles) first; then each line as it would be rendered.
    used = fixed = count_tokens("\n".join([*ctx.header(), "", "What holds now:", "", "Evidence:"]))
    below_floor, over_budget, narrowed, costs = [], [], {}, []
    kept_state, kept_items = [], []
    # Facts are dense but not all relevant: they may take at most a share of the budget, so the
    # evidence always has room; but the current value of what the question asks for is shown
    # whenever the budget holds it (``keep_first``).
    state_budget = used + int(budget * state_share)
    # Facts are counted as rendered: with their [scope] when the candidates mix scopes (if the
    # packed ones turn out to share one, the render leaves it out and the count was a few tokens
    # high, never low).

    def fact_cost(f) -> int:
        return count_tokens(state_line(f, ctx.asker, show_scope=show_scope))

    def skill_cost(sk) -> int:
        return count_tokens("\n".join(["How this was done before:", *skill_lines(sk)]))

    for f in ctx.state:
        cost = fact_cost(f)
        if used + cost > (budget if keep_first and not kept_state else min(budget, state_budget)):
            break
        kept_state.append(f)
        used += cost
    # Skills are packed like facts, within the same share: a few dense lines that stand for many
    # trajectories, and the evidence keeps its room. The first is shown whenever the budget holds
    # it, as the asked fact is: its trigger matched the question or the goal, so it is the "how"
    # they ask for (tests/platform/test_skills_view.py: its deploy did not fit a twentieth of 2,000).
    kept_skills = []
    for sk in ctx.skills:
        cost = skill_cost(sk)
        if used + cost > (budget if not kept_skills else min(budget, state_budget)):
            break
        kept_skills.append(sk)
        used += cost
    for it in ctx.items:
        if it.relevance < relevance_floor:
            below_floor.append(it.entry_id)
            continue  # no route ranked it near its best hit: not worth the reader's tokens
        for form in _narrower(it):
            cost = count_tokens("\n".join(item_lines(len(kept_items) + 1, form, ctx.asker)))
            if used + cost <= budget:
                kept_items.append(form)
                costs.append(cost)
                used += cost
                if form is not it:
                    narrowed[it.entry_id] = [len(it.entry_ids), len(form.entry_ids)]
                break
        else:
            over_budget.append(it.entry_id)
    if not kept_items:
        # The title then says so, in more tokens than the "Evidence:" counted above: what no
        # longer fits goes, skills first, then facts from the last (the asked value last).
        used += count_tokens(NO_EVIDENCE) - count_tokens("Evidence:")
        while used > budget and (kept_skills or kept_state):
            used -= skill_cost(kept_skills.pop()) if kept_skills else fact_cost(kept_state.pop())
    # Facts their share left out, in rank order, into what the evidence left: on a small home
    # the evidence does not fill the budget and every fact is shown; on a large one it does, and
    # a fact the question did not ask for costs an evidence item (LoCoMo dev, docs/context.md
    # "Facts cited by their ref, after the evidence"). Skills likewise.
    kept_state, used = _fill(ctx.state, kept_state, fact_cost, used, budget)
    kept_skills, used = _fill(ctx.skills, kept_skills, skill_cost, used, budget)
    recorder.add("cut", "relevance_floor", floor=relevance_floor, entry_ids=below_floor)
    recorder.add(
        "cut", "budget", budget=budget, state_share=state_share, state_facts=len(ctx.state) - len(kept_state),
        skills=len(ctx.skills) - len(kept_skills), entry_ids=over_budget, narrowed=narrowed,
    )  # fmt: skip
    ctx.state, ctx.skills, ctx.items = kept_state, kept_skills, kept_items
    ctx.tokens = count_tokens(ctx.render())
    recorder.add(
        "packed", state_facts=len(kept_state), skills=[sk["skill_id"] for sk in kept_skills], state_tokens=sum(map(fact_cost, kept_state)) + sum(map(skill_cost, kept_skills)),
        fixed_tokens=fixed, tokens=ctx.tokens,
        items=[{"entry_id": it.entry_id, "turns": len(it.entry_ids or [it.entry_id]), "tokens": c} for it, c in zip(kept_items, costs)],
    )  # fmt: skip


def _fill(ranked: list, kept: list, cost: Callable[[Any], int], used: int, budget: int) -> tuple[list, int]:
    """``kept`` and those of ``ranked`` not in it that fit what is left of ``budget``, in
    ``ranked``'s order; the tokens used after."""
    chosen = {id(x) for x in kept}
    for x in ranked:
        if id(x) not in chosen and used + (c := cost(x)) <= budget:
            chosen.add(id(x))
            used += c
    return [x for x in ranked if id(x) in chosen], used


def _narrower(it: ContextItem) -> Iterator[ContextItem]:
    """The item, then its window narrowed a turn at a time down to the hit alone: the turn before
    goes first (the reply after a hit more often holds the answer than the line before it)."""
    yield it
    lines = it.text.split("\n")
    if len(it.entry_ids) <= 1 or it.entry_id not in it.entry_ids or len(lines) != len(it.entry_ids):
        return
    hit = it.entry_ids.index(it.entry_id)
    before, after = hit, len(it.entry_ids) - hit - 1
    while before or after:
        if before >= after and before:
            before -= 1
        else:
            after -= 1
        lo, hi = hit - before, hit + after + 1
        writers = it.ingested_by[lo:hi] if len(it.ingested_by) == len(it.entry_ids) else []
        yield replace(it, text="\n".join(lines[lo:hi]), source_refs=it.source_refs[lo:hi], entry_ids=it.entry_ids[lo:hi], ingested_by=writers)
