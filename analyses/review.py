"""Reviewer verdicts: import a filled-in reviews.csv, and compare verdicts with the computed classes.

``import_reviews(con, path)`` reads the ``reviews.csv`` of a review pack
(``review_pack``). Each row is checked on its own; a bad row (unknown
conversation, a verdict that is not yes/no, a conversation twice in the file)
is reported with its line number and skipped, and every good row is stored.
A row with every verdict and the notes blank is *not reviewed yet* and is
skipped silently (counted). Storing is idempotent per conversation: a
re-import replaces that conversation's verdicts.

Verdict values (case-insensitive): ``yes``/``y``/``true``/``1``/``x``,
``no``/``n``/``false``/``0``, or blank (no verdict).

``agreement(con)`` sets the verdicts beside what the analyses compute *now*
for each reviewed conversation (the whole store counts):

- ``recovered_cleanly`` vs. computed: no unrecovered error and no retry loop;
- ``spun`` vs. computed: the conversation has a retry loop;
- ``gave_up`` vs. computed: it has an error of class ``gave_up``;
- ``generic_apology`` has no computed counterpart (the final answer is not
  logged): only the count of yes verdicts is reported.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from loopscope.analyses import incidents
from loopscope.analyses.errors import InputNotFound, LoopscopeError
from loopscope.analyses.review_csv import CSV_FORMULA_START, VERDICT_COLUMNS
from loopscope.analyses.selection import Selection
from loopscope.analyses.store.transaction import transaction

YES = {"yes", "y", "true", "1", "x"}
NO = {"no", "n", "false", "0"}
REQUIRED_COLUMNS = ("conversation_id", *VERDICT_COLUMNS)
COMPARED = ("recovered_cleanly", "spun", "gave_up")

REVIEW_COUNT_SQL = "SELECT count(*) FROM reviews"
REVIEWED_IDS_SQL = "SELECT conversation_id FROM reviews"
KNOWN_CONVERSATIONS_SQL = "SELECT DISTINCT conversation_id FROM prompts_v WHERE list_contains(?, conversation_id)"
UPSERT_REVIEW_SQL = """
INSERT OR REPLACE INTO reviews
    (conversation_id, stratum, computed_class, recovered_cleanly, spun, gave_up, generic_apology,
     notes, source_file, line_no, imported_at)
VALUES ($conversation_id, $stratum, $computed_class, $recovered_cleanly, $spun, $gave_up, $generic_apology,
        $notes, $source_file, $line_no, current_timestamp)
"""
# Reviewed conversations with their error counts now (retry loops come from
# incidents.retry_loops, so the spin definition lives in one place).
REVIEWS_WITH_ERRORS_SQL = """
WITH errs AS (
    SELECT conversation_id,
           count(*) FILTER (WHERE error_class <> 'recovered') AS unrecovered,
           count(*) FILTER (WHERE error_class = 'gave_up') AS gave_up_errors,
           count(*) AS errors
    FROM errors_v
    WHERE conversation_id IN (SELECT conversation_id FROM reviews)
    GROUP BY conversation_id
)
SELECT
    r.*,
    coalesce(e.errors, 0) AS errors_now,
    coalesce(e.unrecovered, 0) AS unrecovered_now,
    coalesce(e.gave_up_errors, 0) > 0 AS computed_gave_up
