"""An invented corpus of agent trajectories (43 lines of the ``trajectories`` format), generated
deterministically, for skill mining. Two task families in one scope, several ways of doing each:

deploy the web service (22)
    canary      run_tests, build_image, push_image, apply_manifest(strategy=canary),
                check_health(target=canary), promote_canary: 9 of 10 succeed (some retry the
                health check, some post to a channel on the way; the failure stops before
                promoting). The skill.
    big bang    build_image, push_image, apply_manifest(strategy=all), check_health(target=all):
                2 of 7 succeed, one scores 0.4. Not a skill.
    no tests    canary without run_tests: 1 of 5 succeeds. Its one success is a subsequence of
                the canary way, so it is the canary way described less fully: not a skill.
rotate the API key (21)
    restart     create_key, update_secret, restart_pods, verify_auth, revoke_key: works until
                mid-May 2025 (6 successes), then fails 5 times (pods stopped re-reading secrets
                on restart). A skill that retires.
    reload      create_key, update_secret, reload_config(mode=rolling), verify_auth, revoke_key:
                from mid-May, 6 of 6. The skill that takes over.
    revoke first  revoke_key, create_key, update_secret, verify_auth: 4 failures. Not a skill.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SCOPE = "ops"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)

DEPLOY_TASKS = ("deploy the web service to staging", "deploy web service release {n}.{m}", "Deploy the web service (hotfix {n})", "deploy the web service to production")
ROTATE_TASKS = ("rotate the API key for billing", "rotate the API key for payments", "rotate the API key for search")


def _step(action: str, observation: str, **args: Any) -> dict[str, Any]:
    return {"action": action, "args": args, "observation": observation}


def _deploy(way: str, i: int, ok: bool | float) -> tuple[str, list[dict[str, Any]]]:
    tag = f"v1.{i}.{i % 3}"
    task = DEPLOY_TASKS[i % len(DEPLOY_TASKS)].format(n=i + 2, m=i % 4)
    healthy = "error rate 0.1%, p99 180 ms" if ok else "error rate 4.2%, p99 900 ms"
    steps = []
    if way != "no_tests":
        steps.append(_step("run_tests", f"{200 + i} passed", suite="all"))
    steps += [_step("build_image", f"built web:{tag}", tag=tag), _step("push_image", "pushed", tag=tag)]
    if way == "big_bang":
        steps += [_step("apply_manifest", "rolled out to 12 of 12 pods", strategy="all", tag=tag), _step("check_health", healthy, target="all")]
        return task, steps
    if way == "canary" and i % 4 == 1:
        steps.append({"tool": "post_message", "args": {"channel": "deploys"}, "observation": "posted"})
    steps.append(_step("apply_manifest", "rolled out to 1 of 12 pods", strategy="canary", tag=tag))
    steps.append(_step("check_health", healthy if ok or i % 2 else "warming up", target="canary"))
    if i % 3 == 0:  # a retry: the same check again, collapsed by the miner
        steps.append(_step("check_health", healthy, target="canary"))
    if ok:
        steps.append(_step("promote_canary", "12 of 12 pods on the new image"))
    return task, steps


def _rotate(way: str, i: int, ok: bool) -> tuple[str, list[dict[str, Any]]]:
    service = ("billing", "payments", "search")[i % 3]
    task = ROTATE_TASKS[i % 3]
    key = f"key_{i:04d}"
    create = _step("create_key", f"created {key}", service=service, key_id=key)
    update = _step("update_secret", "secret updated", name=f"{service}-api-key")
    revoke = _step("revoke_key", "old key revoked", service=service)
    verify = _step("verify_auth", "200 OK" if ok else "401 Unauthorized", service=service)
    if way == "restart":
        return task, [create, update, _step("restart_pods", "restarted 4 pods", service=service), verify, *([revoke] if ok else [])]
    if way == "reload":
        return task, [create, update, _step("reload_config", "reloaded 4 pods", service=service, mode="rolling"), verify, revoke]
    return task, [revoke, create, update, verify]


def _plan() -> list[tuple[str, int, str, bool | float]]:
    """(family, index in the family, way, outcome), in time order."""
    deploy = (
        [("canary", True)] * 3 + [("big_bang", False), ("no_tests", False), ("canary", True), ("big_bang", True)]
        + [("no_tests", False), ("canary", False), ("big_bang", False), ("canary", True), ("no_tests", True)]
        + [("big_bang", 0.4), ("canary", True), ("no_tests", False), ("big_bang", False), ("canary", True)]
        + [("big_bang", True), ("canary", True), ("no_tests", False), ("big_bang", False), ("canary", True)]
    )  # fmt: skip
    rotate = (
        [("revoke_first", False), ("restart", True), ("restart", True), ("revoke_first", False), ("restart", True)]
        + [("restart", True), ("revoke_first", False), ("restart", True), ("restart", True), ("revoke_first", False)]
        # Mid-May 2025: the pods stop re-reading secrets on restart.
        + [("restart", False), ("reload", True), ("restart", False), ("reload", True), ("reload", True)]
        + [("restart", False), ("reload", True), ("restart", False), ("reload", True), ("restart", False), ("reload", True)]
    )  # fmt: skip
    plan: list[tuple[str, int, str, bool | float]] = []  # (family, index in it, way, outcome)
    for i in range(max(len(deploy), len(rotate))):
        if i < len(deploy):
            plan.append(("deploy", i, *deploy[i]))
        if i < len(rotate):
            plan.append(("rotate", i, *rotate[i]))
    return plan


def corpus() -> list[dict[str, Any]]:
    """The trajectories, one dict per line, in time order (three and a half days apart)."""
    out = []
    for n, (family, i, way, ok) in enumerate(_plan()):
        task, steps = (_deploy if family == "deploy" else _rotate)(way, i, ok)  # type: ignore[arg-type]
        outcome: str | float = ok if isinstance(ok, float) else ("success" if ok else "failure")
        out.append(
            {
                "task": task,
                "steps": steps,
                "outcome": outcome,
                "valid_at": (T0 + timedelta(hours=84 * n)).isoformat(),
                "trajectory_id": f"{family}-{way}-{n:02d}",
                "agent": "opsbot",
            }
        )
    return out


def write_corpus(path: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in (corpus() if rows is None else rows)))
    return path
