"""The clause extractor (rules 0.3.0 and on): what it reads from a turn, what it refuses to assert, and
that every claim keeps a verbatim quote; its lexicon is checked when it loads."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from claims.extract import PARALLEL_MIN_ENTRIES, extract
from claims.extractors import clauses
from claims.extractors.registry import CLAUSES, RULES, active_extractor
from claims.lexicon import LexiconError, read_lexicon
from claims.model import Proposal
from claims.ontology import ONTOLOGY
from claims.resolve import Resolver, build_aliases, build_participants
from claims.validate import first_failure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claims"
SAID = datetime(2023, 5, 8, 14, 0, tzinfo=timezone.utc)


def entry(text: str, actor: str = "Ana", n: int = 1, kind: str = "message", scope: str = "s", conv: str = "c1") -> dict:
    return {
        "entry_id": f"e{n}", "seq": n, "kind": kind, "actor": actor, "content": text, "visibility": ["public"],
        "confidence": 1.0, "valid_at": SAID, "recorded_at": SAID, "scope": scope, "source_ref": f"D1:{n}",
        "attributes": f'{{"conversation_id": "{conv}"}}', "session_id": None,
    }  # fmt: skip


def said(text: str, actor: str = "Ana") -> set[tuple[str, str, str, str]]:
    return {(p.subject, p.predicate, p.object, p.polarity) for p in clauses.propose(entry(text, actor))}


def test_hedged_and_hypothetical_statements_never_become_facts() -> None:
    lines = [line.strip() for line in (FIXTURES / "hedged.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) >= 30
    considered = 0
    for line in lines:
        proposals = list(clauses.propose(entry(line)))
        facts = [(p.predicate, p.object) for p in proposals if p.predicate != "considers"]
        assert facts == [], f"{line!r} asserted {facts}"
        considered += bool(proposals)
        assert all(p.confidence <= clauses.HEDGED_CONFIDENCE for p in proposals)
    assert considered >= len(lines) // 2, "most hedges are kept, as what the speaker considers"


@pytest.mark.parametrize(
    "text, want",
    [
        ("I moved to Berlin last month and I love it.", ("Ana", "lives_in", "Berlin", "assert")),
        ("My home is now Lisbon.", ("Ana", "lives_in", "Lisbon", "assert")),
        ("I relocated to Porto for the job.", ("Ana", "lives_in", "Porto", "assert")),
        ("I got a job at Helio Labs!", ("Ana", "works_at", "Helio Labs", "assert")),
        ("I no longer live in Berlin.", ("Ana", "lives_in", "Berlin", "retract")),
        ("I don't work at Globex anymore.", ("Ana", "works_at", "Globex", "retract")),
        ("Yesterday I painted a sunrise over the lake.", ("Ana", "created", "sunrise over the lake", "assert")),
        ("Last week I went to a grief support group.", ("Ana", "attended", "grief support group", "assert")),
        ("I'm thrilled about the new studio.", ("Ana", "feels", "thrilled about the new studio", "assert")),
        ("I'm going to paint the kitchen.", ("Ana", "plans", "paint the kitchen", "assert")),
        ("Just finished a drawing of a lighthouse on a cliff.", ("Ana", "finished", "drawing of a lighthouse on a cliff", "assert")),
        ("My sister Mira lives in Oslo.", ("Ana", "has_relative", "Mira", "assert")),
        ("I loved reading \"The Hobbit\" as a kid.", ("Ana", "likes", "reading \"The Hobbit\"", "assert")),
        ("Jurassic Park is my top pick.", ("Ana", "likes", "Jurassic Park", "assert")),
        ("Family is so important to me.", ("Ana", "values", "Family", "assert")),
        ("I love baking, it feels like I'm giving something back, even if it's only cookies.", ("Ana", "likes", "baking", "assert")),
        ("We went fishing with my dad a few weeks ago.", ("Ana", "practices", "went fishing with my dad", "assert")),
        ("I'll visit my aunt in Lyon.", ("Ana", "plans", "visit my aunt in Lyon", "assert")),
        ("I can't wait to see the Grand Canyon.", ("Ana", "plans", "see the Grand Canyon", "assert")),
        ("I can't stand crowds.", ("Ana", "dislikes", "crowds", "assert")),
        ('I just watched "Brief Encounter" and it was great!', ("Ana", "watched", "Brief Encounter", "assert")),
        ("My favorite gluten-free snack is this amazing almond cake.", ("Ana", "likes", "almond cake", "assert")),
        ("Pistachio gelato is at the top of my list.", ("Ana", "likes", "Pistachio gelato", "assert")),
        ("Thanks so much for the tip on the bike shop!", ("Ana", "appreciates", "tip on the bike shop", "assert")),
        ("Your postcard means a lot.", ("Ana", "appreciates", "postcard", "assert")),
        ("I really appreciate your patience and humour.", ("Ana", "appreciates", "patience and humour", "assert")),
        ("Climbing makes me so happy.", ("Ana", "feels", "happy", "assert")),
        ("On Saturday we had a blast at a jazz festival.", ("Ana", "attended", "jazz festival", "assert")),
    ],
)
def test_clauses_say_typed_facts(text, want) -> None:
    assert want in said(text)


@pytest.mark.parametrize(
    "text, want",
    [
        # A pet or child named after the speaker's "my"/"our" or "I/we got, adopted ...".
        ("We adopted a kitten last spring. His name is Milo.", ("Ana", "has_pet", "Milo", "assert")),
        ("Our two-year-old is a handful, her name is Lena.", ("Ana", "has_relative", "Lena", "assert")),
        ("We got another dog named Pepper.", ("Ana", "has_pet", "Pepper", "assert")),
        # What is held important, in the present and closing its clause.
        ("Patience is key.", ("Ana", "values", "Patience", "assert")),
        ("Sunday dinners matter to me.", ("Ana", "values", "Sunday dinners", "assert")),
        ("Yeah, good sleep's crucial!", ("Ana", "values", "good sleep", "assert")),
        # The subject dropped before an irregular past that opens a frame.
        ("Went to the night market after work.", ("Ana", "attended", "night market after work", "assert")),
        ("Got a new kayak!", ("Ana", "received", "new kayak", "assert")),
        ("Gonna repaint the porch.", ("Ana", "plans", "repaint the porch", "assert")),
        # "had an ...": "have" is the verb (the lookup lemma of "an" is "a", no participle).
        ("I had an interview for a nursing post.", ("Ana", "has", "interview for a nursing post", "assert")),
        ("We have two kids.", ("Ana", "has", "two kids", "assert")),
        # "that" as a determiner; "got to" before the doing; "it" with what it is done for.
        ("I painted that old barn by the river.", ("Ana", "created", "old barn by the river", "assert")),
        ("I got to coach the junior team.", ("Ana", "practices", "coach the junior team", "assert")),
        ("I'm going to bake it for the school fair.", ("Ana", "plans", "bake it for the school fair", "assert")),
        ("Tom and I had a blast on our canoe trip.", ("Ana", "attended", "canoe trip", "assert")),
        # "doing" is the verb, never an auxiliary; a second doing after "and" is the speaker's too.
        ("I'm doing kickboxing twice a week.", ("Ana", "practices", "doing kickboxing twice a week", "assert")),
        ("I went out and got a signed copy!", ("Ana", "received", "signed copy", "assert")),
        ("Just been tinkering with that bread recipe.", ("Ana", "activity", "tinkering with that bread recipe", "assert")),
        ("I took this photo at the harbour.", ("Ana", "activity", "took this photo at the harbour", "assert")),
        ("I'm a fan of painters like Turner and Constable.", ("Ana", "likes", "painters like Turner and Constable", "assert")),
        ("Just got back from a sailing trip.", ("Ana", "attended", "sailing trip", "assert")),
        ("I'm volunteering as a tutor at the library.", ("Ana", "identity", "tutor at the library", "assert")),
        ("I love tea, but I also enjoy mint and mixed herb blends.", ("Ana", "likes", "mint and mixed herb blends", "assert")),
        ('"Clair de Lune" by Debussy is really special to me.', ("Ana", "values", '"Clair de Lune" by Debussy', "assert")),
        ("This old compass means so much to me.", ("Ana", "values", "old compass", "assert")),
        ("I've got lots of cookbooks from my travels.", ("Ana", "has", "cookbooks from my travels", "assert")),
        # Generic praise (a bare noun or a gerund) of what a thing does for one.
        ("Knitting's so relaxing.", ("Ana", "likes", "Knitting", "assert")),
        ("Swimming is a great way to unwind.", ("Ana", "likes", "Swimming", "assert")),
        # A thing said to be the speaker's passion, rock, ...; what does the speaker good.
        ("Sailing is my passion.", ("Ana", "likes", "Sailing", "assert")),
        ("My brother is my rock.", ("Ana", "values", "brother", "assert")),
        ("Gardening helps me unwind.", ("Ana", "likes", "Gardening", "assert")),
        ("Music and friends keep me sane.", ("Ana", "likes", "Music and friends", "assert")),
        # A thing the speaker made or got, named before the relative clause that says so.
        ("Here's a photo of the quilt I made last winter.", ("Ana", "created", "quilt", "assert")),
        ("These earrings I bought at the market are my favourite.", ("Ana", "received", "earrings", "assert")),
        ("Here are some jars of plum jam that I made.", ("Ana", "created", "jars of plum jam", "assert")),
        ("Work is hard, but my cats always cheer me up.", ("Ana", "likes", "cats", "assert")),
        # The clause extractor cuts objects at clause ends itself: "with my ..." stays in them.
        # (rules 0.4.0: a thing found or come upon is a doing of the speaker's, not a thing received)
        ("I found a box with my old letters.", ("Ana", "activity", "found a box with my old letters", "assert")),
        ("I wrote a few poems for the school paper.", ("Ana", "created", "poems for the school paper", "assert")),
        ("I went to a book fair and met a poet.", ("Ana", "attended", "book fair", "assert")),
        ("It was the kind of morning where I felt calm and at one with the sea.", ("Ana", "feels", "calm and at one with the sea", "assert")),
        ("These two pups really bring joy into my life!", ("Ana", "likes", "two pups", "assert")),
        ("My favourite is the amazing lemon tart - I have it every Sunday.", ("Ana", "likes", "lemon tart", "assert")),
        ("Look at these folks I met at the library!", ("Ana", "met", "folks", "assert")),
        # "canned" is no "could", "in May" no "may": neither hedges the clause.
        ("We got stuff like canned soup, blankets and socks.", ("Ana", "received", "canned soup, blankets and socks", "assert")),
        ("In May I went to a pottery fair.", ("Ana", "attended", "pottery fair", "assert")),
        ("For my birthday we rented a cabin.", ("Ana", "activity", "rented a cabin", "assert")),
        # A thing and its name; "did" before an article is the verb.
        ('I\'m reading this gripping sci-fi novel called "The Long Way" now.', ("Ana", "watched", 'gripping sci-fi novel called "The Long Way"', "assert")),
        ("I love a little bakery called Crumbs.", ("Ana", "likes", "little bakery called Crumbs", "assert")),
        ("We did a charity walk last month.", ("Ana", "practices", "did a charity walk", "assert")),
        ("My sister, cousins and neighbours are my rocks.", ("Ana", "values", "sister, cousins and neighbours", "assert")),
        ("I want to help rebuild my old town, Fairview, this year.", ("Ana", "goal", "help rebuild my old town, Fairview", "assert")),
    ],
)
def test_rules_of_the_second_cut(text, want) -> None:
    assert want in said(text)


def test_second_cut_rules_keep_their_limits() -> None:
    assert not any(p == "has_pet" for _, p, _, _ in said("My neighbour got a dog, her name is Bella."))  # the neighbour's dog
    assert said("Communication is key to a good team.") == set()  # says how, not what is held important
    assert said("The garden was important.") == set()  # what once was
    assert said("Is sleep important?") == set()
    assert said("Check out the new cafe.") == set()  # a base form asks the listener
    assert said("I love that you came.") == set()  # "that" opens a clause, not an object
    assert said("I'll give it a go.") == set()
    assert not any(s == "Ana" for s, _, _, _ in said("My sister moved to Oslo and started a job."))  # her doings, not the speaker's
    assert said("I'll make this work.") == set()  # "this" names nothing planned
    assert ("Ana", "feels", "supported", "assert") not in said("I met new neighbours and supported them.")
    # One thing, once: not a generic liking; what it was like is said of it (rules 0.4.0)
    assert said("The view was amazing.") == {("view", "described_as", "amazing", "assert")}
    assert said("Your garden is awesome!") == set()  # the listener's
    assert said("Those posters are great.") == {("posters", "described_as", "great", "assert")}
    assert said("It's my passion.") == set()  # what "it" is, the turn does not say here
    assert said("Yeah, they are my rock.") == set()  # who "they" are, the turn does not say
    assert said("Your words keep me motivated.") == set()
    assert said("The impact we made was huge.") == set()  # a saying, nothing made
    assert said("Here's a pic I got at the beach.") == set()  # a photo "got" is taken, not received
    assert ("Ana", "created", "peek at the studio", "assert") not in said("Take a peek at the studio I designed.")
    # An open activity keeps its verb: the place's name does not replace what was done there.
    assert ("Ana", "activity", "took this photo at a lake called Blue Hollow", "assert") in said("I took this photo at a lake called Blue Hollow.")


def test_what_a_precision_audit_of_the_second_cut_found() -> None:
    assert said("I feel appreciated at the club.") == {("Ana", "feels", "appreciated at the club", "assert")}  # no liking of "at the club"
    assert not any(p == "likes" for _, p, _, _ in said("I'll always remember the evenings that bring us joy."))
    assert said("Losing my keys made me late.") == set()  # undergone, not practised
    assert ("Ana", "received", "made a big difference", "assert") not in said("The advice I got made a big difference.")
    assert said("I'll be a patient dad when I have kids.") == set()  # a time to come
    assert said("The singing of the choir got everyone dancing.") == set()  # "the" opens a subject, not a time
    assert ("Ana", "member_of", "choir", "assert") in said("When I moved here I joined a choir.")  # a past "when" is a fact


def test_what_a_second_audit_of_the_second_cut_found() -> None:
    assert said("This is a big step towards my dream of owning a boat.") == set()  # "this" is no time here, "is" no past
    assert said("I haven't swum in years.") == set()  # "have" before "n't" is an auxiliary, the negation is read
    assert said("Made me remember the old days.") == set()  # a cause before "me", not a thing made
    assert said("I had as a kid.") == set()
    assert said("I've made real friendships with folks there.") == set()  # a saying, nothing created
    assert not any(p == "likes" for _, p, _, _ in said("A club where I'm welcomed, loved and supported has meant a lot."))
    assert ("Ana", "values", "stay calm and de-stress", "assert") in said("It's important to stay calm and de-stress.")
    assert said("Taking in refugees for the winter is a big deal.") == set()  # people taken in are no pets


def test_what_a_third_audit_of_the_second_cut_found() -> None:
    assert said("I've been doing great.") == set()  # how one is, not a practice
    assert said("I'll start thinking.") == set()
    assert said("I want to go see.") == set()
    assert ("Ana", "plans", "start a book club", "assert") in said("I'll start a book club.")
    assert said("I'm just doing my best here.") == set()
    assert ("Ana", "attended", "market, Lisa", "assert") not in said("I went to the market, Lisa.")  # Lisa is spoken to


def test_what_a_fifth_audit_of_the_second_cut_found() -> None:
    assert said("Knitting's great for unwinding.") == set()  # a gerund before "'s" is the subject of a remark
    assert not any(p == "feels" for _, p, _, _ in said("I just got accepted to a design school."))  # admitted, not a feeling
    assert said("I'd love to try either of those places.") == set()
    assert said("I don't really need to buy any.") == set()
    assert ("Ana", "created", "being sung", "assert") not in said("I heard a song I wrote being sung.")
    # A condition after "but" reaches forward only; before it, or without "but", the whole sentence.
    assert ("Ana", "plans", "keep painting", "assert") in said("I'm gonna keep painting, but if a job comes up I might take it.")
    assert not any(p == "plans" for _, p, _, _ in said("I'll move to Lyon if I get the job."))


def test_a_name_spoken_to_is_not_part_of_the_object() -> None:
    def turn(text, actor, n):
        return {**entry(text, actor=actor, n=n), "session_id": "c1:S1"}

    turns = [turn("I love the idea Rui!", "Ana", 1), turn("Thanks for the invite Ana.", "Rui", 2)]
    resolver = Resolver(build_aliases(turns), build_participants(turns))
    result = extract(turns, CLAUSES, resolver)
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    facts = {(c["subject"], c["predicate"], c["object"]) for c in result.claims.to_pylist() if c["predicate"] != "mentions"}
    assert facts == {("Ana", "likes", "idea"), ("Rui", "appreciates", "invite")}


def test_courtesy_and_thought_are_not_facts() -> None:
    assert said("Thanks for asking!") == set()
    assert said("Thanks, Jonas!") == set()
    assert said("It makes me think of home.") == set()


def test_ability_and_advice_assert_nothing() -> None:
    assert said("We can fix the fence.") == set()
    assert said("We should savour every meal.") == set()
    assert said("I can imagine that would be tiring.") == set()


def test_questions_and_other_peoples_pronouns_are_not_read() -> None:
    assert said("Did you move to Berlin?") == set()
    assert said("They moved to Berlin.") == set()  # who "they" are is not in the turn
    assert said("You went to a concert.") == set()


def test_he_and_she_resolve_only_to_the_one_person_named() -> None:
    assert ("Mira", "lives_in", "Oslo", "assert") in said("My sister Mira called. She moved to Oslo.")
    assert not any(s in ("Mira", "Tom") for s, *_ in said("My sister Mira and my brother Tom called. She moved to Oslo."))


def test_reported_speech_records_who_said_it() -> None:
    turns = [
        entry("Jonas says Mira works at the Art School.", actor="Ana", n=1),
        entry("My sister Lea told me she moved to Porto.", actor="Ana", n=2),
        entry("I moved to Braga.", actor="Ana", n=3),
        entry("I told Jonas I moved to Braga.", actor="Ana", n=4),
        entry("Jonas thinks Mira works at Foundry.", actor="Ana", n=5),  # a belief, not a statement
    ]
    resolver = Resolver()
    result = extract(turns, CLAUSES, resolver)
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    rows = {(c["source_entry_id"], c["subject"], c["predicate"], c["object"]): c for c in result.claims.to_pylist()}
    mira = rows[("e1", "Mira", "works_at", "Art School")]
    assert mira["asserted_by"] == "Jonas" and mira["quote"] == "Jonas says Mira works at the Art School"
    assert mira["asserted_by_id"] == resolver.entity_id("s", "Jonas") != mira["subject_id"]  # a report
    lea = rows[("e2", "Lea", "lives_in", "Porto")]
    assert lea["asserted_by"] == "Lea" and lea["asserted_by_id"] == lea["subject_id"]  # her own word, relayed
    own = rows[("e3", "Ana", "lives_in", "Braga")]
    assert own["asserted_by"] is None and own["asserted_by_id"] == own["subject_id"]  # the author's own word
    assert all(c["asserted_by"] is None for k, c in rows.items() if k[0] == "e4")
    assert not any(k[0] == "e5" for k in rows)


def test_you_is_the_other_one_of_a_two_party_session() -> None:
    def turn(text, actor, n, session="c1:S1"):
        return {**entry(text, actor=actor, n=n), "session_id": session}

    turns = [
        turn("Hey Ana, you moved to Porto last month, right? Congrats!", "Rui", 1),
        turn("You started at Fjord this week. You're so brave!", "Rui", 2),
        turn("Yes! I did.", "Ana", 3),
        turn("You moved to Braga.", "Rui", 4, session="c1:S2"),  # three people in that session
        turn("No, that was Tom.", "Tom", 5, session="c1:S2"),
        turn("Right.", "Ana", 6, session="c1:S2"),
    ]
    resolver = Resolver(build_aliases(turns), build_participants(turns))
    assert resolver.other_participant("s", "c1:S1", "Rui") == "Ana" and resolver.other_participant("s", "c1:S2", "Rui") is None
    result = extract(turns, CLAUSES, resolver)
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    said_of_ana = {(c["source_entry_id"], c["predicate"], c["object"]) for c in result.claims.to_pylist() if c["subject"] == "Ana"}
    assert ("e2", "works_at", "Fjord") in said_of_ana  # a question is not read: e1 says nothing
    assert not any(k[0] == "e1" for k in said_of_ana)
    assert not any(p == "identity" for _, p, _ in said_of_ana), "'you're so brave' is Rui's view of her, not her fact"
    assert not any(k[0] == "e4" for k in said_of_ana), "with three people in the session, 'you' is no one in particular"
    # The validator accepts "you" as the listener only in a two-party session.
    forged = Proposal(
        subject="Ana", predicate="lives_in", object="Braga", valid_at=SAID, source_entry_id="e4",
        quote="You moved to Braga", visibility=("public",), confidence=0.9,
    )  # fmt: skip
    assert first_failure(forged, turns[3], resolver)[0] == "provenance"


def test_backing_the_listener_is_a_claim_about_both() -> None:
    def turn(text, actor, n, session="c1:S1"):
        return {**entry(text, actor=actor, n=n), "session_id": session}

    turns = [
        turn("Wow, the exam is tomorrow? You've got this, I'm so proud of you!", "Rui", 1),
        turn("Good luck!", "Rui", 2),  # says "you" to no one: no claim
        turn("Are you proud of you?", "Rui", 3),
        turn("Thanks Rui!", "Ana", 4),
        turn("Honestly, I believe in you.", "Rui", 5, session="c1:S2"),
        turn("Me too.", "Tom", 6, session="c1:S2"),  # three people in that session: whom, unknown
        turn("Hi.", "Ana", 7, session="c1:S2"),
    ]
    resolver = Resolver(build_aliases(turns), build_participants(turns))
    result = extract(turns, CLAUSES, resolver)
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    backing = [(c["source_entry_id"], c["subject"], c["object"], c["quote"]) for c in result.claims.to_pylist() if c["predicate"] == "encourages"]
    assert backing == [("e1", "Rui", "Ana", "You've got this")]
    # The validator takes the listener as a person object only when the quote says "you".
    forged = Proposal(
        subject="Rui", predicate="encourages", object="Ana", valid_at=SAID, source_entry_id="e2",
        quote="Good luck", visibility=("public",), confidence=0.9,
    )  # fmt: skip
    assert first_failure(forged, turns[1], resolver)[0] == "provenance"


def test_an_urging_backs_the_listener_only_when_the_turn_says_whom() -> None:
    def turn(text, actor, n):
        return {**entry(text, actor=actor, n=n), "session_id": "c1:S1"}

    turns = [
        turn("Hang in there, Rui! It'll work out.", "Ana", 1),  # the listener named
        turn("Keep at it and you'll sell the boat.", "Ana", 2),  # "you" says whom
        turn("Keep it up!", "Ana", 3),  # names no one
        turn("Thanks! I'll keep it up for sure.", "Rui", 4),  # the speaker's own
        turn("So glad you never give up.", "Ana", 5),  # not an imperative
        turn("Will you keep going?", "Ana", 6),
        turn("Wow, you're so brave.", "Rui", 7),
        turn("Your drive is awesome.", "Ana", 8),  # "your" says whom as "you" does
    ]
    resolver = Resolver(build_aliases(turns), build_participants(turns))
    result = extract(turns, CLAUSES, resolver)
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    backing = [(c["source_entry_id"], c["subject"], c["object"], c["quote"]) for c in result.claims.to_pylist() if c["predicate"] == "encourages"]
    assert backing == [
        ("e1", "Ana", "Rui", "Hang in there"),
        ("e2", "Ana", "Rui", "Keep at it and you'll sell the boat"),
        ("e7", "Rui", "Ana", "Wow, you're so brave"),
        ("e8", "Ana", "Rui", "Your drive is awesome"),
    ]


def test_a_reporter_who_is_not_in_the_source_is_rejected() -> None:
    e = entry("Mira works at the Art School, I heard.", actor="Ana")
    forged = Proposal(
        subject="Ana", predicate="likes", object="Art School", valid_at=SAID, source_entry_id="e1",
        quote="Mira works at the Art School", visibility=("public",), confidence=0.9, asserted_by="Jonas",
    )  # fmt: skip
    failure = first_failure(forged, e, Resolver())
    assert failure is not None and failure[0] == "provenance" and "asserted_by 'Jonas'" in failure[1]


def test_every_claim_quotes_its_source_and_passes_the_validators() -> None:
    texts = [
        "I moved to Berlin last month and I love it.",
        "Yeah actually - making cooking videos for my blog.",
        "I made this clay bowl to remind myself of my grandmother.",
        "On Saturday, we had a blast at a street food market.",
        "I might adopt a dog, but I finished my first marathon!",
    ]
    entries = [entry(t, n=i) for i, t in enumerate(texts, 1)]
    result = extract(entries, CLAUSES, Resolver())
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    by_id = {e["entry_id"]: e for e in entries}
    rows = result.claims.to_pylist()
    assert len(rows) >= len(texts)
    for c in rows:
        assert c["quote"] in by_id[c["source_entry_id"]]["content"]
        assert c["extractor_version"] == clauses.VERSION and c["predicate"] in ONTOLOGY


def test_two_people_who_share_a_first_name_stay_two() -> None:
    turns = [
        entry("Hi, I'm Ana Lima, I moved to Porto.", actor="Ana Lima", n=1),
        entry("Hey Ana! I'm Ana Costa and I live in Braga.", actor="Ana Costa", n=2),
        entry("Ana, did you both move?", actor="Rui", n=3),
    ]
    resolver = Resolver(build_aliases(turns))
    lima, costa = resolver.entity_id("s", "Ana Lima"), resolver.entity_id("s", "Ana Costa")
    assert lima != costa
    assert resolver.entity_id("s", "Ana") not in (lima, costa), "a bare first name two people share is no one of them"
    claims = extract(turns, CLAUSES, resolver).claims.to_pylist()
    homes = {(c["subject_id"], c["object"]) for c in claims if c["predicate"] == "lives_in"}
    assert homes == {(lima, "Porto"), (costa, "Braga")}


def test_a_large_pass_split_over_workers_gives_the_same_claims() -> None:
    lines = [line.strip() for line in (FIXTURES / "hedged.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    lines += ["I moved to Berlin last month and I love it.", "I got a job at Helio Labs!", "I no longer live in Porto.", "Did you move?"]
    entries = [entry(lines[n % len(lines)], actor=("Ana", "Rui")[n % 2], n=n) for n in range(1, PARALLEL_MIN_ENTRIES + 201)]
    resolver = Resolver(build_aliases(entries), build_participants(entries))
    one = extract(entries, CLAUSES, resolver)
    two = extract(entries, CLAUSES, resolver, workers=2)
    assert one.claims.num_rows > PARALLEL_MIN_ENTRIES // 2 and one.entries_read == two.entries_read == len(entries)
    assert two.claims.equals(one.claims) and two.rejections.equals(one.rejections)


def test_a_forked_pass_loads_the_pipeline_once_in_the_parent() -> None:
    """A process whose first extraction is a forked pass loads spaCy before forking, so that its
    workers inherit it: otherwise every pool's workers loaded it (a 1M-entry build forks one
    pool per ledger day: 2.0 s a day of 1,000 entries against 0.26 s). In a fresh process, as a
    build's is; the children's own imports cannot be seen from here, the parent's cache can."""
    import subprocess
    import sys

    script = """
import json
from datetime import datetime, timezone
from claims.extract import PARALLEL_MIN_ENTRIES, extract
from claims.extractors.registry import CLAUSES
from claims.nlp import pipeline
t = datetime(2024, 5, 1, tzinfo=timezone.utc)
entries = [dict(entry_id=f"e{n}", seq=n, kind="message", scope="s", actor=("Ana", "Rui")[n % 2], content="I moved to Berlin.",
                session_id="c1", source_ref=None, valid_at=t, recorded_at=t, visibility=["public"], confidence=1.0, attributes=None)
           for n in range(PARALLEL_MIN_ENTRIES)]
before = pipeline.cache_info().currsize
claims = extract(entries, CLAUSES, workers=2).claims.num_rows
print(json.dumps([before, pipeline.cache_info().currsize, claims]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    before, after, claims = json.loads(out.stdout.strip().splitlines()[-1])
    assert (before, after) == (0, 1) and claims >= PARALLEL_MIN_ENTRIES


def test_versions_live_side_by_side(monkeypatch) -> None:
    monkeypatch.delenv("MEMC_EXTRACTOR", raising=False)
    # "rules" (and the default) is the newest rules version; the one it replaced by its key
    assert active_extractor("rules") is active_extractor() is CLAUSES and CLAUSES.key == "rules-0.6.4"
    assert active_extractor(RULES.key) is RULES and RULES.version == "0.2.0"
    # the old extractor's output is what it was: the ontology grew, 0.2.0 did not change
    e = entry("I moved to Berlin last month and I love it.")
    assert extract([e], RULES).claims.column("predicate").to_pylist() == ["lives_in"]


def test_a_malformed_lexicon_names_its_file_and_field(tmp_path) -> None:
    good = (Path(clauses.__file__).parents[1] / "lexicon.toml").read_text()
    bad = tmp_path / "lexicon.toml"
    bad.write_text(good.replace('predicate = "lives_in"', 'predicate = "dwells_in"', 1))
    with pytest.raises(LexiconError, match=r"lexicon\.toml: frame\.0\.predicate: .*unknown predicate 'dwells_in'"):
        read_lexicon(bad)
    bad.write_text(good.replace("[hedges]", "[hedgez]"))
    with pytest.raises(LexiconError, match=r"lexicon\.toml: .*hedge"):
        read_lexicon(bad)
    bad.write_text(good.replace('words = ["you got this",', 'words = ["good luck", "you got this",', 1))
    with pytest.raises(LexiconError, match=r"lexicon\.toml: encouraging\.words: .*'good luck' does not say 'you'"):
        read_lexicon(bad)
    bad.write_text("version = \n")
    with pytest.raises(LexiconError, match=r"lexicon\.toml"):
        read_lexicon(bad)


# Issue 15, third pass: what a turn says of someone or something other than the speaker, and
# lists of doings. Sentences written for these tests.
@pytest.mark.parametrize(
    "text, want",
    [
        # the speaker's own as a subject, named per owner
        ("On the way home my brother got into a fender bender.", ("Ana's brother", "activity", "got into a fender bender", "assert")),
        ("My old street was flooded by the storm.", ("Ana's old street", "described_as", "flooded by the storm", "assert")),
        ("Our van broke down again.", ("Ana's van", "activity", "broke down", "assert")),
        ("My grandpa passed away in the spring.", ("Ana's grandpa", "activity", "passed away in the spring", "assert")),
        ("My hamster is full of mischief.", ("Ana's hamster", "described_as", "full of mischief", "assert")),
        ("My neighbour Tariq invited me to a pottery class.", ("Tariq", "activity", "invited me to a pottery class", "assert")),
        ("My uncle believed in hard work.", ("Ana's uncle", "values", "hard work", "assert")),
        ("I believe in second chances.", ("Ana", "values", "second chances", "assert")),
        # pronouns resolved within the turn to the one candidate before them
        ("I adore my rabbits. They munch on dandelions and strawberries.", ("Ana's rabbits", "activity", "munch on dandelions and strawberries", "assert")),
        ("Yes! I have one - Mika, my parrot. She's been so chatty lately.", ("Mika", "described_as", "chatty", "assert")),
        ("Yes! I have one - Mika, my parrot. She's been so chatty lately.", ("Ana", "has_pet", "Mika", "assert")),
        ("We were scared when my daughter fell off her bike. Luckily she was fine.", ("Ana's daughter", "described_as", "fine", "assert")),
        # a thing just named, described
        ('I finally read "The Quiet Orchard". It\'s a gentle tale about two rival beekeepers.', ("The Quiet Orchard", "described_as", "gentle tale about two rival beekeepers", "assert")),
        ("My new kayak came yesterday. It's a sit-on-top model with a rudder.", ("Ana's new kayak", "described_as", "sit-on-top model with a rudder", "assert")),
        ('We joined a choir called "Night Owls". It\'s a group of retired teachers.', ("Night Owls", "described_as", "group of retired teachers", "assert")),
        ("Her name is Pepper! She's full of beans and always steals socks.", ("Pepper", "described_as", "full of beans", "assert")),
        ('I reread "Small Gods". It\'s a funny tale about faith, doubt, and finding peace.', ("Small Gods", "described_as", "funny tale about faith, doubt, and finding peace", "assert")),
        ('I reread "Small Gods". It\'s a funny tale about faith, doubt, and finding your own way.', ("Small Gods", "described_as", "funny tale about faith, doubt", "assert")),
        # a list of doings: each item its own claim, the subject carried over
        ("We hiked the ridge, swam in the lake and even cooked trout on the fire.", ("Ana", "practices", "swam in the lake", "assert")),
        ("We hiked the ridge, swam in the lake and even cooked trout on the fire.", ("Ana", "created", "trout on the fire", "assert")),
        ("We toured the old mill, sampled local cheeses and bought honey.", ("Ana", "activity", "sampled local cheeses", "assert")),
        ("We toured the old mill, sampled local cheeses and bought honey.", ("Ana", "received", "honey", "assert")),
        # a list of things stays one object
        ("They eat a mix of lettuce, berries, and worms.", None),
        ("My turtles are great. They eat a mix of lettuce, berries, and worms.", ("Ana's turtles", "activity", "eat a mix of lettuce, berries, and worms", "assert")),
    ],
)
def test_what_is_said_of_others_and_of_lists(text, want) -> None:
    got = said(text)
    if want is None:
        assert got == set(), f"{text!r}: 'they' with no one before it names no one"
    else:
        assert want in got


def test_the_speakers_own_are_kept_apart_and_supported() -> None:
    # Ids are content-addressed and distinct per owner: Ana's son is not Bo's son.
    res = Resolver(build_aliases([entry("x", "Ana", 1), entry("y", "Bo", 2)]))
    ana = extract([entry("My son started judo.", "Ana", 1)], CLAUSES, res).claims.to_pylist()
    bo = extract([entry("My son started judo.", "Bo", 2)], CLAUSES, res).claims.to_pylist()
    assert [c["subject"] for c in ana] == ["Ana's son"] and [c["subject"] for c in bo] == ["Bo's son"]
    assert ana[0]["subject_id"] != bo[0]["subject_id"]
    assert ana[0]["subject_id"] == extract([entry("My son got a bike.", "Ana", 3)], CLAUSES, res).claims.to_pylist()[0]["subject_id"]
    # The validator takes "<speaker>'s X" only where the speaker says "my X" or "our X".
    p = Proposal(subject="Ana's son", predicate="activity", object="started judo", quote="started judo", valid_at=SAID,
                 source_entry_id="e1", visibility=("public",), confidence=0.9)  # fmt: skip
    assert first_failure(p, entry("My son started judo.", "Ana"), res) is None
    assert first_failure(p, entry("Her son started judo.", "Ana"), res)[0] == "provenance"
    assert first_failure(p, entry("My son started judo.", "Bo"), res)[0] == "provenance"  # Bo's son, not Ana's


def test_what_is_said_of_others_keeps_its_limits() -> None:
    # A pronoun with two candidates, or none before it, names no one.
    assert not any(s.startswith("Ana's") for s, _, _, _ in said("My son and my brother came over. He stayed late."))
    assert said("He was so kind to us.") == set()
    # "he" is neither the speaker nor the one spoken to; "she" is no brother.
    assert not any(s == "Ana's brother" for s, _, _, _ in said("My brother called. She was upset."))
    # "it" that names nothing ("It was a tough week"), or a thing named sentences before.
    assert said("My car broke down. It was a tough week.") == {("Ana's car", "activity", "broke down", "assert")}
    assert not any(p == "described_as" for _, p, _, _ in said("I finished my novel. I felt relieved. It's a mix of joy and fear."))
    # "they" for things is most often someone else: "our bodies ... they build a steady strength".
    assert not any(s == "Ana's bodies" for s, _, _, _ in said("We look after our bodies. They build a quiet, steady strength."))
    # Two subjects, or a phrase that may go on: no subject of the speaker's own.
    assert said("Our family and friends make it worth it.") == set()
    assert not any(s.startswith("Ana's") for s, _, _, _ in said("My kids love it."))
    # Nouns after "my" that own nothing, and a likeness: no claim about them.
    assert said("My goal was to run a marathon.") == {("Ana", "goal", "run a marathon", "assert")} or not any(s.startswith("Ana's") for s, _, _, _ in said("My goal was to run a marathon."))
    assert not any(p == "likes" for _, p, _, _ in said("My phone is like my second brain."))
    # A thing receives nothing: "our picnic got off to a rainy start" is something that happened to it.
    assert ("Ana's picnic", "activity", "got off to a rainy start", "assert") in said("Our picnic got off to a rainy start.")
    # A list of things after a doing is one object, not doings: "trees" is no verb here.
    assert not any(o.startswith("trees") for _, _, o, _ in said("I painted a lake, trees and a sunset."))
    # A word that may be a verb is an item of a list of things only after a preposition.
    assert not any("hike" in o for _, _, o, _ in said("We watch films, hike, and cook big dinners."))
    # Items of a list after an infinitive are not the speaker's doings ("to stay organised, track chores").
    assert not any(o.startswith("track") for _, _, o, _ in said("I use a planner to stay organised, track chores and plan meals."))


def test_what_a_sixth_audit_found() -> None:
    # Seed 4255 on this pass: courtesy spelled as said, generic remarks, objects that name nothing.
    assert said("Thanks for askin'!") == set()
    assert said("We all have different roads.") == set()
    assert not any(p == "practices" for _, p, _, _ in said("My cousins have tried it and loved it."))
    assert said("I'll pick a few of the ones.") == set()
    assert said("We work great together!") == set()
    assert said("Lately I've been puzzled about something.") == set()
    assert said("I've always just kept away.") == set()
    assert said("I run out of shows to watch.") == set()
    assert ("Ana", "values", "staying calm", "assert") in said("Remember that staying calm is very important.")
    assert said("Maybe we show people.") == set()


def test_what_a_seventh_audit_found() -> None:
    # Seed 4256 on this pass (90 correct): a feeling said of the listener, the listener's thing
    # liked, a clause read as a thing, a state guessed, objects that name a verb or nothing.
    assert said("Lucky you to have such a kind crew!") == set()
    assert ("Ana", "feels", "Glad", "assert") in said("Glad you like it!")
    assert said("Loving your new haircut!") == set()
    assert not any(o.endswith("and") for _, _, o, _ in said("Biscuit helps me stay calm and gives me so much comfort."))
    assert said("I probably also have lots of records.") == set()
    assert said("I finally fit in somewhere.") == set()
    assert said("I chose to read about that.") == set()
    assert said("We worked hard.") == set()
    assert not any(o.endswith("surrounded") for _, _, o, _ in said("We celebrated my niece's graduation with a picnic surrounded by music, games and the warm evening breeze."))


def test_what_a_third_audit_of_this_pass_found() -> None:
    # Seed 4257 (94 correct): an amount before "of", a hedged clause read as a thing considered.
    assert ("Ana", "met", "players at the match afterwards", "assert") in said("I talked to some of the players at the match afterwards.")
    assert not any(p == "considers" for _, p, _, _ in said("I'm not sure I'll ever work out why my cat naps so much."))


def test_a_time_phrase_inside_the_object_is_cut_out_and_the_thing_goes_on() -> None:
    # "had an interview yesterday for a design job": the phrase dates the claim; the thing had is
    # the interview for the job, and the validator finds it in the quote with the phrase taken out.
    assert ("Ana", "has", "interview for a design job", "assert") in said("I had an interview yesterday for a design job.")
    assert ("Ana", "attended", "pottery class with my aunt", "assert") in said("I went to a pottery class last Friday with my aunt.")
    claims = extract([entry("I had an interview yesterday for a design job.")], CLAUSES).claims.to_pylist()
    (c,) = [c for c in claims if c["predicate"] == "has"]
    assert c["object"] == "interview for a design job" and c["time_phrase"] == "yesterday" and c["quote"] == "I had an interview yesterday for a design job"
    assert c["valid_at"].date() < SAID.date()
    # A phrase at the end still ends the object; a phrase the thing does not go on after as well.
    assert ("Ana", "member_of", "rowing club", "assert") in said("I joined a rowing club last week!")


def test_a_past_habit_is_a_thing_done_and_not_a_plan() -> None:
    assert said("I used to go sailing with my uncle when I was small, we'd sail out past the harbour.") == {("Ana", "activity", "go sailing with my uncle", "assert")}
    assert ("Ana", "activity", "compete in a few darts leagues", "assert") in said("I used to compete in a few darts leagues.")
    assert said("I used to be shy.") == set()
    assert said("I used to love baking bread.") == set()
    assert said("When I used to live by the sea, life was slow.") == set()
    # Without the habit, "we'd" still hedges: a thing considered, never a fact.
    assert all(p == "considers" for _, p, _, _ in said("We'd sail out past the harbour someday."))


def test_what_speaks_to_the_speaker_is_liked_and_now_that_states_a_fact() -> None:
    assert said("Urban gardening is particularly interesting to me.") == {("Ana", "likes", "Urban gardening", "assert")}
    assert ("Ana", "likes", "Folk music", "assert") in said("Yes! Folk music is so warm and honest - it really speaks to me.")
    assert said("Their kindness really spoke to me.") == set()  # someone else's, not a thing of the speaker's liking
    assert ("Ana", "identity", "head chef", "assert") in said("All the late nights paid off now that I'm a head chef.")


def test_an_irregular_past_opening_a_sentence_with_a_thing_after_it_is_the_speakers() -> None:
    assert ("Ana", "activity", "Took a long walk to the harbour", "assert") in said("Busy week. Took a long walk to the harbour.")
    assert said("Mixed feelings.") == set()
    assert said("Had a blast!") == set()


def test_an_apposition_after_a_dash_says_what_a_kind_named_is() -> None:
    assert said("I'm working on a new project - a ballad about a lighthouse keeper.") == {("Ana", "created", "ballad about a lighthouse keeper", "assert")}
    assert ("Ana", "started", "pottery class downtown", "assert") in said("I started a new hobby - a pottery class downtown!")
    assert ("Ana", "received", "new job", "assert") in said("I got a new job - I'm so happy.")  # a clause after the dash, no apposition
    claims = extract([entry("I'm working on a new project - a ballad about a lighthouse keeper.")], CLAUSES).claims.to_pylist()
    assert [c["quote"] for c in claims if c["predicate"] == "created"] == ["I'm working on a new project - a ballad about a lighthouse keeper"]


def test_to_before_a_place_or_an_owned_thing_goes_on_the_object() -> None:
    assert ("Ana", "attended", "road trip to Galway", "assert") in said("We went on a road trip to Galway.")
    assert ("Ana", "created", "letter to my grandma", "assert") in said("I wrote a letter to my grandma.")
    assert ("Ana", "created", "poster", "assert") in said("I made this poster to remind myself.")  # a purpose, another clause


def test_what_an_audit_of_the_fourth_pass_found() -> None:
    # Seed 4258 on this pass (90-91 correct): a doing with no object, a saying read as a doing, a
    # belief read as a thing considered.
    assert said("I've been really into making. It's so fun.") == set()
    assert said("I also like holding.") == set()
    assert ("Ana", "likes", "hiking", "assert") in said("I love hiking.")
    assert said("I'm crossing my fingers!") == set()
    assert said("I thought it'd help my shop grow.") == set()


def test_where_the_speaker_comes_from() -> None:
    assert ("Ana", "comes_from", "Norway", "assert") in said("I'm originally from Norway and moved here six years ago.")
    assert ("Ana", "comes_from", "Porto", "assert") in said("I grew up in Porto.")
    # said in passing, without a verb: "my home country, Norway", "my hometown of Porto"
    assert ("Ana", "comes_from", "Norway", "assert") in said("This scarf is a gift from my aunt back in my home country, Norway.")
    assert ("Ana", "comes_from", "Porto", "assert") in said("I miss my hometown of Porto so much.")
    # not a place: no name after the frame; a move changes where one lives, not where one is from
    assert not {c for c in said("I'm from work, sorry.") if c[1] == "comes_from"}
    assert not {c for c in said("I moved from Berlin to Lisbon.") if c[1] == "comes_from"}
    assert ONTOLOGY["comes_from"].object_type == "place"


def test_what_kind_of_animal_a_named_pet_is() -> None:
    assert {("Ana", "has_pet", "Pip", "assert"), ("Pip", "described_as", "guinea pig", "assert")} <= said("Yes, I do- Pip, my guinea pig. He's a handful.")
    assert ("Rex", "described_as", "dog", "assert") in said("I took my dog Rex to the vet.")
    assert ("Bella", "described_as", "puppy", "assert") in said("We got a puppy named Bella.")
    # no kind said, or which is which not said
    assert not {c for c in said("My pet Oscar is sweet.") if c[2] == "pet"}
    assert not {c for c in said("I walked my dogs Rex and Bo.") if c[1] == "described_as"}
    kinds = [p for p in clauses.propose(entry("We got another cat named Juniper too.")) if p.predicate == "described_as"]
    assert [(p.subject, p.object, p.quote) for p in kinds] == [("Juniper", "cat", "We got another cat named Juniper")]
    assert first_failure(kinds[0], entry("We got another cat named Juniper too.")) is None


def test_what_rules_0_2_0_read_of_named_people_the_clauses_read_too() -> None:
    """A name that lives or works somewhere, in rules-0.2.0's third-person statements, is a person
    for the clause reader whether or not the scope has met it: "Dana works at Helio Labs" said by
    Carol of a colleague who never speaks (the clause pass alone had read nothing of it)."""
    assert ("Dana", "works_at", "Helio Labs", "assert") in said("Understood. Dana works at Helio Labs since March.", "Carol")
    assert ("Elena", "lives_in", "Berlin", "assert") in said("Elena moved to Berlin in April.", "Tomasz")
    assert ("Elena", "lives_in", "Lisbon", "retract") in said("Elena no longer lives in Lisbon.", "Tomasz")
    assert ("Mira Jovanovic", "works_at", "Helio Labs", "assert") in said("Mira Jovanovic works at Helio Labs.", "Tomasz")  # the whole name
    # A pronoun is never such a name: "she" stays the one person named before it.
    assert ("Mira", "lives_in", "Oslo", "assert") in said("My sister Mira called. She moved to Oslo.")
    assert not {s for s, *_ in said("Berlin works for me. Monday works too.")} - {"Ana"}


# Rules 0.4.0: what LoCoMo's answer-bearing misses showed was said but not read (docs/extraction.md).
RULES_040 = [
    ("I'm after oak shelving, which is what bakeries usually use.", ("Ana", "goal", "oak shelving", "assert")),
    ("We're on the hunt for a sunny corner for the pottery shed.", ("Ana", "goal", "sunny corner for the pottery shed", "assert")),
    ("Let's go to a dance class next Friday!", ("Ana", "plans", "go to a dance class", "assert")),
    ("Been a busy week - had a tryout yesterday for a choir role.", ("Ana", "has", "tryout for a choir role", "assert")),
    ("I used to have a goat back in Ohio with that name.", ("Ana", "has", "goat back in Ohio with that name", "assert")),
    (
        "It's important for young people to learn and respect the old crafts.",
        ("Ana", "values", "learn and respect the old crafts", "assert"),
    ),
    ("I wanted to feel closer to my cousins and my roots.", ("Ana", "goal", "feel closer to my cousins and my roots", "assert")),
    ("Took a quick ride last week to Bruges to rest my eyes a little.", ("Ana", "activity", "Took a quick ride to Bruges to rest my eyes", "assert")),
    ("Congrats, Rui! The workshop looks amazing.", ("workshop", "described_as", "amazing", "assert")),
    ("The harbour and the old lighthouse were just lovely.", ("harbour and the old lighthouse", "described_as", "lovely", "assert")),
    ("Poppies mean remembrance and peace.", ("Poppies", "described_as", "remembrance and peace", "assert")),
    ("The food was delicious and the staff were friendly.", ("food", "described_as", "delicious", "assert")),
    (
        "That chapter specifically has some letters exploring exile, grief, and courage.",
        ("chapter", "described_as", "has some letters exploring exile, grief, and courage", "assert"),
    ),
    ("I love this series. It has pirates, storms, and a talking parrot!", ("series", "described_as", "has pirates, storms, and a talking parrot", "assert")),
    ("I saw a movie with lots of sea battles, I think it was called \"Tidewater\".", ("Ana", "watched", "Tidewater", "assert")),
    (
        "I've been playing a strategy game all week with a medieval map called \"Lantern Keep 2\".",
        ("Ana", "practices", "Lantern Keep 2", "assert"),
    ),
    ("Another stage play that I contributed to was shown at the town hall!", ("Ana", "created", "stage play", "assert")),
    ("I felt like I was in a storybook! The rain sounded so soothing.", ("Ana", "feels", "like I was in a storybook", "assert")),
    ("I felt like I was in a storybook! The rain sounded so soothing.", ("rain", "described_as", "soothing", "assert")),
    (
        "Now I'm passionate about building a warm, welcoming space for kids to play.",
        ("Ana", "likes", "building a warm, welcoming space for kids to play", "assert"),
    ),
    ("We went on a long, quiet walk by the river.", ("Ana", "attended", "long, quiet walk by the river", "assert")),
]


@pytest.mark.parametrize("text, want", RULES_040)
def test_rules_040_read_what_was_said_but_not_read(text, want) -> None:
    assert want in said(text)


def test_rules_040_keep_their_limits() -> None:
    assert said("Let's keep chasing our dreams!") == set()  # a cheer, no plan
    assert said("Let's make a difference together.") == set()
    assert said("I used to have to walk to school.") == set()  # an obligation once, nothing had
    assert said("Had an amazing day with the kids.") == set()  # how a day went, nothing had
    assert said("My crew had a ball to the very end.") == set()  # a saying, nothing held
    assert said("The kids loved it.") == set()  # people pointed at are not described by this rule
    assert said("The thing is, the bus was late.") == {("bus", "described_as", "late", "assert")}  # "the thing" is a saying
    assert said("The garden was important.") == set()  # a value, read by the value patterns only
    assert said("I read a book called The Night Circus.") == {("Ana", "watched", "book called The Night Circus", "assert")}  # named once
    # "and my son fell off his bike": a new clause, not a second thing of the first one's object
    assert said("I went to the park and my son fell off his bike.") == {
        ("Ana", "attended", "park", "assert"),
        ("Ana's son", "activity", "fell off his bike", "assert"),
    }
    assert said("Poppies mean remembrance and peace, right?") == set()  # a question asserts nothing
    assert said("I feel like we should go home.") == set()  # a thought of what to do, not a feeling
    assert said("I love painting.") == {("Ana", "likes", "painting", "assert")}


def test_rules_040_claims_quote_their_source_and_pass_the_validators() -> None:
    entries = [entry(text, n=i) for i, (text, _) in enumerate(RULES_040, 1)]
    result = extract(entries, CLAUSES, Resolver())
    assert result.rejections.num_rows == 0, result.rejections.to_pylist()
    by_id = {e["entry_id"]: e for e in entries}
    for c in result.claims.to_pylist():
        assert c["quote"] in by_id[c["source_entry_id"]]["content"]


RULES_041 = [
    ("Thanks, Lea. Still working on opening a pottery shop.", ("Ana", "goal", "opening a pottery shop", "assert")),
    ("We've been working on building up stamina.", ("Ana", "goal", "building up stamina", "assert")),
    ("I finished my novel. It's about a dragon and her friends.", ("Ana's novel", "described_as", "about a dragon", "assert")),
    ("I finished my painting. It's based on a photo of my grandma.", ("Ana's painting", "described_as", "based on a photo of my grandma", "assert")),
]


@pytest.mark.parametrize("text, want", RULES_041)
def test_rules_041_read_aims_worked_towards_and_what_a_work_is_about(text, want) -> None:
    assert want in said(text)


def test_rules_041_keep_their_limits() -> None:
    assert said("I'm working on a painting of the lake.") == {("Ana", "created", "painting of the lake", "assert")}  # a thing made
    for amount in ("It's about 2 feet wide.", "It's about a foot wide.", "It's about time!", "It's about the same size as the last one."):
        assert ("Ana's painting", "described_as") not in {c[:2] for c in said(f"I finished my painting. {amount}")}, amount
    # What "it" was made from is read of a thing named in the turn, not of the speaker's last
    # turn's (which named "the main character", not the story it was inspired by).
    story = session([("Jo", "The hero is facing some hard choices."), ("Nat", "What inspired you?"), ("Jo", "It was inspired by old family letters.")])
    assert not [c for c in extract(story, CLAUSES, Resolver(build_aliases(story), build_participants(story))).claims.to_pylist() if c["predicate"] == "described_as"]


# Rules 0.4.2: a possessed noun before a verb of meaning that is a noun too ("stands", "means")
# ends there, so the thing is the subject; "my home" opens the speaker's subject only where the
# lives_in frame starts at "home".
RULES_042 = [
    ("My compass stands for courage and patience.", {("Ana's compass", "described_as", "courage and patience", "assert")}),
    ("My old bike means freedom to me.", {("Ana's old bike", "described_as", "freedom", "assert")}),
    ("My home means a great deal to me.", set()),
    ("My home is now Lisbon.", {("Ana", "lives_in", "Lisbon", "assert")}),
]


@pytest.mark.parametrize("text, want", RULES_042)
def test_rules_042_end_a_possessed_noun_before_a_verb_of_meaning(text, want) -> None:
    # before 0.4.2: nothing; the same; ("Ana", "activity", "home means a great deal"); the same
    assert said(text) == want


CANOE = [
    ("Ines", "Yay! I completed my first wooden canoe and varnished it last Sunday."),
    ("Omar", "Oh nice! What is it made of?"),
    ("Ines", "Thanks, Omar! It's a blend of cedar and walnut!"),
]


def session(turns: list[tuple[str, str]], first: int = 1, sid: str = "s1", visibility: tuple[str, ...] = ("public",)) -> list[dict]:
    out = []
    for n, (who, text) in enumerate(turns, first):
        e = entry(text, who, n=n)
        e.update(session_id=sid, visibility=list(visibility))
        out.append(e)
    return out


def session_claims(turns: list[dict]) -> list[dict]:
    """The claims one pass over a session's turns yields, its people resolved from the turns."""
    return extract(turns, CLAUSES, Resolver(build_aliases(turns), build_participants(turns))).claims.to_pylist()


