"""query/entities.py: the entities a question names, by content-addressed id and by the names and
aliases of the entities mart the asker may see."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from memc.home import MemcHome
from memc.ids import entity_id
from query.entities import named_entities
from views.marts import ENTITIES, mart_path


def _write(home: MemcHome, rows: list[dict]) -> None:
    path = mart_path(home, ENTITIES)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("entity_id", pa.string()), ("scope", pa.string()), ("name", pa.string()), ("aliases", pa.list_(pa.string())), ("visibility", pa.list_(pa.string()))])
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    os.replace(tmp, path)  # a new file, as dbt's export swaps one in


def test_names_and_aliases_the_asker_may_see_are_found_in_the_mart_order(tmp_path):
    home = MemcHome.resolve(tmp_path / "home").ensure()
    _write(home, [
        {"entity_id": "ent_elena", "scope": "team", "name": "Elena", "aliases": ["Lena", "elena p"], "visibility": ["public"]},
        {"entity_id": "ent_mira", "scope": "team", "name": "Mira", "aliases": ["Lena"], "visibility": ["mira"]},
        {"entity_id": "ent_lena_other", "scope": "other", "name": "Lena", "aliases": [], "visibility": ["public"]},
        {"entity_id": "ent_none", "scope": "team", "name": None, "aliases": None, "visibility": ["public"]},
    ])  # fmt: skip
    got = named_entities(home, "where does lena's sister live?", "tomasz", "team")
    assert got == {"ent_elena": "Lena"}  # Mira's alias is hers alone; the other scope's Lena is not asked
    assert named_entities(home, "where does lena live?", "mira", "team") == {"ent_elena": "Lena", "ent_mira": "Lena"}
    assert named_entities(home, "where does lena live?", "tomasz", None) == {"ent_elena": "Lena", "ent_lena_other": "Lena"}
    # a capitalised word is an id in each scope asked, with or without a row
    assert named_entities(home, "is Ola here?", "tomasz", "team") == {entity_id("team", "Ola"): "Ola"}

    # a new version of the mart is read again, names and all
    _write(home, [{"entity_id": "ent_elena", "scope": "team", "name": "Elena", "aliases": ["Elle"], "visibility": ["public"]}])
    assert named_entities(home, "where does lena live?", "tomasz", "team") == {}
    assert named_entities(home, "and elle?", "tomasz", "team") == {"ent_elena": "Elle"}


def test_a_thing_pointed_at_is_no_name_a_question_says(tmp_path):
    # "The studio looks amazing" makes "studio" a subject of the mart; "What did the studio cost?"
    # does not name it (a question's common nouns would otherwise pick such rows everywhere).
    home = MemcHome.resolve(tmp_path / "home").ensure()
    _write(home, [
        {"entity_id": "ent_studio", "scope": "team", "name": "studio", "aliases": [], "visibility": ["public"]},
        {"entity_id": "ent_film", "scope": "team", "name": "Inception", "aliases": [], "visibility": ["public"]},
    ])  # fmt: skip
    assert named_entities(home, "what did the studio cost?", "tomasz", "team") == {}
    assert named_entities(home, "who liked inception?", "tomasz", "team") == {"ent_film": "Inception"}
