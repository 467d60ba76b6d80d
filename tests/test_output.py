"""Untrusted text stays inert in every output format."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from loopscope.cli.render.output import inert, plain, to_csv, to_json

HOSTILE = "boom \x1b[31mred\x1b[0m [bold]markup[/bold] \x9b2J <script>alert(1)</script> \x07"


def test_inert_escapes_markup_and_controls() -> None:
    out = inert(HOSTILE)
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out
    assert "\\x1b[31m" in out
    assert "\\[bold]" in out


def test_json_round_trips_and_escapes_every_control() -> None:
    text = to_json({"message": HOSTILE})
    assert not any(0x00 <= ord(c) < 0x20 and c not in "\n " or 0x7F <= ord(c) <= 0x9F for c in text)
    assert json.loads(text) == {"message": HOSTILE}


def test_csv_defuses_formulas_and_controls() -> None:
    text = to_csv([{"m": "=HYPERLINK(\"x\")", "n": HOSTILE}], ["m", "n"])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][0] == "'=HYPERLINK(\"x\")"
    assert rows[1][1] == plain(HOSTILE)
    assert "\x1b" not in text


def test_naive_timestamps_are_marked_utc() -> None:
    import datetime as dt

    assert json.loads(to_json({"ts": dt.datetime(2026, 11, 21, 8, 0, 1, 5)})) == {"ts": "2026-11-21T08:00:01.000005Z"}
    assert to_csv([{"ts": dt.datetime(2026, 11, 21)}], ["ts"]).splitlines()[1] == "2026-11-21T00:00:00Z"


def test_json_and_csv_lists_are_streamed_with_the_same_text(capsys: Any) -> None:
    """write_json / write_csv write long lists item by item; the text is that of the whole document."""
    import datetime as dt

    from loopscope.cli.render.output import to_csv, to_json, write_csv, write_json

    lists: list[list[Any]] = [
        [], [1, 2], [[]], [{}], [{"a": [1, {"b": None}], "t": dt.datetime(2026, 1, 1)}, "x\u009b\ny\u202e"],
    ]
    for items in lists:
        write_json(items)
        assert capsys.readouterr().out == to_json(items) + "\n"
        write_json(iter(items))  # a generator, e.g. rows read from a cursor in batches
        assert capsys.readouterr().out == to_json(items) + "\n"
    write_json({"k": [1]})
    assert capsys.readouterr().out == to_json({"k": [1]}) + "\n"
    rows = [{"a": "=1+2", "b": None}, {"a": "x\ny", "b": [1]}]
    write_csv(iter(rows), ["a", "b"])
    assert capsys.readouterr().out == to_csv(rows, ["a", "b"])
