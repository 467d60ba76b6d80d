"""``print_fitted``'s quick width: the same figure as rich's measurement of the table at its narrowest."""

from __future__ import annotations

import io
import itertools

import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from loopscope.cli.render.output import _narrowest_width, measured_narrowest_width, print_fitted

WORDS = ["", "x", "check_availability", "Invalid date 'x'. Use YYYY-MM-DD.", "a b c d e f g", "[dim]ids[/dim]",
         "ünïcödé 日本語 wide", "c02-date-blind\n[dim]p1[/dim]", "word " * 30]


def _rich_way(out: Console, table: Table) -> int:
    return measured_narrowest_width(out, table, [c for c in table.columns if not c.no_wrap])


def _table(seed: int, padding: tuple[int, int], show_edge: bool, the_box: box.Box | None) -> Table:
    table = Table(title="t", box=the_box, padding=padding, show_edge=show_edge, collapse_padding=seed % 2 == 0,
                  pad_edge=seed % 3 != 0)
    kinds = [dict(no_wrap=True), dict(min_width=24, overflow="ellipsis"), dict(width=13), dict(no_wrap=True, justify="right"),
             dict(min_width=5), dict(no_wrap=True, min_width=3)]
    columns = [kinds[(seed + i) % len(kinds)] for i in range(1 + seed % 5)]
    for i, kind in enumerate(columns):
        table.add_column(WORDS[(seed + i) % len(WORDS)] or "h", **kind)
    for r in range(seed % 4):
        table.add_row(*(WORDS[(seed * 7 + r * 3 + i) % len(WORDS)] for i in range(len(columns))))
    return table


@pytest.mark.parametrize("seed", range(40))
def test_the_quick_width_is_richs(seed: int) -> None:
    out = Console(file=io.StringIO(), width=100, highlight=False, soft_wrap=False)
    for padding, show_edge, the_box in itertools.product([(0, 1), (0, 0), (0, 2)], [True, False],
                                                         [box.SIMPLE_HEAD, box.ROUNDED, None]):
        table = _table(seed, padding, show_edge, the_box)
        quick = _narrowest_width(out, table, [c for c in table.columns if not c.no_wrap])
        assert quick is not None
        assert quick == _rich_way(out, table)


def test_tables_it_does_not_cover_are_measured_the_rich_way() -> None:
    out = Console(file=io.StringIO(), width=40, highlight=False)
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    table.add_column("free")  # neither a width nor a min_width: its cells decide
    table.add_row("c02-date-blind", "")
    assert _narrowest_width(out, table, [table.columns[1]]) is None
    print_fitted(out, table)
    assert "c02-date-blind" in out.file.getvalue()  # type: ignore[attr-defined]