def test_a_pronoun_that_names_nothing_in_its_turn_stands_for_what_the_speakers_last_turn_named() -> None:
    turns = session(CANOE)
    claims = session_claims(turns)
    (c,) = [c for c in claims if c["predicate"] == "described_as"]
    assert (c["subject"], c["object"], c["quote"]) == ("Ines's first wooden canoe", "blend of cedar and walnut", "It's a blend of cedar and walnut")
    # Lineage names both entries: the quote's and the one that names the subject.
    assert (c["source_entry_id"], c["subject_entry_id"]) == ("e3", "e1")
    assert all(o["subject_entry_id"] is None for o in claims if o is not c)
    # A claim's object of the turn before is what "it" may stand for too ("a cake I made").
    cake = session([("Jo", "Here's a pic of a tart I baked recently!"), ("Nat", "I love the way the crust turned out!"), ("Jo", "Thanks! It's lemon sponge with a plum filling.")])
    assert ("tart", "described_as", "lemon sponge with a plum filling") in {
        (c["subject"], c["predicate"], c["object"]) for c in extract(cake, CLAUSES, Resolver(build_aliases(cake), build_participants(cake))).claims.to_pylist()
    }
    # "they" for a group of the speaker's own named in their last turn.
    kids = session([("Ravi", "It really left a mark on my kids."), ("Lea", "How did they take it?"), ("Ravi", "They were thrilled and quiet.")])
    assert ("Ravi's kids", "described_as", "thrilled and quiet") in {
        (c["subject"], c["predicate"], c["object"]) for c in extract(kids, CLAUSES, Resolver(build_aliases(kids), build_participants(kids))).claims.to_pylist()
    }


