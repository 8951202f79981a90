"""The rule-based extractor and the validators that gate every proposal."""

from __future__ import annotations

from datetime import datetime, timezone

from claims.extract import RULES, Extractor, extract

T = datetime(2024, 5, 14, 9, 30, tzinfo=timezone.utc)


def entry(content: str, *, actor="Elena", visibility=("public",), entry_id="e_1", kind="message") -> dict:
    return {
        "seq": 1,
        "entry_id": entry_id,
        "kind": kind,
        "scope": "team",
        "actor": actor,
        "content": content,
        "valid_at": T,
        "recorded_at": T,
        "source_ref": "ET2:1",
        "visibility": list(visibility),
        "confidence": 1.0,
        "attributes": None,
    }


def test_rules_extract_typed_claims_with_verbatim_quotes():
    r = extract([entry("Big news: I moved to Berlin last month! I started working at Helio Labs.")], RULES)
    got = {(c["subject"], c["predicate"], c["object"]) for c in r.claims.to_pylist()}
    assert got == {("Elena", "lives_in", "Berlin"), ("Elena", "works_at", "Helio Labs")}
    for c in r.claims.to_pylist():
        assert c["quote"] in "Big news: I moved to Berlin last month! I started working at Helio Labs."
        assert c["cardinality"] == "functional" and c["source_entry_id"] == "e_1"
    assert r.rejections.num_rows == 0


def test_claim_ids_are_content_addressed():
    a = extract([entry("I live in Lisbon now.")], RULES).claims.column("claim_id").to_pylist()
    b = extract([entry("I live in Lisbon now.")], RULES).claims.column("claim_id").to_pylist()
    assert a == b and len(a) == 1


def _with(proposal: dict) -> Extractor:
    return Extractor("test", "1", lambda e: [proposal])


def _base(**kw) -> dict:
    p = dict(subject="Elena", predicate="lives_in", object="Berlin", valid_at=T, source_entry_id="e_1",
             quote="I moved to Berlin", visibility=["public"], confidence=0.8)
    p.update(kw)
    return p


def _rejected(proposal: dict, src=None) -> list[tuple[str, str]]:
    r = extract([src or entry("I moved to Berlin", visibility=("elena",))], _with(proposal))
    assert r.claims.num_rows == 0, r.claims.to_pylist()
    return [(x["validator"], x["reason"]) for x in r.rejections.to_pylist()]


def test_each_validator_rejects_with_its_reason():
    assert _rejected(_base(predicate="is_secretly"))[0][0] == "ontology"
    v, reason = _rejected(_base(quote="I moved to Paris", visibility=["elena"]))[0]
    assert v == "provenance" and "verbatim" in reason
    v, reason = _rejected(_base(visibility=["public"]))[0]
    assert v == "policy" and "broader" in reason
    assert _rejected(_base(visibility=["elena"], valid_at=datetime(1066, 1, 1, tzinfo=timezone.utc)))[0][0] == "temporal"
    v, reason = _rejected(_base(confidence=3.0))[0]
    assert v == "schema" and "confidence" in reason
    v, _ = _rejected(_base(source_entry_id="e_other", visibility=["elena"]))[0]
    assert v == "provenance"


def test_a_valid_proposal_passes_every_validator():
    r = extract([entry("I moved to Berlin", visibility=("elena",))], _with(_base(visibility=["elena"])))
    assert r.claims.num_rows == 1 and r.rejections.num_rows == 0


# ------------------------------------------------------------------ rules: coverage and time

from claims.model import CLAIM_SCHEMA  # noqa: E402
from claims.resolve import Resolver, build_aliases  # noqa: E402
from claims.timephrase import resolve as resolve_phrase  # noqa: E402


def _facts(text: str, **kw) -> set[tuple]:
    r = extract([entry(text, **kw)], RULES)
    assert r.rejections.num_rows == 0, r.rejections.to_pylist()
    return {(c["predicate"], c["polarity"], c["object"]) for c in r.claims.to_pylist()}


