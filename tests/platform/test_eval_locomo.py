"""`memc eval locomo` at equal budget: one build per conversation, every question compiled at
each budget of a sweep, the recall of the whole context reported beside R@k, one run file per
budget. On a small conversation written here in LoCoMo's format (the real data stays in
../shared and is never copied)."""

from __future__ import annotations

import json

from click.testing import CliRunner

TURNS = [
    ("S1", "D1:1", "Elena", "Hi Tomasz! I moved to Lisbon last spring and I love the light here.", "2023-05-08T13:56:00"),
    ("S1", "D1:2", "Tomasz", "Lisbon sounds lovely. I have been painting a lot, mostly harbours.", "2023-05-08T13:57:00"),
    ("S1", "D1:3", "Elena", "I started a pottery class on Tuesdays, my first bowl cracked.", "2023-05-08T13:58:00"),
    ("S1", "D1:4", "Tomasz", "Ha, mine would too. My sister Ana is visiting in June.", "2023-05-08T13:59:00"),
    ("S2", "D2:1", "Elena", "Big news: I moved to Berlin for a job at Helio Labs!", "2023-09-02T10:00:00"),
    ("S2", "D2:2", "Tomasz", "Congrats! Berlin in autumn is great. Ana loved her trip to Lisbon.", "2023-09-02T10:01:00"),
    ("S2", "D2:3", "Elena", "I still do pottery, the Berlin studio is near my flat.", "2023-09-02T10:02:00"),
    ("S2", "D2:4", "Tomasz", "I finished a painting of the Porto bridge last week.", "2023-09-02T10:03:00"),
]
QUESTIONS = [
    ("q1", "Where does Elena live now?", ["D2:1"], 4),
    ("q2", "What class did Elena start?", ["D1:3"], 4),
    ("q3", "Which cities has Elena lived in?", ["D1:1", "D2:1"], 1),
]


def test_eval_locomo_sweeps_budgets_over_one_build(tmp_path):
    from cli.main import cli

    data = tmp_path / "data"
    write_conversations(data, {"c1": {}})
    out = tmp_path / "run.jsonl"
    homes = tmp_path / "homes"
    res = CliRunner().invoke(cli, ["eval", "locomo", str(data), "--budget", "60,2000", "--out", str(out), "--work-dir", str(homes), "--json"], obj={})
    assert res.exit_code == 0, res.output
    sweep = json.loads(res.output[res.output.index("{") :])["sweep"]
    small, large = sweep
    assert (small["budget"], large["budget"]) == (60, 2000)
    assert small["questions"] == large["questions"] == len(QUESTIONS)
    assert small["build_seconds"] == large["build_seconds"], "one build serves every budget"
    for r in sweep:
        overall = r["recall"]["overall"]
        assert overall["context"] >= overall["R@1"], "the whole context holds at least its first item"
        assert r["median_tokens"] <= r["budget"]
    assert large["recall"]["overall"]["context"] >= small["recall"]["overall"]["context"]
    assert large["recall"]["overall"]["context"] > 0
    for b in (60, 2000):
        lines = (tmp_path / f"run.b{b}.jsonl").read_text().splitlines()
        assert [json.loads(line)["question_id"] for line in lines] == [f"c1:{q}" for q, *_ in QUESTIONS]
    bad = CliRunner().invoke(cli, ["eval", "locomo", str(data), "--budget", "lots"], obj={})
    assert bad.exit_code != 0 and "--budget" in bad.output

    # --reuse-homes asks the built homes again without building: the same contexts, no build seconds.
    again = CliRunner().invoke(cli, ["eval", "locomo", str(data), "--budget", "60,2000", "--work-dir", str(homes), "--reuse-homes", "--json"], obj={})
    assert again.exit_code == 0, again.output
    reused = json.loads(again.output[again.output.index("{") :])["sweep"]
    assert [r["build_seconds"] for r in reused] == [{}, {}]
    assert [r["recall"] for r in reused] == [r["recall"] for r in sweep]
    # --set changes QueryConfig fields: without windows every item shows its hit alone, where the
    # defaults' first items show the turns around it.
    assert any(len(item) > 1 for line in (tmp_path / "run.b2000.jsonl").read_text().splitlines() for item in json.loads(line)["retrieved"])
    bare = tmp_path / "bare.jsonl"
    narrow = CliRunner().invoke(
        cli, ["eval", "locomo", str(data), "--work-dir", str(homes), "--reuse-homes", "--out", str(bare),
              "--set", "window_before=0", "--set", "window_after=0", "--set", "narrow_after=0", "--json"], obj={},
    )  # fmt: skip
    assert narrow.exit_code == 0, narrow.output
    assert json.loads(narrow.output[narrow.output.index("{") :])["build_seconds"] == {}
    items = [item for line in bare.read_text().splitlines() for item in json.loads(line)["retrieved"]]
    assert items and all(len(item) == 1 for item in items)
    for wrong in (["--set", "no_such_field=1"], ["--set", "k=none"], ["--reuse-homes"]):
        args = ["eval", "locomo", str(data), *wrong] + (["--work-dir", str(homes)] if wrong[0] == "--set" else [])
        refused = CliRunner().invoke(cli, args, obj={})
        assert refused.exit_code != 0 and wrong[0] in refused.output, refused.output