def test_a_pronoun_reaches_back_only_to_the_speakers_own_last_turn_and_only_when_nothing_else_could_be_meant() -> None:
    def described(turns: list[dict]) -> list[str]:
        result = extract(turns, CLAUSES, Resolver(build_aliases(turns), build_participants(turns)))
        return [c["subject"] for c in result.claims.to_pylist() if c["predicate"] == "described_as"]

    # Something named before it in the turn might be what "it" is: no guess from the turn before.
    assert described(session([*CANOE[:2], ("Ines", "My favourite is the harbour. It's a blend of cedar and walnut!")])) == []
    # Another speaker's turn, or one further back, is not the speaker's last turn.
    assert described(session([CANOE[0], ("Omar", "What is it made of?"), ("Omar", "It's a blend of cedar and walnut!")])) == []
    assert described(session([CANOE[0], ("Omar", "Wow!"), ("Ines", "Yes."), ("Omar", "And?"), CANOE[2]])) == []
    # Not across sessions, and not from a turn fewer people may see.
    assert described([*session(CANOE[:2], sid="s1"), *session(CANOE[2:], first=3, sid="s2")]) == []
    private = [*session(CANOE[:1], visibility=("ines",)), *session(CANOE[1:], first=2)]
    assert described(private) == []
    # Without a dialogue (one entry at a time) nothing reaches back.
    assert not [p for p in clauses.propose(session(CANOE)[2]) if p.predicate == "described_as"]