def test_rules_cover_residence_work_study_relations_tastes_plans_and_ids():
    assert _facts("I moved from Lisbon to Oslo in spring.") == {("lives_in", "retract", "Lisbon"), ("lives_in", "assert", "Oslo")}
    assert ("studies_at", "assert", "University of Porto") in _facts("These days I am studying at University of Porto.")
    assert _facts("My brother Tiago and my friend Ines came over.") == {
        ("has_relative", "assert", "Tiago"), ("has_friend", "assert", "Ines")
    }
    assert _facts("I really enjoy pottery classes, but I hate traffic.") == {
        ("likes", "assert", "pottery classes"), ("dislikes", "assert", "traffic")
    }
    assert _facts("I love it!") == set(), "a pronoun names nothing"
    assert ("mentions_identifier", "assert", "BK-20931") in _facts("My booking reference is BK-20931.")
    assert ("mentions_identifier", "assert", "774120") in _facts("The order number is 774120, shipped today.")
    # third person in a document
    got = _facts("Joaquim moved to Valencia after the merger.", actor=None, kind="document")
    assert got == {("lives_in", "assert", "Valencia")}


def test_retractions_from_statements_and_corrections():
    assert _facts("Actually, I don't work at Northwind Studio anymore.") == {("works_at", "retract", "Northwind Studio")}
    assert _facts("I no longer live in Lisbon.") == {("lives_in", "retract", "Lisbon")}
    assert _facts("Sadly I lost my job at Fjord Office.") == {("works_at", "retract", "Fjord Office")}
    got = _facts("Correction: I live in Potsdam, not Berlin.", kind="correction")
    assert got == {("lives_in", "assert", "Potsdam"), ("lives_in", "retract", "Berlin")}


def test_relative_times_resolve_against_the_entrys_valid_time_and_keep_the_phrase():
    r = extract([entry("Big news: I moved to Berlin last month!"), entry("I am planning a hike to Kilimanjaro next May.", entry_id="e_2")], RULES)
    by = {c["predicate"]: c for c in r.claims.to_pylist()}
    assert by["lives_in"]["time_phrase"] == "last month"
    assert by["lives_in"]["valid_at"] == datetime(2024, 4, 1, tzinfo=timezone.utc)
    assert by["lives_in"]["quote"] == "I moved to Berlin last month"
    assert by["plans"]["object"] == "hike to Kilimanjaro" and by["plans"]["time_phrase"] == "next May"
    assert by["plans"]["valid_at"] == datetime(2025, 5, 1, tzinfo=timezone.utc)  # said on 14 May 2024
    anchor = datetime(2024, 9, 2, 20, 15, tzinfo=timezone.utc)
    assert resolve_phrase("yesterday", anchor).date().isoformat() == "2024-09-01"
    assert resolve_phrase("two years ago", anchor).date().isoformat() == "2022-09-02"
    assert resolve_phrase("last week", anchor).date().isoformat() == "2024-08-26"
    assert resolve_phrase("next May", anchor).date().isoformat() == "2025-05-01"
    assert resolve_phrase("in March", anchor, past=True).date().isoformat() == "2024-03-01"
    assert resolve_phrase("today", anchor) == anchor
    assert resolve_phrase("someday", anchor) is None


def test_new_columns_are_in_the_schema():
    for name in ("polarity", "time_phrase", "object_id", "subject_id"):
        assert name in CLAIM_SCHEMA.names


# ------------------------------------------------------------------ validators: extended cases


def test_ontology_checks_argument_types():
    v, reason = _rejected(_base(object="somewhere nice", visibility=["elena"]))[0]
    assert v == "ontology" and "place" in reason
    v, reason = _rejected(_base(subject="she", visibility=["elena"]))[0]
    assert v == "ontology" and "pronoun" in reason
    v, reason = _rejected(_base(predicate="mentions_identifier", object="no digits", visibility=["elena"]))[0]
    assert v == "ontology" and "identifier" in reason