def write_conversations(data, convs: dict[str, dict[str, str]]) -> None:
    """TURNS and QUESTIONS once per conversation id, each with its own names (``renames``)."""

    def said(text: str, renames: dict[str, str]) -> str:
        for old, new in renames.items():
            text = text.replace(old, new)
        return text

    data.mkdir()
    (data / "conversations.jsonl").write_text("".join(
        json.dumps({"conversation_id": c, "session_id": f"{c}:{s}", "turn_id": t, "speaker": said(who, r), "text": said(text, r), "timestamp": ts}) + "\n"
        for c, r in convs.items() for s, t, who, text, ts in TURNS
    ))  # fmt: skip
    (data / "questions.jsonl").write_text("".join(
        json.dumps({"conversation_id": c, "question_id": f"{c}:{q}", "question": said(text, r), "evidence": ev, "category": cat, "answer": ""}) + "\n"
        for c, r in convs.items() for q, text, ev, cat in QUESTIONS
    ))  # fmt: skip


def test_eval_ranker_cross_validates_over_conversations_and_writes_a_ranker_the_compiler_uses(tmp_path):
    from cli.main import cli
    from query.rerank import FEATURES, load_ranker

    data = tmp_path / "data"
    write_conversations(data, {"c1": {}, "c2": {"Elena": "Mira", "Tomasz": "Jonas", "Lisbon": "Porto", "Berlin": "Vienna"}})
    homes, out = tmp_path / "homes", tmp_path / "ranker-t.json"
    res = CliRunner().invoke(cli, ["eval", "ranker", str(data), "--out", str(out), "--budget", "2000", "--work-dir", str(homes), "--set", "k=20", "--json"], obj={})
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[res.output.index("{") :])
    assert report["conversations"] == ["c1", "c2"] and report["questions"] == 2 * len(QUESTIONS)
    assert 0 < report["positives"] < report["candidates"]
    fused, ranked = report["cross_validated"]["2000"]["fused"], report["cross_validated"]["2000"]["ranked"]
    assert 0 < fused["overall"] <= 1 and 0 < ranked["overall"] <= 1
    written = json.loads(out.read_text())
    assert written["fitted"]["conversations"] == 2 and written["ranker"]["features"] == list(FEATURES)
    assert not any(isinstance(v, list) for v in written["fitted"].values()), "counts only: no conversation id is kept with the coefficients"
    assert written["fitted"]["settings"] == {"k": 20}  # what it was fitted with, as validated: compile with the same
    assert load_ranker(str(out)).name == "ranker-t"

    # the written ranker orders a compile's hits, and the plan names it
    again = CliRunner().invoke(cli, ["eval", "locomo", str(data), "--work-dir", str(homes), "--reuse-homes", "--set", f"ranker={out}", "--json"], obj={})
    assert again.exit_code == 0, again.output
    plans = [json.loads(line).get("plan", {}).get("steps", []) for log in (homes / "c1" / "querylog").glob("*.jsonl") for line in log.read_text().splitlines()]
    assert any(step["step"] == "rerank" and step["ranker"] == "ranker-t" for steps in plans for step in steps)

    # one conversation cannot be cross-validated
    single = tmp_path / "single"
    write_conversations(single, {"c1": {}})
    refused = CliRunner().invoke(cli, ["eval", "ranker", str(single), "--out", str(tmp_path / "x.json"), "--work-dir", str(homes), "--reuse-homes"], obj={})
    assert refused.exit_code != 0 and "at least two" in refused.output
    unknown = CliRunner().invoke(cli, ["eval", "ranker", str(data), "--out", str(tmp_path / "x.json"), "--set", "colour=red"], obj={})
    assert unknown.exit_code != 0 and "--set" in unknown.output
    assert not (tmp_path / "x.json").exists()