def test_a_claims_subject_entry_is_checked_like_its_source() -> None:
    turns = session(CANOE)
    resolver = Resolver(build_aliases(turns), build_participants(turns))
    good = next(p for p in clauses.propose(turns[2], resolver, dialogue=_after(turns[:2], resolver)) if p.predicate == "described_as")
    assert good.subject_entry_id == "e1" and first_failure(good, turns[2], resolver, turns[0]) is None
    assert first_failure(good, turns[2], resolver, None)[0] == "provenance"  # the subject entry was not read
    nate = dict(turns[1], entry_id="e1")  # another speaker's turn under the subject entry's id
    assert "same speaker" in first_failure(good, turns[2], resolver, nate)[1]
    later = dict(turns[0], seq=9)
    assert "same speaker" in first_failure(good, turns[2], resolver, later)[1]
    unnamed = dict(turns[0], content="Yay! I completed it at last.")
    assert "not named" in first_failure(good, turns[2], resolver, unnamed)[1]
    no_pronoun = good.model_copy(update={"quote": "a blend of cedar and walnut"})
    assert "no pronoun" in first_failure(no_pronoun, turns[2], resolver, turns[0])[1]
    narrower = dict(turns[0], visibility=["ines"])
    assert first_failure(good, turns[2], resolver, narrower)[0] == "policy"


