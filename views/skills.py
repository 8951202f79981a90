"""Procedural memory: skills mined from the trajectories in the ledger (ingestion's
``trajectories`` format), so that an agent asked to do a task again can be told how it was done
before, and how well that went.

1. **Task families.** Trajectories of one scope whose tasks share most of their words are one
   family ("deploy the web service to staging" and "deploy web service release 4.2"). Words,
   not MiniLM vectors: a task is a short imperative phrase whose verb and object carry the
   family, and a word set makes the trigger something a reader can check (the words a goal must
   contain), costs no model load in the build or in each compile, and gives the same families
   on every machine. What it misses is a paraphrase sharing no words ("ship the site"); the
   embedder (views/embedder.py) is the upgrade if that matters more than explainability.
2. **Candidates.** A step is its action and its arguments normalised (``step_key``); repeated
   identical steps (retries) count once. The step sequences of the family's successful
   trajectories, and the longest common subsequence of each pair of them (the shared core when
   each success has steps of its own), are the candidates. A trajectory *follows* a candidate
   when the candidate's steps up to its last (the termination) occur in it in order (other
   steps may come between): a failed attempt often stops short of the last step, and it
   must count against the way it tried, not vanish from it.
3. **The gate.** A candidate becomes a skill when at least ``MIN_SUPPORT`` trajectories followed
   it and their mean score exceeds that of at least ``MIN_CONTRAST`` trajectories of the same
   family that did not, by ``MARGIN`` or more: a way of doing the task is a skill only when it
   did better than the other ways tried. The family's trajectories are replayed in time order:
   a candidate is promoted at the first trajectory after which the gate holds; from then on,
   its last ``WINDOW`` followers are held to the gate against everyone else so far, and the
   first time they fall short it retires (kept, with status ``retired``, never shown again: a
   way that stopped working is not brought back by old successes).
4. **One way, one skill.** Within a family, skills are taken best first (active, then lift:
   followers' rate minus the others', then support, length); a candidate whose steps are a subsequence or supersequence of a
   skill already taken is the same way described more or less fully, and is dropped.

Visibility: a skill's numbers come from its followers and the trajectories it was compared
with, so it is seen only by those who may see all of them (:func:`memc.visibility.meet`). So
that one private trajectory does not hide a family's skills from everyone else, a scope is
mined once per *audience* (each distinct visibility among its trajectories), over the
trajectories that whole audience may see; skills found alike by two audiences have one id.

The view is rebuilt whole from the ledger, so an erased trajectory takes the skills it
supported with it at the erasure's rebuild.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from claims.nlp import lemma, split_words
from ingestion.formats.trajectories import stored_trajectory
from memc.atomic import read_parquet, write_parquet
from memc.filecache import cached
from memc.home import MemcHome
from memc.ids import content_id
from memc.visibility import PUBLIC, may_see, meet
from views.audit import Audit

# Bump when mining changes: the asset's code version.
SKILLS_VERSION = "skills-2"  # 2: task words as lemmas
SKILLS_FILE = "skills.parquet"

# The gate. Three followers is the least that is more than a coincidence of two; a margin of a
# quarter of the score scale is one success in four more than the other ways.
MIN_SUPPORT = 3
MIN_CONTRAST = 2  # trajectories of the family that did not follow: without them nothing was compared
MARGIN = 0.25
WINDOW = 5  # a promoted skill is judged on its last WINDOW followers
SUCCESS = 0.5  # a trajectory scoring this or more is a success (outcome "success" scores 1)
MIN_STEPS = 2  # one action is a tool, not a procedure

FAMILY_SIMILARITY = 0.5  # Jaccard of task words at which a task joins a family
TRIGGER_SHARE = 0.5  # a word is in the trigger when at least this share of the family's tasks use it
MATCH = 0.75  # share of the trigger's words a goal must contain to match (2 of 3 does not)
MAX_PAIRS_OF = 40  # the most recent successes paired for common subsequences (40 -> 780 pairs)

# Words that never tell one task from another (function words, and the requests' own: "please",
# "again", "new", "using", "via").
_STOP = frozenset(
    "a an the to of for and or in on at by with from into onto our my your their its this that these those "
    "is are be was were do does did how what please again new using via".split()
)
def _content_words(text: str) -> list[str]:
    return [w for w in split_words(text) if w not in _STOP]


def task_words(text: str) -> frozenset[str]:
    """The content words of a task or goal, as lemmas ("rotating" and "rotated" are "rotate"),
    looked up in the extractor's table (claims/nlp.py: spacy-lookups-data, no spaCy pipeline):
    lower-cased, without stop words and without tokens holding digits (versions, ticket numbers
    vary between runs of one task)."""
    return frozenset(lemma(w) for w in _content_words(text))


def _arg_value(v: Any, task: frozenset[str]) -> str:
    # Values that choose a method (strategy=canary, mode=rolling) are kept; values that name
    # this run's instance become "*": versions, ids, counts, long text, and words of the task
    # itself (service=billing for "rotate the API key for billing").
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        s = " ".join(v.lower().split())
        if s and len(s) <= 40 and not any(c.isdigit() for c in s) and not task_words(s) & task:
            return s
    return "*"


def step_key(action: str, args: dict[str, Any] | None = None, task: frozenset[str] = frozenset()) -> str:
    """A step, normalised (``task``: the words of the trajectory's task):
    ``apply_manifest(strategy=canary, tag=*)``."""
    inner = ", ".join(f"{k}={_arg_value(v, task)}" for k, v in sorted((args or {}).items()))
    return f"{' '.join(action.lower().split())}({inner})"


@dataclass(frozen=True)
class TrajectoryRecord:
    """One trajectory as mining reads it from its ledger entry."""

    entry_id: str
    seq: int
    scope: str
    valid_at: datetime
    visibility: tuple[str, ...]
    task: str
    steps: tuple[str, ...]  # step keys, retries collapsed
    score: float

    @property
    def succeeded(self) -> bool:
        return self.score >= SUCCESS


def records_from_rows(rows: Iterable[dict[str, Any]]) -> list[TrajectoryRecord]:
    """Ledger rows (entry_id, seq, kind, scope, valid_at, visibility, attributes JSON) -> the
    trajectories among them. Erased entries are stubs of kind "erasure", so never read here."""
    out = []
    for r in rows:
        if r.get("kind") != "event" or not r.get("attributes"):
            continue
        try:
            attrs = json.loads(r["attributes"])
        except (TypeError, ValueError):
            continue
        t = stored_trajectory(attrs if isinstance(attrs, dict) else None)
        if t is None:
            continue
        keys: list[str] = []
        words = task_words(t.task)
        for s in t.steps:
            k = step_key(s.name, s.args, words)
            if not keys or keys[-1] != k:
                keys.append(k)
        out.append(
            TrajectoryRecord(
                entry_id=r["entry_id"], seq=int(r["seq"]), scope=r["scope"], valid_at=r["valid_at"],
                visibility=tuple(r["visibility"] or ()), task=t.task, steps=tuple(keys), score=t.score,
            )
        )  # fmt: skip
    return out


def event_rows(ledger: Any) -> tuple[list[dict[str, Any]], int]:
    """The ledger's events (the one kind a trajectory is) as the rows records_from_rows reads,
    and the ledger head read. Only they become dicts: every entry with its times as datetimes
    was ~1 s of the skills check at 100k entries."""
    table = ledger.read(["seq", "entry_id", "kind", "scope", "valid_at", "visibility", "attributes"])
    head = max(table.column("seq").to_pylist(), default=0)
    return table.filter(pc.equal(table.column("kind"), "event")).to_pylist(), head


def read_trajectories(ledger: Any) -> tuple[list[TrajectoryRecord], int]:
    """Every trajectory in the ledger (as the administrator sees it) and the ledger head read."""
    events, head = event_rows(ledger)
    return records_from_rows(events), head


# ------------------------------------------------------------------------------ families


@dataclass
class Family:
    scope: str
    members: list[TrajectoryRecord] = field(default_factory=list)
    leader: frozenset[str] = frozenset()

    @property
    def trigger(self) -> tuple[str, ...]:
        """The words used by at least TRIGGER_SHARE of the family's tasks, most used first, each
        as the tasks spell it most often (matching compares their lemmas)."""
        counts = Counter(w for t in self.members for w in task_words(t.task))
        spelt = Counter(w for t in self.members for w in _content_words(t.task))
        need = TRIGGER_SHARE * len(self.members)
        kept = sorted((w for w, n in counts.items() if n >= need), key=lambda w: (-counts[w], w))
        return tuple(max((w for w in spelt if lemma(w) == k), key=lambda w: (spelt[w], w)) for k in kept)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def families(trajectories: Sequence[TrajectoryRecord]) -> list[Family]:
    """Leader clustering per scope: the commonest word sets lead, and each task joins the first
    family whose leader it resembles (Jaccard >= FAMILY_SIMILARITY). Linear in the families, and
    no chaining: "restart the web service" cannot pull "restart the database" in through a third."""
    out: list[Family] = []
    by_scope: dict[str, list[TrajectoryRecord]] = defaultdict(list)
    for t in trajectories:
        by_scope[t.scope].append(t)
    for scope, members in sorted(by_scope.items()):
        sets = Counter(task_words(t.task) for t in members)
        leaders: list[Family] = []
        family_of: dict[frozenset[str], Family] = {}
        for words, _ in sorted(sets.items(), key=lambda kv: (-kv[1], sorted(kv[0]))):
            home = next((f for f in leaders if jaccard(words, f.leader) >= FAMILY_SIMILARITY), None)
            if home is None:
                home = Family(scope=scope, leader=words)
                leaders.append(home)
            family_of[words] = home
        for t in members:
            family_of[task_words(t.task)].members.append(t)
        for f in leaders:
            f.members.sort(key=_time_order)
        out += leaders
    return out


def _time_order(t: TrajectoryRecord) -> tuple:
    return (t.valid_at, t.seq, t.entry_id)


# ------------------------------------------------------------------------------ candidates


def is_subsequence(needle: Sequence[str], hay: Sequence[str]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


def lcs(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    """The longest common subsequence (dynamic programming; steps are few)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    out, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append(a[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def candidates(family: Family) -> list[tuple[str, ...]]:
    wins = [t for t in family.members if t.succeeded]
    found = {t.steps for t in wins}
    recent = [t.steps for t in wins[-MAX_PAIRS_OF:]]
    for i, a in enumerate(recent):
        for b in recent[i + 1 :]:
            found.add(lcs(a, b))
    return sorted(c for c in found if len(c) >= MIN_STEPS)


def _rate(scores: Sequence[float]) -> float:
    return sum(scores) / len(scores) if scores else 0.0


def gate(followers: Sequence[float], others: Sequence[float], *, min_support: int = MIN_SUPPORT) -> bool:
    """Enough followers, enough others to compare with, and the followers did better by MARGIN."""
    return (
        len(followers) >= min_support
        and len(others) >= MIN_CONTRAST
        and _rate(followers) - _rate(others) >= MARGIN - 1e-9
    )


@dataclass(frozen=True)
class Verdict:
    status: str | None  # None (never a skill), "active" or "retired"
    promoted_at: datetime | None
    retired_at: datetime | None
    followers: tuple[TrajectoryRecord, ...]
    others: tuple[TrajectoryRecord, ...]


def follows(t: TrajectoryRecord, steps: Sequence[str]) -> bool:
    """Did ``t`` take this way? Its steps up to the last (the termination) in order, other
    steps between allowed. Whether it reached the termination is its outcome: an attempt that
    failed before promoting its canary did follow the canary way, and counts against it."""
    return is_subsequence(steps[:-1], t.steps)


def replay(members: Sequence[TrajectoryRecord], steps: Sequence[str]) -> Verdict:
    """The gate, trajectory by trajectory in time order (see the module docstring)."""
    followers: list[TrajectoryRecord] = []
    others: list[TrajectoryRecord] = []
    status, promoted_at, retired_at = None, None, None
    for t in members:
        (followers if follows(t, steps) else others).append(t)
        other_scores = [o.score for o in others]
        if status is None:
            if gate([f.score for f in followers], other_scores):
                status, promoted_at = "active", t.valid_at
        elif status == "active" and not gate([f.score for f in followers[-WINDOW:]], other_scores, min_support=0):
            status, retired_at = "retired", t.valid_at
    return Verdict(status, promoted_at, retired_at, tuple(followers), tuple(others))


# ------------------------------------------------------------------------------ skills


@dataclass(frozen=True)
class Skill:
    """One way of doing a family of tasks that worked better than the others tried."""

    skill_id: str
    scope: str
    status: str  # "active" or "retired"
    trigger: tuple[str, ...]  # the family's task words a goal must mostly contain
    example_task: str  # the latest successful follower's task
    steps: tuple[str, ...]  # normalised steps, in order
    termination: str
    support: int  # trajectories that followed it
    success_rate: float  # their mean score (success 1, failure 0)
    recent_rate: float  # over its last WINDOW followers
    baseline_rate: float  # the family's trajectories that did not follow it
    compared: int
    source_entry_ids: tuple[str, ...]  # the followers, in time order
    compared_entry_ids: tuple[str, ...]
    visibility: tuple[str, ...]
    promoted_at: datetime | None
    retired_at: datetime | None
    last_valid_at: datetime | None
    watermark: int  # highest seq among the trajectories it was computed from
    match: float = 0.0  # set by matching_skills: the share of the trigger the goal contains


def skill_id(scope: str, steps: Sequence[str], sources: Sequence[str], compared: Sequence[str]) -> str:
    return content_id("sk", scope, list(steps), sorted(sources), sorted(compared))


def _skill(family: Family, steps: tuple[str, ...], v: Verdict) -> Skill | None:
    visibility = meet(t.visibility for t in (*v.followers, *v.others))
    if not visibility:
        return None  # nobody but an administrator may see all it came from
    sources = tuple(t.entry_id for t in v.followers)
    compared = tuple(t.entry_id for t in v.others)
    wins = [t for t in v.followers if t.succeeded]
    return Skill(
        skill_id=skill_id(family.scope, steps, sources, compared),
        scope=family.scope,
        status=v.status or "",
        trigger=family.trigger,
        example_task=(wins or list(v.followers))[-1].task,
        steps=steps,
        termination=f"after {steps[-1]}, the outcome is success (or a score of at least {SUCCESS:g})",
        support=len(v.followers),
        success_rate=round(_rate([t.score for t in v.followers]), 4),
        recent_rate=round(_rate([t.score for t in v.followers[-WINDOW:]]), 4),
        baseline_rate=round(_rate([t.score for t in v.others]), 4),
        compared=len(v.others),
        source_entry_ids=sources,
        compared_entry_ids=compared,
        visibility=tuple(visibility),
        promoted_at=v.promoted_at,
        retired_at=v.retired_at,
        last_valid_at=v.followers[-1].valid_at if v.followers else None,
        watermark=max(t.seq for t in (*v.followers, *v.others)),
    )


def _lift(v: Verdict) -> float:
    return round(_rate([t.score for t in v.followers]) - _rate([t.score for t in v.others]), 9)


def mine_family(family: Family) -> list[Skill]:
    judged = []
    for steps in candidates(family):
        v = replay(family.members, steps)
        if v.status is not None:
            judged.append((steps, v))
    judged.sort(key=lambda sv: (sv[1].status != "active", -_lift(sv[1]), -len(sv[1].followers), -len(sv[0]), sv[0]))
    taken: list[tuple[str, ...]] = []
    out = []
    for steps, v in judged:
        if any(is_subsequence(steps, s) or is_subsequence(s, steps) for s in taken):
            continue  # the same way, described more or less fully
        skill = _skill(family, steps, v)
        if skill is not None:
            taken.append(steps)
            out.append(skill)
    return out


def mine_skills(trajectories: Sequence[TrajectoryRecord]) -> list[Skill]:
    """The skills of one pool of trajectories (as one audience sees them), active and retired."""
    return [s for f in families(trajectories) for s in mine_family(f)]


def audiences(trajectories: Sequence[TrajectoryRecord]) -> list[tuple[str, ...]]:
    return sorted({tuple(sorted(t.visibility)) for t in trajectories})


def mine_all(trajectories: Sequence[TrajectoryRecord]) -> list[Skill]:
    """Every audience's skills (see the module docstring), one row per id, by scope and family."""
    by_id: dict[str, Skill] = {}
    for audience in audiences(trajectories):
        pool = [t for t in trajectories if all(may_see(p, t.visibility) for p in audience if p != PUBLIC) and (PUBLIC in t.visibility or PUBLIC not in audience)]
        for s in mine_skills(pool):
            by_id.setdefault(s.skill_id, s)
    return sorted(by_id.values(), key=lambda s: (s.scope, s.trigger, s.status, s.skill_id))


# ------------------------------------------------------------------------------ the view

TS = pa.timestamp("us", tz="UTC")

SKILLS_SCHEMA = pa.schema(
    [
        pa.field("skill_id", pa.string(), nullable=False),  # content hash of scope, steps, sources, compared
        pa.field("scope", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("trigger", pa.list_(pa.string()), nullable=False),
        pa.field("example_task", pa.string()),
        pa.field("steps", pa.list_(pa.string()), nullable=False),
        pa.field("termination", pa.string()),
        pa.field("support", pa.int64(), nullable=False),
        pa.field("success_rate", pa.float64(), nullable=False),
        pa.field("recent_rate", pa.float64(), nullable=False),
        pa.field("baseline_rate", pa.float64(), nullable=False),
        pa.field("compared", pa.int64(), nullable=False),
        pa.field("source_entry_ids", pa.list_(pa.string()), nullable=False),
        pa.field("compared_entry_ids", pa.list_(pa.string()), nullable=False),
        pa.field("visibility", pa.list_(pa.string()), nullable=False),
        pa.field("promoted_at", TS),
        pa.field("retired_at", TS),
        pa.field("last_valid_at", TS),
        pa.field("watermark", pa.int64(), nullable=False),
    ]
)

_LIST_FIELDS = ("trigger", "steps", "source_entry_ids", "compared_entry_ids", "visibility")


def skills_table(skills: Sequence[Skill]) -> pa.Table:
    rows = []
    for s in skills:
        row = {name: getattr(s, name) for name in SKILLS_SCHEMA.names}
        rows.append({k: list(v) if k in _LIST_FIELDS else v for k, v in row.items()})
    return pa.Table.from_pylist(rows, schema=SKILLS_SCHEMA)


def skills_from_table(table: pa.Table) -> list[Skill]:
    return [Skill(**{k: tuple(v) if k in _LIST_FIELDS else v for k, v in r.items()}) for r in table.to_pylist()]


def build_skills(home: MemcHome, ledger: Any) -> dict[str, Any]:
    """Mine the ledger's trajectories and write ``<home>/skills/skills.parquet``."""
    trajectories, head = read_trajectories(ledger)
    skills = mine_all(trajectories)
    path = home.skills / SKILLS_FILE
    write_parquet(skills_table(skills), path)
    return {
        "skills": sum(s.status == "active" for s in skills),
        "retired": sum(s.status == "retired" for s in skills),
        "trajectories": len(trajectories),
        "families": len(families(trajectories)),
        "ledger_watermark": head,
        "path": str(path),
    }


def load_skills(home: MemcHome) -> list[Skill] | None:
    """The last built skills (None when none were built), read once per version of the file."""
    path = home.skills / SKILLS_FILE
    return cached("skills", [path], lambda: skills_from_table(read_parquet(path)))


def matching_skills(home: MemcHome, text: str, asker: str, scope: str | None = None, *, limit: int = 3) -> list[Skill]:
    """The active skills ``asker`` may see (in ``scope``, when given) whose trigger the question
    or goal ``text`` matches: it contains at least MATCH of the trigger's words. Best match
    first, then success rate and support; one skill per way (the same steps found by two
    audiences: the one with more support). Empty when the view was never built.

    The compiler should still pass each skill's ``source_entry_ids`` through its ledger check
    (query/acl.py): an erasure whose rebuild has not run yet names them."""
    words: frozenset[str] | None = None  # only once a skill may match: the lemmas' table loads in ~0.1 s
    out: dict[tuple[str, tuple[str, ...]], Skill] = {}
    for s in load_skills(home) or []:
        if s.status != "active" or (scope is not None and s.scope != scope) or not may_see(asker, s.visibility):
            continue
        trigger = {lemma(w) for w in s.trigger}
        if not trigger:
            continue
        words = task_words(text) if words is None else words
        share = len(words & trigger) / len(trigger)
        if share < MATCH:
            continue
        s = Skill(**{**s.__dict__, "match": round(share, 4)})
        key = (s.scope, s.steps)
        if key not in out or (s.support, s.success_rate) > (out[key].support, out[key].success_rate):
            out[key] = s
    ranked = sorted(out.values(), key=lambda s: (-s.match, -s.success_rate, -s.support, s.skill_id))
    return ranked[:limit]


def skills_sound(skills: pa.Table, ledger_rows: Iterable[dict[str, Any]]) -> Audit:
    """Every skill's sources and compared trajectories are trajectories in the ledger, visible to
    every reader the skill's visibility admits; its id is the hash of what it says; it passed
    the gate's support; its status is active or retired."""
    by_id = {r["entry_id"]: r for r in ledger_rows}
    trajectories = {t.entry_id: t for t in records_from_rows(by_id.values())}
    problems = []
    for s in skills_from_table(skills):
        if skill_id(s.scope, s.steps, s.source_entry_ids, s.compared_entry_ids) != s.skill_id:
            problems.append(f"skill {s.skill_id}: id is not the hash of its scope, steps and trajectories")
        if s.status not in ("active", "retired"):
            problems.append(f"skill {s.skill_id}: status {s.status!r}")
        if s.support != len(s.source_entry_ids) or s.support < MIN_SUPPORT:
            problems.append(f"skill {s.skill_id}: support {s.support} for {len(s.source_entry_ids)} sources")
        readers = [p for p in s.visibility]
        for e in (*s.source_entry_ids, *s.compared_entry_ids):
            t = trajectories.get(e)
            if t is None:
                problems.append(f"skill {s.skill_id}: {e} is not a trajectory in the ledger")
                continue
            if t.scope != s.scope:
                problems.append(f"skill {s.skill_id}: {e} is in scope {t.scope}")
            hidden = [p for p in readers if not (PUBLIC in t.visibility if p == PUBLIC else may_see(p, t.visibility))]
            if hidden:
                problems.append(f"skill {s.skill_id}: {e} is not visible to {', '.join(hidden)}")
    return Audit.of(problems, skills=skills.num_rows, active=sum(1 for v in skills.column("status").to_pylist() if v == "active"))