FROM reviews r
LEFT JOIN errs e USING (conversation_id)
ORDER BY r.conversation_id
"""


@dataclass(frozen=True)
class RowError:
    """A rejected row."""

    line: int
    conversation_id: str | None
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass
class ImportResult:
    """What ``import_reviews`` did."""

    path: str
    imported: int = 0
    replaced: int = 0
    unreviewed: int = 0
    errors: list[RowError] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {**{k: v for k, v in asdict(self).items() if k != "errors"},
                "errors": [{"line": e.line, "conversation_id": e.conversation_id, "reason": e.reason} for e in self.errors]}


def parse_verdict(value: str | None) -> bool | None:
    """``yes``/``no``/blank -> True/False/None.

    Raises:
        ValueError: anything else.
    """
    text = (value or "").strip().lower()
    if not text:
        return None
    if text in YES:
        return True
    if text in NO:
        return False
    raise ValueError(value)


def _undefuse(text: str) -> str:
    # The pack prefixes formula-looking cells with ' (review_pack.csv_safe).
    if text.startswith("'") and text[1:].startswith(CSV_FORMULA_START):
        return text[1:]
    return text


def import_reviews(con: duckdb.DuckDBPyConnection, path: str | Path) -> ImportResult:
    """Validate and store the verdicts of a filled-in reviews.csv.

    Raises:
        InputNotFound: the file does not exist (a pack folder stands for its reviews.csv).
        LoopscopeError: it is not UTF-8 CSV with the verdict columns.
    """
    path = Path(path)
    if path.is_dir() and (path / "reviews.csv").is_file():  # the pack's folder: its reviews.csv
        path = path / "reviews.csv"
    if path.is_dir():
        raise InputNotFound(f"{path} is a folder with no reviews.csv",
                            hint="give the reviews.csv of a pack written by loopscope review sample --out DIR")
    if not path.is_file():
        raise InputNotFound(f"{path} does not exist", hint="give the reviews.csv of a pack written by loopscope review sample --out DIR")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoopscopeError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                             hint="save the sheet as CSV UTF-8") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise LoopscopeError(f"{path}: line 1 lacks the column(s) {', '.join(missing)}",
                             hint="keep the header row of the reviews.csv that loopscope review sample wrote")
    reader.fieldnames = header
    result = ImportResult(path=str(path))
    parsed: list[tuple[int, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        conv = _undefuse((row.get("conversation_id") or "").strip())
        if None in row:
            result.errors.append(RowError(line, conv or None, "more cells than columns in the header"))
            continue
        verdicts: dict[str, bool | None] = {}
        bad = []
        for col in VERDICT_COLUMNS:
            try:
                verdicts[col] = parse_verdict(row.get(col))
            except ValueError:
                bad.append(f"{col} is {row.get(col)!r}, not yes/no/blank")
        notes = (row.get("notes") or "").strip()
        if not conv:
            result.errors.append(RowError(line, None, "conversation_id is empty"))
            continue
        if bad:
            result.errors.append(RowError(line, conv, "; ".join(bad)))
            continue
        if all(v is None for v in verdicts.values()) and not notes:
            result.unreviewed += 1
            continue
        if conv in seen:
            result.errors.append(RowError(line, conv, f"conversation {conv!r} is already on line {seen[conv]}"))
            continue
        seen[conv] = line
        parsed.append((line, {"conversation_id": conv, "stratum": (row.get("stratum") or "").strip() or None,
                              "computed_class": (row.get("computed_class") or "").strip() or None,
                              **verdicts, "notes": notes or None, "source_file": str(path.resolve()), "line_no": line}))
    known = {r[0] for r in con.execute(KNOWN_CONVERSATIONS_SQL, [[p["conversation_id"] for _, p in parsed]]).fetchall()}
    existing = {r[0] for r in con.execute(REVIEWED_IDS_SQL).fetchall()}
    with transaction(con):
        for line, params in parsed:
            if params["conversation_id"] not in known:
                result.errors.append(RowError(line, params["conversation_id"],
                                              f"conversation {params['conversation_id']!r} is not in the database"))
                continue
            con.execute(UPSERT_REVIEW_SQL, params)
            result.imported += 1
            result.replaced += params["conversation_id"] in existing
    result.errors.sort(key=lambda e: e.line)
    return result


@dataclass(frozen=True)
class Disagreement:
    """A verdict that differs from the computed fact."""

    conversation_id: str
    verdict: str
    reviewer: bool
    computed: bool
    notes: str | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


def agreement(con: duckdb.DuckDBPyConnection, conversation_ids: set[str] | None = None) -> dict[str, Any]:
    """Reviewer verdicts beside the computed classes: per verdict agreement and the disagreements.

    Args:
        con: an open store.
        conversation_ids: only reviews of these conversations (None: every review).

    Returns:
        ``{"reviewed": n, "verdicts": {name: {"compared", "agree", "agreement", "yes"}},
        "generic_apology_yes": n, "disagreements": [...], "reviews": [...]}``
    """
    rows: list[dict[str, Any]] = []
    # Nothing reviewed yet (the usual case): skip the scan of errors_v.
    if con.execute(REVIEW_COUNT_SQL).fetchone()[0]:
        cur = con.execute(REVIEWS_WITH_ERRORS_SQL)
        names = [d[0] for d in cur.description or []]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    if conversation_ids is not None:
        rows = [r for r in rows if r["conversation_id"] in conversation_ids]
    spinning = set()
    if rows:
        only = Selection(conversation_ids=tuple(r["conversation_id"] for r in rows))
        spinning = {loop.conversation_id for loop in incidents.retry_loops(con, only)}
    for r in rows:
        r["computed_spun"] = r["conversation_id"] in spinning
        r["computed_recovered_cleanly"] = r["unrecovered_now"] == 0 and not r["computed_spun"]
    verdicts: dict[str, dict[str, Any]] = {}
    disagreements: list[Disagreement] = []
    for col in COMPARED:
        compared = agree = yes = 0
        for r in rows:
            if r[col] is None:
                continue
            compared += 1
            yes += bool(r[col])
            if bool(r[col]) == bool(r[f"computed_{col}"]):
                agree += 1
            else:
                disagreements.append(Disagreement(r["conversation_id"], col, bool(r[col]), bool(r[f"computed_{col}"]), r["notes"]))
        verdicts[col] = {"compared": compared, "agree": agree, "agreement": agree / compared if compared else None, "yes": yes}
    disagreements.sort(key=lambda d: (d.conversation_id, COMPARED.index(d.verdict)))
    return {
        "reviewed": len(rows),
        "verdicts": verdicts,
        "generic_apology_yes": sum(1 for r in rows if r["generic_apology"]),
        "disagreements": [d.to_dict() for d in disagreements],
        "reviews": [
            {k: r[k] for k in ("conversation_id", "stratum", "computed_class", *VERDICT_COLUMNS, "notes",
                               "computed_recovered_cleanly", "computed_spun", "computed_gave_up")}
            for r in rows
        ],
    }
