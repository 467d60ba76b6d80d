"""Untrusted text stays inert in every output format."""

from __future__ import annotations

import csv
import io
import json

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
