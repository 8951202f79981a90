"""JSONL trajectories: one agent episode per line (a task, its ordered steps, its outcome), the
evidence procedural memory is mined from (views/skills.py).

A line::

    {"task": "deploy the web service to staging", "valid_at": "2025-03-04T10:00:00Z",
     "steps": [{"action": "run_tests", "args": {"suite": "unit"}, "observation": "212 passed"},
               {"tool": "build_image", "args": {"tag": "v1.4.2"}}],
     "outcome": "success"}

Each line becomes one ``event`` entry: a trajectory is a record of something that happened (an
agent's episode), which is what an event is; ``observation`` is one thing seen, and a new kind
would have to be taught to every reader of the ledger for no difference in how it is kept. The
content is the trajectory as readable text (task, numbered steps, outcome), so it is searchable
evidence like any other; ``attributes.trajectory`` holds the validated structure the miner reads.
Unknown keys are rejected, as in the events format: a misspelt ``visiblity`` must not publish.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Mapping

from ledger.schema import NewEntry
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError, field_validator, model_validator

from ingestion.formats.common import Source, build_entry, field_path, file_key_and_visibility, parse_time

# Bump when the stored structure changes; the miner reads the version it knows.
TRAJECTORY_VERSION = 1

TRAJECTORY_REQUIRED = ("task", "steps", "outcome")
TRAJECTORY_FIELDS = (
    "task", "steps", "outcome", "valid_at", "timestamp", "trajectory_id", "agent", "session_id",
    "visibility", "attributes", "idempotency_key",
)  # fmt: skip

MAX_STEPS = 500


class Step(BaseModel):
    """One step: the action (or tool) taken, its arguments, what came back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: StrictStr | None = Field(default=None, min_length=1, max_length=200)
    tool: StrictStr | None = Field(default=None, min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    observation: StrictStr | None = Field(default=None, max_length=20_000)

    @model_validator(mode="after")
    def _one_name(self) -> "Step":
        if (self.action is None) == (self.tool is None):
            raise ValueError("give exactly one of 'action' or 'tool'")
        return self

    @property
    def name(self) -> str:
        return self.action or self.tool or ""


class Trajectory(BaseModel):
    """What a line says about the episode (times, visibility and keys are the entry's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: StrictStr = Field(min_length=1, max_length=2_000)
    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)
    # "success", "failure", or a score in [0, 1] (a partial success, a grader's mark).
    outcome: Literal["success", "failure"] | StrictInt | StrictFloat

    @field_validator("outcome")
    @classmethod
    def _score_range(cls, v: Any) -> Any:
        if not isinstance(v, str) and not 0 <= v <= 1:
            raise ValueError("a score must lie in [0, 1]")
        return v

    @property
    def score(self) -> float:
        """1 for success, 0 for failure, else the score."""
        if isinstance(self.outcome, str):
            return 1.0 if self.outcome == "success" else 0.0
        return float(self.outcome)

    def stored(self) -> dict[str, Any]:
        """The structure kept in ``attributes.trajectory``."""
        return {
            "version": TRAJECTORY_VERSION,
            "task": self.task,
            "steps": [{"action": s.name, "args": s.args, **({"observation": s.observation} if s.observation is not None else {})} for s in self.steps],
            "outcome": self.outcome,
            "score": self.score,
        }


def is_trajectory_record(obj: Mapping[str, Any]) -> bool:
    return all(k in obj for k in TRAJECTORY_REQUIRED)


def render(t: Trajectory) -> str:
    """The verbatim content: the task, one numbered line per step, the outcome."""
    lines = [f"task: {t.task}"]
    for i, s in enumerate(t.steps, 1):
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}" for k, v in sorted(s.args.items()))
        line = f"{i}. {s.name}({args})"
        if s.observation:
            line += f" -> {s.observation}"
        lines.append(line)
    outcome = t.outcome if isinstance(t.outcome, str) else f"score {t.outcome:g}"
    lines.append(f"outcome: {outcome}")
    return "\n".join(lines)


def _validate(obj: Mapping[str, Any], source: Source, line: int) -> Trajectory:
    try:
        return Trajectory.model_validate({k: obj[k] for k in TRAJECTORY_REQUIRED})
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        field = field_path(tuple(first.get("loc") or ())) or None
        msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        if first.get("type") == "extra_forbidden":
            allowed = ", ".join(Step.model_fields) if field and field.startswith("steps[") else ", ".join(TRAJECTORY_FIELDS)
            msg = f"unknown field (allowed: {allowed})"
        elif field == "outcome":
            msg = f"expected \"success\", \"failure\" or a score in [0, 1], got {json.dumps(obj.get('outcome'))}"
        if len(errors) > 1:
            # A bad outcome shows as one error per branch of the union: count problems by field.
            others = {field_path(tuple(e.get("loc") or ())) for e in errors} - {field}
            if others:
                msg += f" (and {len(others)} more problem(s))"
        raise source.error(msg, line=line, field=field) from None


def trajectory_entry(obj: Mapping[str, Any], source: Source, line: int) -> NewEntry:
    """One trajectory line -> one ``event`` entry, content the readable trajectory."""
    unknown = sorted(k for k in obj if k not in TRAJECTORY_FIELDS)
    if unknown:
        raise source.error(f"unknown field (allowed: {', '.join(TRAJECTORY_FIELDS)})", line=line, field=unknown[0])
    for key in TRAJECTORY_REQUIRED:
        if obj.get(key) is None:
            raise source.error("missing required field", line=line, field=key)
    present = [k for k in ("valid_at", "timestamp") if obj.get(k) is not None]
    if not present:
        raise source.error("missing required field (or 'timestamp'): when the episode ran", line=line, field="valid_at")
    if len(present) > 1:
        raise source.error("give either 'valid_at' or 'timestamp', not both", line=line, field="timestamp")
    time_key = present[0]
    trajectory = _validate(obj, source, line)
    optional: dict[str, Any] = {}
    for key, target in (("trajectory_id", "source_ref"), ("agent", "actor"), ("session_id", "session_id"), ("idempotency_key", "idempotency_key")):
        value = obj.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise source.error(f"expected a string, got {type(value).__name__}", line=line, field=key)
        optional[target] = value
    attributes = obj.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise source.error("expected an object", line=line, field="attributes")
    attributes = dict(attributes or {})
    if "trajectory" in attributes:
        raise source.error("'trajectory' is where the format keeps the steps; name the attribute otherwise", line=line, field="attributes")
    attributes["trajectory"] = trajectory.stored()
    visibility = file_key_and_visibility(obj, optional, attributes, source, line, namespace="trajectory-key")
    return build_entry(
        source,
        line,
        {"valid_at": time_key, "source_ref": "trajectory_id", "actor": "agent", "content": "task"},
        kind="event",
        scope=source.scope,
        content=render(trajectory),
        valid_at=parse_time(obj[time_key], source, line=line, field=time_key),
        source_uri=source.source_uri,
        visibility=visibility,
        attributes=attributes,
        **optional,
    )


def stored_trajectory(attributes: Mapping[str, Any] | None) -> Trajectory | None:
    """The trajectory an entry's attributes hold (None when they hold none, or one this version
    cannot read): what the miner reads back, validated again since any events file could have
    written an ``attributes.trajectory`` of its own."""
    data = (attributes or {}).get("trajectory")
    if not isinstance(data, dict) or data.get("version") != TRAJECTORY_VERSION:
        return None
    try:
        return Trajectory.model_validate(
            {"task": data.get("task"), "outcome": data.get("outcome"), "steps": [{"action": s.get("action"), "args": s.get("args") or {}, "observation": s.get("observation")} for s in data.get("steps") or [] if isinstance(s, dict)]}
        )
    except (ValidationError, AttributeError):
        return None