def test_provenance_rejects_facts_the_quote_does_not_support():
    src = entry("I moved to Berlin", visibility=("elena",))
    v, reason = _rejected(_base(object="Munich", visibility=["elena"]), src)[0]
    assert v == "provenance" and "not supported" in reason
    v, reason = _rejected(_base(subject="Oskar", visibility=["elena"]), src)[0]
    assert v == "provenance" and "speaker" in reason


def test_temporal_rejects_future_facts_and_wrong_phrase_resolution():
    src = entry("I moved to Berlin last month", visibility=("elena",))
    late = _base(quote="I moved to Berlin", valid_at=datetime(2024, 6, 1, tzinfo=timezone.utc), visibility=["elena"])
    v, reason = _rejected(late, src)[0]
    assert v == "temporal" and "only plans" in reason
    wrong = _base(quote="I moved to Berlin last month", time_phrase="last month", valid_at=datetime(2024, 1, 1, tzinfo=timezone.utc), visibility=["elena"])
    v, reason = _rejected(wrong, src)[0]
    assert v == "temporal" and "2024-04-01" in reason
    ok = extract([src], _with(_base(quote="I moved to Berlin last month", time_phrase="last month", valid_at=datetime(2024, 4, 1, tzinfo=timezone.utc), visibility=["elena"])))
    assert ok.claims.num_rows == 1
    plan = extract([entry("I am planning a trip to Oslo next May", visibility=("elena",))],
                   _with(_base(predicate="plans", object="trip to Oslo", quote="planning a trip to Oslo next May", time_phrase="next May",
                               valid_at=datetime(2025, 5, 1, tzinfo=timezone.utc), visibility=["elena"])))
    assert plan.claims.num_rows == 1, plan.rejections.to_pylist()


# ------------------------------------------------------------------ entity resolution


def _msg(eid, speaker, text, *, scope="team", conv="c1", seq=1):
    e = entry(text, actor=speaker, entry_id=eid)
    e.update(scope=scope, session_id=f"{conv}:S1", seq=seq, attributes=f'{{"conversation_id": "{conv}"}}')
    return e


def test_nicknames_merge_in_one_conversation_never_across_scopes():
    ledger = [
        _msg("e1", "Wendeline", "Hey Ros! How was the trip?", conv="c1"),
        _msg("e2", "Rosalind", "Great, thanks. I moved to Ghent last week.", conv="c1"),
        _msg("e3", "Wendeline", "Wow, Ros, that is big news!", conv="c1"),
        _msg("e4", "Rosalind", "Morning all.", scope="other", conv="c9"),
        _msg("e5", "rosalind", "Forgot my keys.", scope="other", conv="c9"),
    ]
    aliases = build_aliases(ledger)
    rows = {(r["scope"], r["alias"]): r for r in aliases.to_pylist()}
    ros = rows[("team", "Ros")]
    assert ros["canonical_name"] == "Rosalind" and ros["rule"] == "prefix-in-conversation"
    assert {"e1", "e3", "e2"} <= set(ros["evidence"]), "where she is addressed so, and where she speaks"
    assert rows[("other", "rosalind")]["rule"] == "case/space"
    # one name, two scopes: two entities, never merged
    assert rows[("team", "Rosalind")]["entity_id"] != rows[("other", "Rosalind")]["entity_id"]
    assert ("other", "Ros") not in rows
    r = extract(ledger, RULES, resolver=Resolver(aliases))
    lives = [c for c in r.claims.to_pylist() if c["predicate"] == "lives_in"]
    assert lives[0]["subject_id"] == ros["entity_id"] and lives[0]["time_phrase"] == "last week"
    mention = [c for c in r.claims.to_pylist() if c["predicate"] == "mentions" and c["source_entry_id"] == "e3"]
    assert mention and mention[0]["object"] == "Ros" and mention[0]["object_id"] == ros["entity_id"]