def _after(turns: list[dict], resolver: Resolver) -> clauses.Dialogue:
    dialogue = clauses.Dialogue()
    for t in turns:
        list(clauses.propose(t, resolver, dialogue=dialogue))
    return dialogue


def test_a_forked_pass_keeps_each_session_in_one_worker() -> None:
    # 1,203 entries in sessions of three: the cut between the two workers' chunks falls inside a
    # session and moves to its end, so every "it" still reaches its turn before.
    entries = []
    for k in range(PARALLEL_MIN_ENTRIES // 3 + 68):
        entries += session(CANOE, first=3 * k + 1, sid=f"s{k}")
    assert (len(entries) // 2) % 3  # the plain cut would split a session
    resolver = Resolver(build_aliases(entries), build_participants(entries))
    one = extract(entries, CLAUSES, resolver)
    two = extract(entries, CLAUSES, resolver, workers=2)
    assert two.claims.equals(one.claims) and two.rejections.equals(one.rejections)
    assert sum(c is not None for c in one.claims.column("subject_entry_id").to_pylist()) == len(entries) // 3


def test_what_the_audit_of_rules_040_found() -> None:
    # Seed 5040 on the rules 0.4.0 export (88 correct of 100; the twelve errors were all of rules
    # the pass kept from 0.3.0): advice read as a doing, a doing read as a thing made, a remark on
    # a doing in general read as one done, a likeness read as a liking, a thing come upon read as
    # received, a noun "wishes" read as a hedge, a saying read as a thing had or planned.
    assert said("I reccomend finding a mystery podcast to listen through.") == set()
    # not a thing made; since rules 0.4.1 an aim worked towards
    assert said("We've been working on building up stamina and finding calmer routines.") == {
        ("Ana", "goal", "building up stamina and finding calmer routines", "assert")
    }
    assert ("Ana", "created", "painting of the lake", "assert") in said("I'm working on a painting of the lake.")
    assert said("Sounds nice, Lea! Spending time with old friends is important.") == set()
    assert not any(p == "likes" for _, p, _, _ in said("We're like a band - always backing each other."))
    assert ("Ana", "activity", "came across this odd painted bench", "assert") in said("I came across this odd painted bench.")
    assert not any(p in ("considers", "created") for _, p, _, _ in said("We all made wishes and felt so close to the stars."))
    assert not any(p == "received" for _, p, _, _ in said("I'm lending my hands and making a real change."))
    assert said("Mixed days are hard, but I have faith in you!") == set()
    assert said("I'll make sure to recall this when I need the push the most.") == set()
    assert said("I'll do my best to see that these pups get a warm bed.") == set()
    # A second draw after those (seed 7311): 96 correct; two of the four errors mended here.
    assert said("I'm really passionate about making sure farmers are heard and paid.") == set()
    assert said("Going to town council sessions and joining in has given me a clearer picture.") == set()


# Rules 0.5.0: a reply to the other participant's question in the turn just before. The question
# says what a short reply is about; the claim keeps both quotes. Invented sentences.
REPLIES = [
    (("Pia", "That sounds lovely! How often do you all go rowing together?"), ("Tom", "Thanks, Pia! Twice a week, and it clears my head."), ("Tom", "practices", "go rowing together Twice a week")),
    (("Pia", "Do you all cycle to the market often?"), ("Tom", "Yeah, we go at least once a month."), ("Tom", "practices", "cycle to the market at least once a month")),
    (("Pia", "How long have you been knitting?"), ("Tom", "For about six years now!"), ("Tom", "practices", "knitting For about six years")),
    (("Pia", "Any big plans for the holidays?"), ("Tom", "Repainting the old boathouse - my uncle is helping."), ("Tom", "plans", "Repainting the old boathouse")),
    (("Pia", "Nice! So what have you been up to?"), ("Tom", "Yeah actually - building a canoe with my dad."), ("Tom", "activity", "building a canoe with my dad")),
    (("Pia", "What books have you been reading lately?"), ("Tom", "Mostly sea stories and old atlases."), ("Tom", "watched", "sea stories and old atlases")),
    (("Pia", "What causes have you been backing?"), ("Tom", "Lately, river cleanups and seed libraries."), ("Tom", "activity", "backing river cleanups and seed libraries")),
    # rules 0.6.2: a question too long to keep whole keeps its doing ("get to", "like that" and
    # the place after it go first)
    (("Pia", "Lovely shot! How often do you manage to catch storms like that from the old pier?"), ("Tom", "Thanks, Pia! Usually twice a month."), ("Tom", "practices", "catch storms Usually twice a month")),
]


@pytest.mark.parametrize("question, reply, want", REPLIES)
def test_rules_050_read_a_reply_by_the_question_it_answers(question, reply, want) -> None:
    turns = session([question, reply])
    result = extract(turns, CLAUSES, Resolver(build_aliases(turns), build_participants(turns)))
    answers = [c for c in result.claims.to_pylist() if c["question_entry_id"]]
    assert [(c["subject"], c["predicate"], c["object"]) for c in answers] == [want]
    (c,) = answers
    # Lineage names both entries; each quote is verbatim in its own.
    assert c["source_entry_id"] == "e2" and c["question_entry_id"] == "e1"
    assert c["quote"] in reply[1] and c["question_quote"] in question[1] and c["question_quote"].endswith("?")
    assert not result.rejections.num_rows


@pytest.mark.parametrize(
    "question, reply",
    [
        # a hedge, a negation or another subject before the answer
        ("How often do you go rowing?", "Not often, maybe once a month."),
        ("How often do you go rowing?", "Probably twice a week, at most."),
        ("How often do you go rowing?", "Hmm, I might go once a week if it stops raining."),
        ("How often do you go rowing?", "My son goes twice a week, I never do."),
        ("Do you all cycle to the market often?", "We'd probably go every weekend if we could."),
        # what the question asks of says nothing ("it"), or the reply asks back
        ("How often do you do it?", "Twice a week."),
        ("Any plans for the summer?", "Why do you ask?"),
        # a reply that is a sentence of its own is read clause by clause, not as a phrase
        ("What books have you been reading lately?", "I read mostly sea stories."),
        # a doing that only leads into a clause, or one about the listener
        ("What are your plans now?", "Taking it slow, I'm resting a lot."),
        ("Any plans for the weekend?", "Visiting your brother, remember?"),
        # a hedged plan
        ("Any plans for the summer?", "Thinking about a trip north."),
    ],
)
def test_rules_050_do_not_read_a_reply_that_does_not_answer(question, reply) -> None:
    turns = session([("Pia", question), ("Tom", reply)])
    claims = session_claims(turns)
    assert [c["object"] for c in claims if c["question_entry_id"]] == []


def test_rules_050_read_only_the_turn_just_before_by_someone_else() -> None:
    def answered(turns: list[dict]) -> list[str]:
        result = extract(turns, CLAUSES, Resolver(build_aliases(turns), build_participants(turns)))
        return [c["object"] for c in result.claims.to_pylist() if c["question_entry_id"]]

    q, a = ("Pia", "How often do you go rowing?"), ("Tom", "Twice a week.")
    assert answered(session([q, a])) == ["go rowing Twice a week"]
    assert answered(session([q, ("Pia", "Just curious."), a])) == []  # a turn between
    assert answered(session([("Tom", "How often do you go rowing?"), a])) == []  # one's own question
    assert answered([*session([q], sid="s1"), *session([a], first=2, sid="s2")]) == []  # another session
    assert answered([*session([q], visibility=("pia",)), *session([a], first=2)]) == []  # a question fewer may see
    # Without a dialogue (one entry at a time) no reply has a question.
    assert not [p for p in clauses.propose(session([q, a])[1]) if p.question_entry_id]


def test_a_claims_question_is_checked_like_its_source() -> None:
    turns = session([("Pia", "How often do you go rowing?"), ("Tom", "Twice a week.")])
    resolver = Resolver(build_aliases(turns), build_participants(turns))
    good = next(p for p in clauses.propose(turns[1], resolver, dialogue=_after(turns[:1], resolver)) if p.question_entry_id)
    assert (good.object, good.question_entry_id, good.question_quote) == ("go rowing Twice a week", "e1", "How often do you go rowing?")
    assert first_failure(good, turns[1], resolver, None, turns[0]) is None
    assert "just before" in first_failure(good, turns[1], resolver, None, None)[1]  # the pass did not hand it over
    assert "another participant" in first_failure(good, turns[1], resolver, None, dict(turns[0], actor="Tom"))[1]
    assert "another participant" in first_failure(good, turns[1], resolver, None, dict(turns[0], seq=5))[1]
    assert "verbatim" in first_failure(good, turns[1], resolver, None, dict(turns[0], content="How often do you swim?"))[1]
    statement = good.model_copy(update={"question_quote": "you go rowing"})
    assert "verbatim" in first_failure(statement, turns[1], resolver, None, dict(turns[0], content="I hear you go rowing?"))[1]
    # The object is the question's words then the answer's, each whole words of its own quote.
    for forged in ("go sailing Twice a week", "go rowing Thrice a week", "Twice a week go rowing", "row Twice a week"):
        assert first_failure(good.model_copy(update={"object": forged}), turns[1], resolver, None, turns[0])[0] == "provenance", forged
    assert "come together" in first_failure(good.model_copy(update={"question_quote": None}), turns[1], resolver, None, turns[0])[1]
    narrower = dict(turns[0], visibility=["pia"])
    assert first_failure(good, turns[1], resolver, None, narrower)[0] == "policy"


def test_memc_claims_shows_the_question_a_reply_answers(tmp_path, monkeypatch) -> None:
    # A real ledger and the real pass (claims written as the claims asset writes a day); the
    # listing runs as the CLI does, as a principal.
    from click.testing import CliRunner

    from claims.store import write_day
    from cli.main import cli
    from ledger import Ledger
    from ledger.schema import NewEntry
    from memc.home import MemcHome

    monkeypatch.delenv("MEMC_EXTRACTOR", raising=False)
    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    turns = [("Pia", "How often do you go rowing?"), ("Tom", "Twice a week.")]
    ledger.append([NewEntry(kind="message", scope="s", session_id="s1", actor=who, content=text, valid_at=SAID, visibility=("pia", "tom")) for who, text in turns])
    entries = ledger.read().to_pylist()
    result = extract(entries, CLAUSES, Resolver(build_aliases(entries), build_participants(entries)))
    write_day(home.claims, CLAUSES, SAID.date().isoformat(), result, ledger.head())
    out = CliRunner().invoke(cli, ["--home", str(home.root), "claims", "--as", "tom"])
    assert out.exit_code == 0, out.output
    assert "- Tom practices go rowing Twice a week" in out.output
    assert f'answering "How often do you go rowing?" — entry {entries[0]["entry_id"]}' in out.output
    listed = json.loads(CliRunner().invoke(cli, ["--home", str(home.root), "claims", "--as", "tom", "--json"]).output)
    (c,) = [c for c in listed if c["question_entry_id"]]
    assert (c["question_entry_id"], c["question_quote"]) == (entries[0]["entry_id"], "How often do you go rowing?")
    # Nobody who may not see the turns sees the claim.
    assert "answering" not in CliRunner().invoke(cli, ["--home", str(home.root), "claims", "--as", "zed"]).output


def _with_picture(text: str, caption: str, n: int = 1) -> dict:
    return dict(entry(text, n=n), attributes=json.dumps({"conversation_id": "c1", "image_caption": caption}))


@pytest.mark.parametrize(
    "caption, want",
    [
        ("a photo of a wooden canoe resting on two sawhorses", "a wooden canoe resting on two sawhorses"),
        ("A photography of a bowl of ramen with a soft egg.", "a bowl of ramen with a soft egg"),
        ("a drawing of a heron in blue ink", "a drawing of a heron in blue ink"),  # what the picture is stays
        ("three lanterns hanging over a market stall", "three lanterns hanging over a market stall"),
    ],
)
def test_a_shared_pictures_caption_is_what_the_speaker_shared(caption: str, want: str) -> None:
    (p,) = [p for p in clauses.propose(_with_picture("Look what we finished!", caption)) if p.predicate == "shared_photo"]
    assert (p.subject, p.object, p.quote, p.polarity) == ("Ana", want, caption, "assert")
    assert p.confidence == clauses.CAPTION_CONFIDENCE  # another's words for what it shows
    assert first_failure(p, _with_picture("Look what we finished!", caption), None, None, None) is None


def test_no_picture_claim_without_a_caption_or_from_a_sentence_long_one() -> None:
    assert not [p for p in clauses.propose(entry("Look what we finished!")) if p.predicate == "shared_photo"]
    long = "a photo of a sign taped to a cafe door asking people to keep their bikes off the narrow porch"
    assert not [p for p in clauses.propose(_with_picture("Funny sign!", long)) if p.predicate == "shared_photo"]
    # The caption of someone who is not a person speaking (a document, a tool) gives none either.
    doc = dict(_with_picture("Quarterly notes", "a photo of a whiteboard"), kind="document", actor=None)
    assert not [p for p in clauses.propose(doc) if p.predicate == "shared_photo"]


def test_a_quote_from_the_caption_is_checked_there_and_only_there() -> None:
    source = _with_picture("Look what we finished!", "a photo of a wooden canoe on sawhorses")
    (p,) = [p for p in clauses.propose(source) if p.predicate == "shared_photo"]
    assert first_failure(p, dict(source, attributes='{"conversation_id": "c1"}'), None, None, None)[0] == "provenance"
    across = p.model_copy(update={"quote": "finished! a photo", "object": "finished"})  # never across content and caption
    assert "verbatim" in first_failure(across, source, None, None, None)[1]
    assert first_failure(p.model_copy(update={"object": "a steel canoe"}), source, None, None, None)[0] == "provenance"


@pytest.mark.parametrize(
    "text, want",
    [
        ("My ring is special to me. It stands for hope and courage.", ("Ana's ring", "described_as", "hope and courage", "assert")),
        ("This ring was my aunt's. She wore it on Sundays, and it stands for hope and courage.", ("ring", "described_as", "hope and courage", "assert")),
        ("My old bike is in the shed. It reminds me of summers at the lake.", ("Ana's old bike", "described_as", "summers at the lake", "assert")),
    ],
)
def test_what_a_thing_named_before_stands_for(text: str, want: tuple) -> None:
    assert want in said(text)


@pytest.mark.parametrize(
    "text",
    [
        "My ring is special. It means the world to me.",  # how much, not what it stands for
        "I finished the mural. It means so much to me.",
        "My kite is red. It means I can fly it anywhere.",  # a clause
        "It stands for patience.",  # nothing named before it in the turn
    ],
)
def test_no_meaning_read_of_an_amount_a_clause_or_nothing_named(text: str) -> None:
    # (what the first sentence says the thing is, "special" or "red", stays)
    assert not [s for s in said(text) if s[1] == "described_as" and s[2] not in ("special", "red")]


@pytest.mark.parametrize(
    "text, want",
    [
        ("Here's a pic of my kayak at the lake!", ("my kayak at the lake", "Here's a pic of my kayak at the lake")),
        ("Look at this plum jam we boiled down!", ("plum jam we boiled down", "Look at this plum jam we boiled down")),
        ("Here's our latest mural from last weekend.", ("our latest mural", "Here's our latest mural")),  # the time is no part of it
        ("look at my seedlings - they sprouted overnight", ("my seedlings", "look at my seedlings")),
        ("Here's a charcoal self-portrait from class.", ("a charcoal self-portrait from class", "Here's a charcoal self-portrait from class")),
    ],
)
def test_the_speakers_words_for_the_picture_they_share(text: str, want: tuple[str, str]) -> None:
    source = _with_picture(text, "a photo of a lake")
    shown = [(p.object, p.quote) for p in clauses.propose(source) if p.predicate == "shared_photo" and p.quote != "a photo of a lake"]
    assert shown == [want]
    (p,) = [p for p in clauses.propose(source) if p.quote == want[1]]
    assert p.confidence == 0.9 and first_failure(p, source, None, None, None) is None  # the speaker's words, not the captioner's


@pytest.mark.parametrize(
    "text",
    [
        "Here's a shot from Sunday.",  # the picture alone
        "Here's a pic of him grinning at the vet.",  # whom "him" stands for is a guess
        "Here's a peek at what I sketched.",  # a clause
        "Look at this moment on the pier.",
    ],
)
def test_no_shown_thing_from_words_that_name_only_the_picture_or_a_guess(text: str) -> None:
    assert [p.quote for p in clauses.propose(_with_picture(text, "a photo of a lake")) if p.predicate == "shared_photo"] == ["a photo of a lake"]
    assert not [p for p in clauses.propose(entry("Here's a pic of my kayak at the lake!")) if p.predicate == "shared_photo"]  # no picture


def test_what_the_audit_of_rules_060_found() -> None:
    # Seed 4260 on the rules 0.6.0 export (91 correct of 100; the 26 claims from a picture's
    # caption all correct, 65 of the 74 others): six of the nine errors mended, with sentences
    # written for them. A lesson read as a thing studied, a belief about the listener read as a
    # thing considered, a plan naming only "it", what pets do to the speaker's mood read as their
    # doing, a plan's object cut before "me" (and a plan said in the present: the test after this).
    assert said("Naps matter - I learned this the hard way.") == set()
    assert ("Ana", "studies", "pottery", "assert") in said("I learned pottery last year.")
    assert said("Great! I knew you'd be up for it.") == set()
    assert said("I'll put it on my reading list for sure.") == set()
    assert ("Ana", "plans", "add the novel to my list", "assert") in said("I'll add the novel to my list.")
    assert not [s for s in said("My cats always bring me joy in hard times.") if s[1] == "activity"]
    assert not [s for s in said("My neighbours motivate me to keep trying.") if s[1] == "activity"]
    # an object cut before "me" keeps no preposition stranded at its end; one that ends a clause stays
    assert ("Ana", "plans", "ready for a regatta", "assert") in said("I'm getting ready for a regatta near me in June.")
    assert ("Ana", "values", "finish what we signed up for", "assert") in said("It's important to finish what we signed up for.")


@pytest.mark.parametrize(
    "text, want",
    [
        ("I'm visiting my aunt in Lyon next week.", ("plans", "visiting my aunt in Lyon", "next week", datetime(2023, 5, 15, tzinfo=timezone.utc))),
        ("We're exploring the old canal path with my cousins this weekend.", ("plans", "exploring the old canal path with my cousins", "this weekend", None)),
        ("I'm putting together a quiz night for the library next month.", ("plans", "putting together a quiz night for the library", "next month", datetime(2023, 6, 1, tzinfo=timezone.utc))),
        ("I'm working late tonight.", ("plans", "working late", "tonight", None)),
        # not to come: a time past, or none at all
        ("I was visiting my aunt last week.", ("attended", "aunt", "last week", None)),
        ("I'm visiting my aunt in Lyon.", ("attended", "aunt in Lyon", None, None)),
    ],
)
def test_a_present_progressive_dated_after_the_turn_is_a_plan(text: str, want: tuple) -> None:
    # (the audit of rules 0.6.0 found a walk planned "this weekend", said with "we're", read as attended)
    result = extract([entry(text)], CLAUSES)
    (c,) = [c for c in result.claims.to_pylist() if c["predicate"] != "mentions"]
    assert (c["predicate"], c["object"], c["time_phrase"]) == want[:3]
    if want[3] is not None:
        assert c["valid_at"] == want[3]  # dated when it is to happen (plans may lie after the turn)


def test_a_name_said_in_passing_is_whom_a_later_he_or_she_stands_for() -> None:
    # Rules 0.6.1: a name inside a sentence, before "he" or "she", is whom the pronoun may stand for
    # when it is the one such name (it is not a person the turn's other readings know).
    assert ("Jonas Berg", "described_as", "funny", "assert") in said("It was Jonas Berg on stage, he is so funny!")
    assert ("Rex", "described_as", "such a loyal part of our home for 12 years", "assert") in said(
        "We waved farewell to Rex at the shelter. He was such a loyal part of our home for 12 years."
    )
    # not a place gone to, a name spoken to, two names, or a name after an article
    assert not [s for s in said("We flew to Lyon. She loved the food there.") if s[0] == "Lyon"]
    assert not [s for s in said("Thanks, Lea! He is so kind.") if s[0] == "Lea"]
    assert not [s for s in said("I met Tom and then Jim. He is so tall.") if s[0] in ("Tom", "Jim")]
    assert not [s for s in said("We toured the Blue Ridge. She was thrilled.") if "Ridge" in s[0]]


def test_the_examples_after_things_like_name_what_is_had() -> None:
    # Rules 0.6.1: "plenty of tasty things like ...", "all sorts of plants like ...": the examples are the object
    assert ("Ana's party", "described_as", "soups, breads, and fresh pies", "assert") in said(
        "My party was great. It had plenty of tasty things like soups, breads, and fresh pies."
    )
    garden = said("My garden has all sorts of plants like basil, mint and tomatoes.")
    assert ("Ana's garden", "described_as", "basil, mint and tomatoes", "assert") in garden
    assert not [s for s in garden if s[1] == "activity"]  # "has all": the verb, not an auxiliary
    assert ("Ana", "has", "board games at home", "assert") in said("I have all kinds of board games at home.")
    assert said("We have all been there.") == set()


def test_what_a_thing_is_made_with() -> None:
    # Rules 0.6.1: `made_with` of a thing named with a participle after it, of a thing said to be
    # made with something, and of the thing "it" stands for after "I made it with"
    assert ("tasty pie", "made_with", "apples, oat milk, and a nutty crust", "assert") in said(
        "My favourite this autumn is a tasty pie made with apples, oat milk, and a nutty crust."
    )
    assert ("Ana's soup", "made_with", "lentils and leeks", "assert") in said("My soup is made with lentils and leeks.")
    assert ("Ana's cake", "made_with", "oat milk and honey", "assert") in said("My cake was a hit. I made it with oat milk and honey.")
    assert ("lamp", "made_with", "old jar", "assert") in said("That's a lamp made from an old jar!")
    # no thing "it" stands for, a question, a hedge: nothing
    assert not [s for s in said("Sure thing, I made it with oat milk and honey.") if s[1] == "made_with"]
    assert said("Is your cake made with eggs?") == set()
    assert not [s for s in said("I might bake a pie made with pears.") if s[1] == "made_with"]
    for text in ("My favourite this autumn is a tasty pie made with apples, oat milk, and a nutty crust.", "My cake was a hit. I made it with oat milk and honey."):
        for p in clauses.propose(entry(text)):
            assert p.quote in text and first_failure(p, entry(text)) is None


def test_it_after_a_thing_that_ends_the_clause_before() -> None:
    # Rules 0.6.1: the thing a clause ends with, right before an "it" opening the next, is what
    # "it" stands for (and is only described: what it has, what it is)
    assert ("old museum", "described_as", "had a huge map collection", "assert") in said("I toured the old museum, it had a huge map collection!")
    assert ("lamp", "described_as", "has a brass base", "assert") in said("I bought a lamp, it has a brass base.")
    # not a description of something else ("isn't just a job", "has been a huge help"), nor a moment
    assert ("shop", "described_as", "home for local painters", "assert") in said("Starting this shop isn't just a job, it's a home for local painters.")
    assert not [s for s in said("Painting has been a huge help. It's both a refuge and a joy.") if s[0] == "huge help"]
    assert not [s for s in said("We drove out to the dunes. It was fun.") if s[0] == "dunes"]


def test_a_doing_after_a_dash_is_of_the_clause_before() -> None:
    # "The puppy is thriving - mastering tricks": the doing after the dash is the puppy's, not the speaker's
    assert not [s for s in said("My cousin stopped by. The toddler is thriving - learning letters and colours.") if s[0] == "Ana"]
    assert not [s for s in said("My son is thriving - learning chess and piano.") if s[0] == "Ana"]
    assert ("Ana", "studies", "pottery and yoga", "assert") in said("I'm thriving - learning pottery and yoga.")


def test_an_experience_unsaid_and_a_trailing_and_things_name_nothing() -> None:
    # (the audit of rules 0.6.0: "an experience" read as a thing made)
    assert said("I had a comparable experience last spring.") == set()
    assert said("We crafted an experience.") == set()
    assert ("Ana", "has", "odd experience with a rude customer", "assert") in said("Yesterday I had an odd experience with a rude customer.")
    assert ("Ana", "created", "new bakery", "assert") in said("I'm still building the new bakery and things.")


def test_a_relative_clause_inside_a_subject_and_a_second_doing_after_a_thing() -> None:
    # (the audit of rules 0.6.0: a relative clause inside a gerund subject read as a doing; a
    # thing worked on and a second doing joined into one thing made)
    assert said("Having all the effort I put into painting pay off was so rewarding.") == set()
    assert ("Ana", "activity", "helping build a school", "assert") in said("Knowing I'm helping build a school is amazing.")
    assert ("Ana", "created", "two murals", "assert") in said("Right now I'm working on two murals and testing out new paint brands.")
    assert ("Ana", "likes", "cooking and baking bread", "assert") in said("I love cooking and baking bread.")


def test_a_remark_on_a_doing_is_not_the_speakers_doing() -> None:
    # (an audit of rules 0.6.1, seed 6161: a remark on the listener's doing, or on doing it at all,
    # read as the speaker's; a negation, "anything" and "another" read as things done)
    assert said("Shame about the job, but opening your own bakery sounds wonderful!") == set()
    assert said("Opening a bakery takes nerve - hang in there!") == set()
    assert not [s for s in said("Knitting scarves and selling them online - that's brilliant! You'll do well.") if s[1] in ("created", "practices")]
    assert ("Ana", "created", "scarves", "assert") in said("Knitting scarves and selling them online is my side job.")
    assert ("Ana", "started", "own bakery", "assert") in said("Opening my own bakery was scary but worth it.")
    assert said("Saturday works: we aren't doing anything then.") == set()
    assert not [s for s in said("I spotted another at the market and had to buy it.") if "another" in s[2]]
    assert not [s for s in said("I usually don't get too serious about chess.") if s[1] == "activity"]
    assert ("Ana", "practices", "did all sorts of crafts", "assert") in said("We did all sorts of crafts, from quilts to clay.")
    assert ("Ana", "plans", "practise daily and never skip a lesson", "assert") in said("I will practise daily and never skip a lesson.")


def test_praise_after_a_reaction_to_the_listener_is_not_a_liking() -> None:
    # (the audit of rules 0.6.1: a generic praise that answers the listener's news read as a liking)
    assert said("Sounds fun, Rui! Rowing in pairs is so relaxing.") == set()
    assert said("Wow! Winning a prize is amazing.") == set()
    assert ("Ana", "likes", "Rowing", "assert") in said("I rowed today. Rowing is so relaxing.")


def test_a_thing_got_or_made_for_someone_keeps_whom_it_is_for() -> None:
    # Rules 0.6.2: "bought my mom some tulips" was `received` "mom some tulips"; the gift and
    # whom it is for are one doing (the typed predicate has no place for the one it is for)
    assert said("I bought my mom some tulips yesterday.") == {("Ana", "activity", "bought my mom some tulips", "assert")}
    assert ("Ana", "activity", "getting everyone matching hats for the party", "assert") in said("I'm getting everyone matching hats for the party!")
    assert ("Ana", "activity", "made my sister a quilt for her birthday", "assert") in said("I made my sister a quilt for her birthday.")
    assert said("I made my kids pancakes.") == {("Ana", "activity", "made my kids pancakes", "assert")}
    # a thing got, then where from or when: no one it is for
    assert ("Ana", "received", "new bike", "assert") in said("I got a new bike.")
    assert not [s for s in said("We got them from the fair.") if s[1] == "activity"]
    assert said("I didn't get him a gift.") == set()
    for text in ("I bought my mom some tulips yesterday.", "I got everyone matching hats."):
        for p in clauses.propose(entry(text)):
            assert first_failure(p, entry(text)) is None


def test_an_experience_said_after_the_one_event_of_the_turn_describes_it() -> None:
    text = "We went on a fishing trip last spring. We rowed, fished and cooked by the fire. It was a really calm and lovely experience."
    assert ("fishing trip", "described_as", "calm and lovely experience", "assert") in said(text)
    p = next(p for p in clauses.propose(entry(text)) if p.predicate == "described_as")
    assert p.quote in text and first_failure(p, entry(text)) is None
    # two events, someone else's event, or more said after "experience": no one event it describes
    assert not [s for s in said("I went to the fair and then to a gala. It was a grand experience.") if s[1] == "described_as"]
    assert not [s for s in said("My aunt went to a gala. It was a fun experience.") if s[1] == "described_as"]
    assert not [s for s in said("We went to a recital. It was a rare experience for the whole class.") if s[2].endswith("experience")]


def test_a_participle_after_the_speakers_clause_is_their_doing() -> None:
    # "I was at home yesterday, spending the afternoon fixing bikes": the clause after the comma
    # has no subject of its own; its doing is the speaker's (and shares the clause's time)
    assert ("Ana", "activity", "spending the afternoon fixing bikes", "assert") in said("I was at home yesterday, spending the afternoon fixing bikes.")
    assert ("Ana", "watched", "old films", "assert") in said("I stayed in all weekend, watching old films.")
    # not after a hedge, not someone else's look, not a wish, not a bare list of participles
    assert not [s for s in said("I'm thinking of teaching kids, helping them read and supporting their parents.") if s[1] == "activity"]
    assert not [s for s in said("I saw my neighbour yesterday, looking happier than ever.") if s[1] != "watched"]
    assert said("I'm good, hoping you are too.") == set()
    assert not [s for s in said("I had a quiet week, reading and baking bread.") if s[1] == "watched"]


def test_the_doing_after_a_good_time_had_is_what_was_done() -> None:
    # "had a blast building a treehouse" was nothing (the blast is a saying, and with it the doing went)
    assert said("We had a blast building a treehouse.") == {("Ana", "activity", "building a treehouse", "assert")}
    assert ("Ana", "activity", "painting the fence with my dad", "assert") in said("I had fun painting the fence with my dad.")
    assert ("Ana", "activity", "hosting a picnic for the neighbours", "assert") in said("Thanks, Lea! We had a great time hosting a picnic for the neighbours.")
    # the listener's good time, free time, a place enjoyed: no doing of the speaker's
    assert said("I hope you had fun visiting your aunt!") == set()
    assert said("I had time to read.") == set()
    assert ("Ana", "attended", "fair", "assert") in said("We had a blast at the fair.")


def test_harm_that_happened_is_an_event_not_a_feeling() -> None:
    # "got hurt" was `feels` "hurt": harm to the body happened; what it led to ("and had to ...") goes with it
    assert said("Last spring I got injured and had to stop riding for a while, which I love.") == {
        ("Ana", "activity", "got injured and had to stop riding", "assert")
    }
    assert ("Ana", "activity", "got sick", "assert") in said("I got sick last week.")
    assert ("Ana's son", "activity", "got hurt", "assert") in said("My son got hurt at school.")
    # not when it did not happen, or may
    assert said("I never got hurt.") == set()
    assert not [s for s in said("If I got sick I'd stay home.") if s[1] in ("activity", "feels")]
    assert ("Ana", "feels", "hurt by his words", "assert") in said("I felt hurt by his words.")


def test_a_list_of_doings_with_a_saying_verb_and_a_past_form_that_is_a_noun_too() -> None:
    # "shared recipes" is a doing of the list (not talk to the listener, as "tell me what you think"),
    # and "saw the parade" is no item of a list of things after "the fair"
    assert {("Ana", "activity", "shared recipes", "assert"), ("Ana", "practices", "sang songs", "assert")} <= said("We grilled corn, shared recipes and sang songs.")
    assert said("I baked bread, tell me what you think!") == {("Ana", "created", "bread", "assert")}
    assert ("Ana", "attended", "fair", "assert") in said("I went to the fair, saw the parade and ate pie.")
    assert ("Ana", "received", "apples, pears, and a saw", "assert") in said("We bought apples, pears, and a saw.")


def test_a_doing_on_or_at_ones_own_show_or_shop_says_one_has_it() -> None:
    # "on my own radio show": the speaker has a radio show (a kind the lexicon lists), said in passing
    assert ("Ana", "has", "own radio show", "assert") in said("I play records every Friday on my own radio show!")
    assert ("Ana", "has", "own little bakery", "assert") in said("I sell pies at my own little bakery downtown.")
    # not wished for, asked about, or the listener's; a kind the lexicon does not list is not had
    assert not [s for s in said("I'd love to play records on my own radio show someday.") if s[1] == "has"]
    assert said("Do you sell things at your own shop?") == set()
    assert not [s for s in said("I found peace in my own journey.") if s[1] == "has"]


def test_a_role_the_speaker_speaks_as_is_their_identity() -> None:
    assert ("Ana", "identity", "baker", "assert") in said("As a baker, I'm up before dawn.")
    assert ("Ana", "identity", "night nurse", "assert") in said("I wrote this song about my years as a night nurse.")
    assert ("Ana", "identity", "first-time dad", "assert") in said("It was tough. As a first-time dad, I had no clue.")
    # an age, a group or a path with more said after it: no role
    assert not [s for s in said("As a kid, I loved trains.") if s[1] == "identity"]
    assert not [s for s in said("As a family, we hike every week.") if s[1] == "identity"]
    assert not [s for s in said("I loved that book as a kid.") if s[1] == "identity"]


def test_a_pronoun_made_then_a_purpose_names_nothing_made() -> None:
    # "I painted this to celebrate spring" was `created` "celebrate spring": "this" is what was painted
    assert not [s for s in said("I painted this to celebrate spring.") if s[1] == "created"]
    assert ("Ana", "created", "vase", "assert") in said("I made this vase to remember my trip.")


def test_what_the_speaker_feels_they_could_do_is_considered() -> None:
    # "I feel like I could run up a mountain" was nothing (the feeling with a modal is no feeling)
    assert said("I feel like I could run up a mountain today!") == {("Ana", "considers", "run up a mountain", "assert")}
    assert said("I feel like I could be happier.") == set()
    assert said("I don't feel like I could run a marathon.") == set()
    # a verb of ability or politeness after the modal ("write", "help") is what the feeling is of
    # when a thing follows it, as "run up a mountain" is: it was nothing
    assert said("Out on the lake I feel like I could write a symphony!") == {("Ana", "considers", "write a symphony", "assert")}
    assert said("I feel like I could write you a note.") == set()
    assert said("I feel like I could help.") == set()


def test_a_feeling_without_its_subject() -> None:
    # "Always happy to fix bikes ..." drops "I'm" after an adverb as "Glad to ..." does without
    # one: it was nothing
    assert said("Always happy to fix bikes for the kids!") == {("Ana", "feels", "happy to fix bikes for the kids", "assert")}
    assert said("Really glad we met up.") == {("Ana", "feels", "glad", "assert")}
    # a feeling word before a thing greets or judges ("feels" "Happy" and "Sad" before): no feeling
    assert said("Happy birthday to your son!") == set()
    assert said("Sad news about the old bakery.") == set()
    assert said("Glad things worked out.") == {("Ana", "feels", "Glad", "assert")}
    # after a comma, the feeling is the subject's before it, not the speaker's
    assert said("She's my neighbour, always happy and kind.") == set()


def test_the_audit_of_rules_062() -> None:
    # (an audit of rules 0.6.2, seed 6262: four errors in 100 claims, each mended)
    # a second doing after the thing studied ("and writing about ...") is no part of it
    assert ("Ana", "studies", "tax laws", "assert") in said("I'm researching tax laws and posting about the results.")
    assert ("Ana", "likes", "bread and cooking with friends", "assert") in said("I love bread and cooking with friends.")
    # "... and wouldn't trade it for anything": content, not a thing considered
    assert said("I'm so pleased with the new flat and wouldn't trade it for anything.") == set()
    # finishing is under way, not finished
    assert said("I'm finishing my thesis.") == {("Ana", "activity", "finishing my thesis", "assert")}
    assert not [s for s in said("Finishing up the mural for the library wall this week.") if s[1] == "finished"]
    assert ("Ana", "finished", "thesis", "assert") in said("Finishing my thesis was a relief.")
    # "Let's make some sweet memories": a cheer, as "Let's make a difference"
    assert said("Let's make some sweet memories at the lake!") == set()
    assert ("Ana", "plans", "go to a jazz night", "assert") in said("Let's go to a jazz night.")


def test_the_second_audit_of_rules_062() -> None:
    # (a second audit of rules 0.6.2, seed 6363: three errors in 100 claims, each mended)
    # a doing after "but" whose subject is someone else's ("who", "my sister") is not the speaker's
    assert not [s for s in said("The book is about a shy goat who hated rain but crossed the river anyway.") if s[0] == "Ana"]
    assert not [s for s in said("My sister was tired but finished the race.") if s[0] == "Ana"]
    assert ("Ana", "finished", "painting", "assert") in said("I was tired but finished the painting.")
    assert ("Ana", "feels", "happy", "assert") in said("Shame about the rain, but happy we stayed dry.")
    assert ("Ana", "received", "kind notes", "assert") in said("Was jittery when I played my song for the choir but got kind notes.")
    # "It seems like only yesterday we ...": how time flew, no doing of yesterday
    assert said("It seems like only yesterday we painted this room!") == set()
    # a particle that ends the clause stays with its verb; a past form with a bare noun is a second doing
    assert ("Ana", "activity", "put my coat on", "assert") in said("Yesterday I put my coat on.")
    assert {("Ana", "attended", "shop", "assert"), ("Ana", "received", "bread", "assert")} <= said("I went to the shop and bought bread.")
    assert ("Ana", "received", "vanilla and mixed nut", "assert") in said("We got vanilla and mixed nut.")
    # "Let's make this weekend epic": a cheer, as "Let's make some sweet memories"
    assert said("Let's make this weekend epic!") == set()
    assert ("Ana", "plans", "make soup for the kids", "assert") in said("Let's make soup for the kids.")


def test_what_was_joined_is_an_employer_or_a_group() -> None:
    # Rules 0.6.2: "joined" was `attended` whatever followed; an employer's name is `works_at`
    # (issue 15's lexicon: joined -> works_at), a group, club or team is `member_of`
    assert said("I joined Acme Robotics last week.") == {("Ana", "works_at", "Acme Robotics", "assert")}
    assert said("I joined a chess club last month.") == {("Ana", "member_of", "chess club", "assert")}
    assert ("Ana", "member_of", "Riverside Runners", "assert") in said("I joined Riverside Runners in May.")
    assert ("Ana", "member_of", "rowing club", "assert") in said("I'm a member of the rowing club.")
    assert said("I'd love to join a book club.") == {("Ana", "considers", "join a book club", "assert")}
    assert ONTOLOGY["member_of"].cardinality == "multi"


def test_the_third_audit_of_rules_062() -> None:
    # (a third audit of rules 0.6.2, seed 6464: four errors in 100 claims, each mended)
    # a clause going somewhere in the present, in a turn that dates it ahead, is a plan
    text = "Sure, I'm sailing with my cousins this weekend. We're visiting a new cove near the lighthouse. So excited!"
    assert ("Ana", "plans", "new cove near the lighthouse", "assert") in said(text)
    assert ("Ana", "attended", "old fort", "assert") in said("We're visiting the old fort.")
    # "and the teachers are great": the verdict's subject is no part of the doing
    assert said("I'm following my study plan and the teachers are great.") == {("Ana", "activity", "following my study plan", "assert")}
    # a second doing whose object only points ("and seeing this") names nothing
    assert said("Hiking up the ridge and spotting this was amazing!") == {("Ana", "practices", "Hiking up the ridge", "assert")}
    # a particle before a cut at the word cap goes with what was cut ("back | home")
    assert ("Ana", "activity", "helped repaint a crumbling old library", "assert") in said("In May I helped repaint a crumbling old library back home.")
    assert ("Ana", "likes", "keeping a couple of these quiet geckos around", "assert") in said("I love keeping a couple of these quiet geckos around to calm me down.")


def test_the_audit_of_rules_063() -> None:
    # (an audit of rules 0.6.2's output, seed 6565, each error mended in rules 0.6.3)
    # agreement with the listener is no feeling named
    assert said("Honestly I feel the same way.") == set()
    # a laugh or an attitude is had as a saying, not a thing owned; a setback is an event had
    assert said("We had such a good laugh.") == set()
    assert said("We had a big setback with the roof.") == {("Ana", "activity", "had a big setback with the roof", "assert")}
    assert said("We have the right attitude for the move.") == set()
    # a need of the past is what was done, not a goal ("goal" "fix it before winter" before)
    assert said("I needed to sell the van to pay the rent.") == {("Ana", "activity", "sell the van to pay the rent", "assert")}
    assert said("I needed to fix it before winter.") == set()
    # a doing in general judged after an aside between commas is a remark, not a thing made
    assert said("Planting trees in the square, especially with neighbours, is really vital.") == set()
    # a name after a preposition names that one ("watched" "painter named Odile" before)
    assert said("I read a few letters from a painter named Odile.") == {("Ana", "watched", "letters from a painter named Odile", "assert")}
    # spellbound by something is a feeling, not a doing
    assert said("I was fascinated by the old clocks.") == {("Ana", "feels", "fascinated by the old clocks", "assert")}
    # a title's closing mark stays with its opening one ('... called "Lantern Keep' before)
    assert said('I am playing this great puzzle game called "Lantern Keep".') == {("Ana", "practices", 'great puzzle game called "Lantern Keep"', "assert")}
    # "to" before a thing is a preposition, not a purpose ("feels" "deep bond" before)
    assert said("I've always felt a deep bond to music.") == {("Ana", "feels", "deep bond to music", "assert")}
    assert ("Ana", "created", "poster", "assert") in said("I made this poster to remind myself.")


def _pictured_session(turns: list[tuple[str, str, str | None]]) -> list[dict]:
    out = session([(who, text) for who, text, _ in turns])
    for e, (_, _, caption) in zip(out, turns):
        if caption:
            e["attributes"] = json.dumps({"conversation_id": "c1", "image_caption": caption})
    return out


def test_what_a_picture_shows_is_what_it_stands_for_when_nothing_else_can_be() -> None:
    # In the speaker's next turn: "it" was no one thing ("made it with" gave nothing)
    sorbet = _pictured_session([
        ("Ines", "Look what came out of the freezer!", "a photo of a bowl of plum sorbet on a wooden tray"),
        ("Omar", "Does it have dairy in it?", None),
        ("Ines", "Of course not! I made it with oat milk and ripe plums.", None),
    ])  # fmt: skip
    (c,) = [c for c in session_claims(sorbet) if c["predicate"] == "made_with"]
    assert (c["subject"], c["object"], c["source_entry_id"], c["subject_entry_id"]) == ("plum sorbet", "oat milk and ripe plums", "e3", "e1")
    # In its own turn, the subject named by the caption (the validators read it there)
    teapot = _pictured_session([("Ines", "Finally done! It's a blend of stoneware and porcelain.", "a photo of a clay teapot with a blue glaze on a shelf")])
    (c,) = [c for c in session_claims(teapot) if c["predicate"] == "described_as"]
    assert (c["subject"], c["object"], c["subject_entry_id"]) == ("clay teapot", "blend of stoneware and porcelain", None)
    # Not a picture of people or of a pet, nor when a word before the pronoun names a thing, nor
    # over what the speaker's last turn named
    for caption in ("a photo of a man holding a teapot", "a photo of a dog sleeping on a rug", "a photo of a mug and a teapot"):
        assert not [c for c in session_claims(_pictured_session([("Ines", "Finally done! It's a blend of stoneware and porcelain.", caption)])) if c["predicate"] == "described_as"]
    irises = _pictured_session([("Ines", "Irises cheer me up. They stand for courage and hope.", "a photo of two wooden benches by a pond")])
    assert not [c for c in session_claims(irises) if c["subject"] == "wooden benches"]
    canoe = _pictured_session([(*CANOE[0], None), (*CANOE[1], None), (*CANOE[2], "a photo of a paddle leaning on a wall")])
    assert [(c["subject"], c["object"]) for c in session_claims(canoe) if c["predicate"] == "described_as"] == [("Ines's first wooden canoe", "blend of cedar and walnut")]
    # The caption names the subject only for a pronoun of the quote, and only its own entry's caption
    (p,) = [p for p in clauses.propose(teapot[0]) if p.predicate == "described_as"]
    assert first_failure(p, teapot[0], None, None, None) is None
    assert first_failure(p.model_copy(update={"quote": "a blend of stoneware and porcelain"}), teapot[0], None, None, None)[0] == "provenance"
    assert first_failure(p, dict(teapot[0], attributes=None), None, None, None)[0] == "provenance"


def test_this_pointing_alone_introduces_nothing_an_it_may_stand_for() -> None:
    # "coming back to this because ...": "this" points, so the "It" after it reaches back to
    # what the speaker's last turn named ("my work"); it was no one's
    turns = session([
        ("Ana", "My cousins keep asking about my work."),
        ("Bo", "So what is the new part like?"),
        ("Ana", "True! I keep coming back to this because it matters to me. It is about exile, rivers, and bread."),
    ])  # fmt: skip
    claims = session_claims(turns)
    assert [(c["subject"], c["object"], c["subject_entry_id"]) for c in claims if c["predicate"] == "described_as"] == [
        ("Ana's work", "about exile, rivers, and bread", "e1")
    ]
    # "this cake" names a thing: the "it" after it may be the cake, so nothing reaches back
    turns[2]["content"] = "True! I baked this cake because it matters to me. It is about exile, rivers, and bread."
    claims = session_claims(turns)
    assert not [c for c in claims if c["predicate"] == "described_as" and c["subject"] == "Ana's work"]


def test_a_role_one_finds_it_hard_in_is_ones_own() -> None:
    # "It's pretty lonely as a night baker" was nothing; not a hard time guessed at, an age or a group
    assert ("Ana", "identity", "night baker", "assert") in said("We moved to the coast in May. It's pretty lonely as a night baker, but I love the quiet.")
    assert said("It's hard as a night nurse.") == {("Ana", "identity", "night nurse", "assert")}
    assert said("It must be hard as a nurse.") == set()
    assert said("It was tough as a kid.") == set()
    assert said("It's tough as a team, but we manage.") == set()



def test_what_a_plan_is_for_is_a_goal() -> None:
    # the purpose after a dash or a comma was dropped with the clause's end
    assert said("We might buy a small boat - for fun and to show the twins how to sail.") == {
        ("Ana", "considers", "buy a small boat", "assert"),
        ("Ana", "goal", "show the twins how to sail", "assert"),
    }
    assert ("Ana", "goal", "see the maples", "assert") in said("I'm planning a visit to Kyoto, to see the maples.")
    # not the doing of others the plan names, nor talk
    assert not [s for s in said("I'm going to teach the kids to bake bread.") if s[1] == "goal"]
    assert not [s for s in said("I'll call her later, to check in.") if s[1] == "goal"]


def test_how_something_of_the_speakers_is_doing_describes_it() -> None:
    # "doing great" was nothing ("do" is no doing of its own)
    assert said("The bakery's doing great these days.") == {("bakery", "described_as", "doing great", "assert")}
    assert said("My son is doing well at school.") == {("Ana's son", "described_as", "doing well", "assert")}
    assert said("The bakery isn't doing well.") == set()
    assert said("I'm doing great.") == set()


def test_the_audit_of_rules_063_found() -> None:
    # (an audit of rules 0.6.3's output, seed 6666: two errors and a cut quote mark in 100 claims, mended)
    # "the power to", "the chance to": a saying, not a thing had
    assert said("We have the power to change how our street looks.") == set()
    assert said("I have a power drill.") == {("Ana", "has", "power drill", "assert")}
    # a doing of "this" and no more names nothing (not "lean on them for courage")
    assert said("I've been longing for this for a long while!") == set()
    assert said("I lean on them for courage during hard weeks.") == {("Ana", "activity", "lean on them for courage during hard weeks", "assert")}
    # a title opening the object keeps its opening mark with its closing one
    assert said('I loved "Tidewater" by Ana Ruiz.') == {("Ana", "likes", '"Tidewater" by Ana Ruiz', "assert")}


def test_an_event_had_is_a_doing_not_a_thing_owned() -> None:
    # a third audit of rules 0.6.3 (seed 6767): "had a picnic", "had a letdown" were `has`
    assert said("We had a picnic by the canal.") == {("Ana", "activity", "had a picnic by the canal", "assert")}
    assert said("I had a long chat with my aunt.") == {("Ana", "activity", "had a long chat with my aunt", "assert")}
    assert said("We're having trouble with the boiler.") == {("Ana", "activity", "having trouble with the boiler", "assert")}
    assert said("We had kind of a setback on the farm.") == {("Ana", "activity", "had kind of a setback on the farm", "assert")}
    # what is had and owned stays `has`
    assert said("We have two kids.") == {("Ana", "has", "two kids", "assert")}
    assert said("I had a tutor.") == {("Ana", "has", "tutor", "assert")}
    # a favourite doing is liked, not a thing made (`created` "scarves and hats" before)
    assert said("Knitting scarves and hats is my favorite!") == {("Ana", "likes", "Knitting scarves and hats", "assert")}


def test_what_a_doing_told_before_was_for_is_the_speakers_goal() -> None:
    # "It was for a worthy cause - to ..." gave nothing
    assert said("I organised a bake sale at the library. It was for a worthy cause - to buy books for the reading club.") == {
        ("Ana", "activity", "organised a bake sale at the library", "assert"),
        ("Ana", "goal", "buy books for the reading club", "assert"),
    }
    assert ("Ana", "goal", "fix the roof of the old chapel", "assert") in said("We sold our old bikes. It's all for charity, to fix the roof of the old chapel.")
    # not without a doing of the speaker's before (what "it" is, nothing says), not under a hedge,
    # not a cause without a purpose
    assert said("It was for a worthy cause - to buy books for the reading club.") == set()
    assert not [s for s in said("I might run a bake sale. It would be for charity - to buy books.") if s[1] == "goal"]
    assert not [s for s in said("I organised a bake sale at the library. It was for a noble cause.") if s[1] == "goal"]


def test_what_a_dish_is_said_to_come_with_is_what_it_is_made_with() -> None:
    turns = session([
        ("Ana", "I baked my first layer cake yesterday!"),
        ("Bo", "Wow, what flavour is it?"),
        ("Ana", "Thanks! It's gluten-free lemon with raspberry filling and almond cream frosting."),
    ])  # fmt: skip
    claims = session_claims(turns)
    made = [(c["subject"], c["object"], c["subject_entry_id"]) for c in claims if c["predicate"] == "made_with"]
    # the description is cut at six content words, and the frosting was lost with it
    assert sorted(made) == [("Ana's first layer cake", "almond cream frosting", "e1"), ("Ana's first layer cake", "raspberry filling", "e1")]
    assert all(first_failure(Proposal(**{k: c[k] for k in Proposal.model_fields if k in c}), turns[2], None, turns[0]) is None for c in claims if c["predicate"] == "made_with")
    # only of a dish, and only when each item is a thing named (not a clause, not a measure)
    assert not [s for s in said("My new flat is tiny with a balcony and a garden.") if s[1] == "made_with"]
    assert not [s for s in said("I made a pie. It is apple with a crumble top, and I love it.") if s[1] == "made_with"]
    assert not [s for s in said("I made a stew. It's lentil soup with carrots and a dash of pepper.") if s[1] == "made_with"]


def test_a_noun_that_is_an_adjective_too_ends_the_speakers_thing_before_was() -> None:
    # "mural" is an adjective too in WordNet's lists: the thing ran on over "was" ("Ana's mural was"
    # `activity` "inspired by the harbour")
    assert said("My mural was inspired by the harbour.") == {("Ana's mural", "described_as", "inspired by the harbour", "assert")}
    assert said("My new mural was painted by my aunt.") == {("Ana's new mural", "described_as", "painted by my aunt", "assert")}
    assert said("My old bike was stolen last week.") == {("Ana's old bike", "described_as", "stolen", "assert")}


def test_what_made_the_one_event_held_so_describes_it() -> None:
    # "<...> made it <...>" after an event the speaker held was nothing
    text = "We had a lovely time hosting a garden party and inviting the neighbours to bring food. It was fun seeing them chat. All the laughter made it truly memorable."
    assert ("garden party", "described_as", "memorable", "assert") in said(text)
    (p,) = [p for p in clauses.propose(entry(text)) if p.predicate == "described_as"]
    assert p.quote.startswith("We had a lovely time hosting a garden party") and p.quote.endswith("truly memorable") and first_failure(p, entry(text), None, None) is None
    # not a saying ("made it clear"), not after two events, not without one
    assert not [s for s in said("We hosted a garden party. The weather made it clear.") if s[1] == "described_as"]
    assert not [s for s in said("We went to the fair and then to a gala. The music made it special.") if s[1] == "described_as"]
    assert not [s for s in said("I cleaned the house. The music made it special.") if s[1] == "described_as"]


def test_a_doing_that_is_a_sentences_subject_is_what_the_next_its_says_what_it_is_of() -> None:
    # "It's a/an ... of ..." after a sentence whose subject is a doing was nothing
    assert said("Sure, Bo! Cooking for friends is a real joy. It is a slow ritual of sharing and resting.") == {
        ("Cooking for friends", "described_as", "real joy", "assert"),
        ("Cooking for friends", "described_as", "slow ritual of sharing and resting", "assert"),
    }
    # not a time or a season, and only when the "It" opens the very next sentence
    assert said("Morning is my favourite time. It is a quiet stretch of reading.") == set()
    assert not [s for s in said("Cooking for friends is a real joy. We eat late. It is a slow ritual of sharing.") if "ritual" in s[2]]


def test_the_audit_of_rules_064() -> None:
    # (an audit of rules 0.6.4's output, seed 6868: one error in 100 claims, mended) what one finds
    # a thing does is an opinion, not a doing (`activity` "find it calms my nerves ..." before)
    assert said("I find it calms my nerves and eases my stress.") == set()
    assert said("I find that knitting calms me.") == set()
    assert said("I found a great spot by the river.") == {("Ana", "activity", "found a great spot by the river", "assert")}
