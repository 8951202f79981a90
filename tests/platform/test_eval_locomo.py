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
    data.mkdir()
    (data / "conversations.jsonl").write_text("".join(
        json.dumps({"conversation_id": "c1", "session_id": f"c1:{s}", "turn_id": t, "speaker": who, "text": text, "timestamp": ts}) + "\n"
        for s, t, who, text, ts in TURNS
    ))  # fmt: skip
    (data / "questions.jsonl").write_text("".join(
        json.dumps({"conversation_id": "c1", "question_id": q, "question": text, "evidence": ev, "category": cat, "answer": ""}) + "\n"
        for q, text, ev, cat in QUESTIONS
    ))  # fmt: skip
    out = tmp_path / "run.jsonl"
    res = CliRunner().invoke(cli, ["eval", "locomo", str(data), "--budget", "60,2000", "--out", str(out), "--json"], obj={})
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
        assert [json.loads(line)["question_id"] for line in lines] == [q for q, *_ in QUESTIONS]
    bad = CliRunner().invoke(cli, ["eval", "locomo", str(data), "--budget", "lots"], obj={})
    assert bad.exit_code != 0 and "--budget" in bad.output