def test_a_nickname_two_participants_could_bear_is_not_merged():
    ledger = [_msg("e1", "Tom", "Hi Mar, hi all!"), _msg("e2", "Marta", "Hello."), _msg("e3", "Marek", "Hey.")]
    assert {r["rule"] for r in build_aliases(ledger).to_pylist()} == {"exact"}


def test_a_capitalised_word_at_a_sentence_start_is_not_a_nickname():
    ledger = [_msg("e1", "Carmen", "Car broke down again."), _msg("e2", "Bo", "Oh no.")]
    assert {r["rule"] for r in build_aliases(ledger).to_pylist()} == {"exact"}


def test_resolution_tables_are_made_once_per_version_of_the_ledger(tmp_path, monkeypatch):
    # A build asks for them twice (deciding the days to extract, then entity_aliases): made once
    # while the ledger's files stay the same, again after an append, from the new entries alone.
    from claims import resolve
    from ledger import Ledger, NewEntry
    from memc import filecache

    filecache.clear()
    when = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    turn = lambda who, session, text: NewEntry(kind="message", scope="team", actor=who, session_id=session, content=text, valid_at=when)  # noqa: E731
    ledger = Ledger(tmp_path / "ledger")
    ledger.append([turn("Elena Rossi", "s1", "Hi Tomasz!"), turn("Tomasz", "s1", "Hi Elena.")])
    folded: list[int] = []
    real = resolve._Resolution.add
    monkeypatch.setattr(resolve._Resolution, "add", lambda self, entries, **kw: real(self, [e for e in entries if not folded.append(1)], **kw))
    first = resolve.resolution_tables(ledger, ledger.head())
    assert resolve.resolution_tables(Ledger(tmp_path / "ledger"), ledger.head()) is first and len(folded) == 2  # another handle
    ledger.append([turn("Priya", "s2", "Morning, Elena.")])
    second = resolve.resolution_tables(ledger, ledger.head())
    assert len(folded) == 3 and second[1].num_rows == first[1].num_rows + 1  # Priya speaks in s2: one entry folded
    assert resolve.resolution_tables(ledger, 2) is not second and len(folded) == 5  # an earlier watermark: all again


def test_resolution_tables_folded_a_batch_at_a_time_equal_one_pass(tmp_path):
    # The fold kept between versions gives the tables one pass over the ledger gives, and after a
    # purge rewrites a file it starts again: no alias cites the erased turn any more.
    from claims import resolve
    from ledger import Ledger, NewEntry
    from memc import filecache

    filecache.clear()
    when = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    turn = lambda who, session, text: NewEntry(kind="message", scope="team", actor=who, session_id=session, content=text, valid_at=when)  # noqa: E731
    ledger = Ledger(tmp_path / "ledger")
    batches = [
        [turn("Elena Rossi", "s1", "Hi Tomasz!"), turn("Tomasz", "s1", "Hey Elena, how are you?")],
        [turn("Elena Rossi", "s1", "Thanks, Tom!"), turn("priya.nair@helio.example", "mail", "Invoice attached.")],
        [turn("Priya Nair", "s2", "Morning, Elena."), turn("elena rossi", "s2", "Hi Priya!")],
        [turn("Tomasz", "s3", "Jo, are you there?"), turn("Jonas", "s3", "Yes, Tom.")],
    ]
    ids = []
    for batch in batches:
        ids += ledger.append(batch).entry_ids
        folded = resolve.resolution_tables(ledger, ledger.head())
        whole = (
            resolve.build_aliases(ledger.iter_entries(columns=resolve.ALIAS_COLUMNS)),
            resolve.build_participants(ledger.iter_entries(columns=resolve.PARTICIPANT_COLUMNS)),
        )
        assert folded[0].equals(whole[0]) and folded[1].equals(whole[1])
    assert "prefix-in-conversation" in folded[0].column("rule").to_pylist()  # "Tom" for Tomasz
    tomb = ledger.append([NewEntry(kind="erasure", scope="team", actor="admin", content="erasure of 1 entry", valid_at=when,
                                   attributes={"entry_ids": [ids[2]]})])  # fmt: skip
    ledger.purge({ids[2]: tomb.entry_ids[0]})  # "Thanks, Tom!"
    after = resolve.resolution_tables(ledger, ledger.head())
    assert after[0].equals(resolve.build_aliases(ledger.iter_entries(columns=resolve.ALIAS_COLUMNS)))
    assert not after[0].equals(folded[0])
    assert ids[2] not in {e for ev in after[0].column("evidence").to_pylist() for e in ev}
    assert ids[2] in {e for ev in folded[0].column("evidence").to_pylist() for e in ev}


