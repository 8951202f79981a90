"""Content-addressed ids and the canonical JSON they and the views' row fingerprints hash
(memc/ids.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pyarrow as pa

from memc.ids import json_rows


def test_json_rows_encode_as_the_rows_python_values_do():
    # What row hashes (evidence index) and graph versions are made of: a change in these bytes
    # would replace every stored row once. Timestamps are made into text in Arrow.
    when = [datetime(2024, 5, 14, 9), datetime(2024, 5, 14, 9, 0, 0, 5), None, datetime(1969, 12, 31, 23, 59, 59, 999999), datetime(1, 1, 1)]
    for tz in (None, "UTC"):
        stamps = pa.array([w.replace(tzinfo=timezone.utc) if w and tz else w for w in when], pa.timestamp("us", tz=tz))
        table = pa.table({"at": stamps, "text": ['é "q"\n', None, "x", "", "y"], "ids": [["a"], [], None, ["b", "c"], ["d"]], "n": [1, 2, 3, 4, 5]})
        encode = json.JSONEncoder(sort_keys=True, default=str, ensure_ascii=False).encode
        assert [encode(r) for r in json_rows(table)] == [encode(r) for r in table.to_pylist()]
    seconds = pa.table({"at": pa.array([datetime(2024, 5, 14, 9)], pa.timestamp("s"))})  # not made in Arrow: as to_pylist
    assert list(json_rows(seconds)) == seconds.to_pylist()