def test_a_read_of_the_claims_reads_again_only_the_day_files_that_changed(tmp_path, monkeypatch) -> None:
    # A build reads every day's claims three times; one message rewrites the newest day only.
    import shutil

    import pyarrow as pa

    from claims import store
    from memc.atomic import write_parquet

    root = tmp_path / "claims"

    def day(d: str, ids: list[str], key: str = "k", name: str = store.CLAIMS_FILE) -> None:
        schema = store.REJECTION_SCHEMA if name == store.REJECTIONS_FILE else CLAIM_SCHEMA
        column = "proposal_id" if name == store.REJECTIONS_FILE else "claim_id"
        filler = {f.name: _filler(f.type) for f in schema if not f.nullable}
        write_parquet(pa.Table.from_pylist([{**filler, column: i} for i in ids], schema=schema), store.day_dir(root, key, d) / name)

    reads: list[str] = []
    real = store.read_parquet
    monkeypatch.setattr(store, "read_parquet", lambda p, **kw: reads.append(p.parent.name) or real(p, **kw))

    def ids(key: str = "k") -> list[str]:
        reads.clear()
        return store.read_claims(root, key).column("claim_id").to_pylist()

    day("2024-01-01", ["a", "b"])
    day("2024-01-02", ["c"])
    assert ids() == ["a", "b", "c"] and sorted(reads) == ["day=2024-01-01", "day=2024-01-02"]
    assert ids() == ["a", "b", "c"] and reads == []
    day("2024-01-02", ["c", "d"])  # rewritten: a new file under the same name
    day("2024-01-03", ["e"])
    assert ids() == ["a", "b", "c", "d", "e"] and sorted(reads) == ["day=2024-01-02", "day=2024-01-03"]
    shutil.rmtree(store.day_dir(root, "k", "2024-01-01"))
    assert ids() == ["c", "d", "e"] and reads == []
    day("2024-01-03", ["x"], key="other")  # one extractor's files are kept at a time
    assert ids("other") == ["x"] and ids() == ["c", "d", "e"] and reads == ["day=2024-01-02", "day=2024-01-03"]
    day("2024-01-03", ["r"], name=store.REJECTIONS_FILE)  # and so are the rejections
    assert store.read_claims(root, "k", rejected=True).column("proposal_id").to_pylist() == ["r"]
    assert store.read_claims(root, "k", day="2024-01-02").column("claim_id").to_pylist() == ["c", "d"]
    monkeypatch.setattr(store, "CLAIM_ROWS_KEPT", 2)  # more rows than are kept: not kept after this read
    assert ids() == ["c", "d", "e"] and reads == []
    assert ids() == ["c", "d", "e"] and sorted(reads) == ["day=2024-01-02", "day=2024-01-03"]
    assert ids() == ["c", "d", "e"] and sorted(reads) == ["day=2024-01-02", "day=2024-01-03"]


def _filler(kind) -> object:
    """A value of an Arrow type, for a column the test does not look at."""
    import pyarrow as pa

    if pa.types.is_timestamp(kind):
        return datetime(2024, 1, 1, tzinfo=timezone.utc)
    if pa.types.is_list(kind):
        return ["public"]
    if pa.types.is_floating(kind):
        return 1.0
    if pa.types.is_integer(kind):
        return 1
    return "x"
