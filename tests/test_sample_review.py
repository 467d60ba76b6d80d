"""``loopscope sample`` and ``loopscope review import`` on tests/fixtures/audit/cohorts.jsonl.

Strata over the whole fixture: unrecovered 16, recovered 22, no_error 36 (74
conversations). In 2026-W47 (corrective): unrecovered 2, recovered 16, no_error 18.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopscope.analyses.sampling import STRATA, allocate
from loopscope.analyses.store import connect
from loopscope.cli.app import app

FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "cohorts.jsonl"
runner = CliRunner()


@pytest.fixture
def db(loaded_store) -> Path:  # noqa: ANN001  (tests/conftest.py: the fixture loaded once, copied per test)
    return loaded_store(FIXTURE)


def _sample(db: Path, *args: str) -> dict:
    res = runner.invoke(app, ["sample", "--db", str(db), "--format", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_allocation_equal_thirds_then_proportional_fill() -> None:
    assert allocate(12, {"unrecovered": 16, "recovered": 22, "no_error": 36}) == {"unrecovered": 4, "recovered": 4, "no_error": 4}
    assert allocate(50, {"unrecovered": 5, "recovered": 100, "no_error": 200}) == {"unrecovered": 5, "recovered": 21, "no_error": 24}
    assert allocate(10, {"unrecovered": 1, "recovered": 2, "no_error": 3}) == {"unrecovered": 1, "recovered": 2, "no_error": 3}
    assert allocate(2, {"unrecovered": 0, "recovered": 0, "no_error": 9}) == {"unrecovered": 0, "recovered": 0, "no_error": 2}
    assert allocate(7, {"unrecovered": 9, "recovered": 9, "no_error": 9}) == {"unrecovered": 3, "recovered": 2, "no_error": 2}


def test_sample_same_seed_identical_and_stratified(db: Path) -> None:
    first = _sample(db, "--n", "12", "--seed", "1")
    second = _sample(db, "--n", "12", "--seed", "1")
    assert first == second
    assert first["allocation"] == {"unrecovered": 4, "recovered": 4, "no_error": 4}
    assert first["available"] == {"unrecovered": 16, "recovered": 22, "no_error": 36}
    convs = first["conversations"]
    ids = [c["conversation_id"] for c in convs]
    assert len(ids) == len(set(ids)) == 12
    for stratum in STRATA:
        picked = [c for c in convs if c["stratum"] == stratum]
        assert len(picked) == 4
    # strata are what the data says: kinds are in the ids (see make_logs.py)
    for c in convs:
        kind = c["conversation_id"].split("-")[-2]
        expected = {"gave_up": "unrecovered", "spin": "unrecovered", "open": "unrecovered",
                    "recovered": "recovered", "clean": "no_error", "replay": "no_error"}[kind]
        assert c["stratum"] == expected
    other = _sample(db, "--n", "12", "--seed", "2")
    assert [c["conversation_id"] for c in other["conversations"]] != ids


def test_sample_small_stratum_taken_whole(db: Path) -> None:
    out = _sample(db, "--week", "2026-W47", "--n", "12", "--seed", "7")
    assert out["available"] == {"unrecovered": 2, "recovered": 16, "no_error": 18}
    assert out["allocation"] == {"unrecovered": 2, "recovered": 5, "no_error": 5}
    assert all(c["conversation_id"].startswith("2026-W47") for c in out["conversations"])


def test_sample_more_than_available_takes_everything_once(db: Path) -> None:
    out = _sample(db, "--since", "2026-11-09", "--until", "2026-11-16", "--n", "50", "--seed", "3")
    ids = [c["conversation_id"] for c in out["conversations"]]
    assert len(ids) == len(set(ids)) == 19
    assert all(i.startswith("2026-W46") for i in ids)


def test_sample_through_paths_prints_table(tmp_path: Path) -> None:
    res = runner.invoke(app, ["sample", str(FIXTURE), "--db", ":memory:", "--n", "3", "--seed", "5"])
    assert res.exit_code == 0, res.output
    assert "3 of 74 conversations · seed 5" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--n", "0"], "must be at least 1"),
        (["--week", "2026-47"], "is not an ISO week"),
        (["--week", "2026-W47", "--since", "2026-11-01"], "both set a window"),
        (["--week", "2030-W01"], "no conversation to sample"),
    ],
)
def test_sample_user_errors(db: Path, args: list[str], message: str) -> None:
    res = runner.invoke(app, ["sample", "--db", str(db), *args])
    assert res.exit_code == 1 and message in res.output


def test_review_pack_contents_and_escaping(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "pack"
    res = runner.invoke(app, ["sample", "--db", str(db), "--week", "2026-W46", "--n", "19", "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    files = sorted((out / "conversations").glob("*.md"))
    assert len(files) == 19
    index = (out / "index.md").read_text()
    assert index.count("](conversations/") == 19 and "seed: 1" in index
    rows = list(csv.DictReader((out / "reviews.csv").open()))
    assert len(rows) == 19 and all(r["recovered_cleanly"] == "" for r in rows)
    hostile = next(f for f in files if f.name.endswith("W46-blind-0-gave_up-0.md")).read_text()
    # the message is fenced, control characters visible, nothing else of it outside fences
    assert "~~~text\n<script>alert('x')</script> \\x1b[31mred" in hostile
    assert "\x1b" not in hostile
    outside = hostile.split("~~~")[0::2]
    assert not any("<script>" in part for part in outside)
    spin = next(f for f in files if "spin" in f.name).read_text()
    assert "retried the same call (same arguments) at step 1 → error again (aborted)" in spin
    assert "the loop exited with budget\\_exceeded" in spin
    recovered = next(f for f in files if "recovered-0" in f.name).read_text()
    assert "retried the tool with changed arguments at step 1 → ok" in recovered
    # writing again over a pack with a reviews.csv needs --force
    again = runner.invoke(app, ["sample", "--db", str(db), "--week", "2026-W46", "--n", "3", "--seed", "1", "--out", str(out)])
    assert again.exit_code == 1 and "already exists" in again.output


def _fill(path: Path, verdicts: dict[str, dict[str, str]], extra_rows: list[list[str]] = ()) -> None:
    rows = list(csv.DictReader(path.open()))
    fields = list(rows[0].keys())
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            r.update(verdicts.get(r["conversation_id"], {}))
            w.writerow(r)
        for extra in extra_rows:
            fh.write(",".join(extra) + "\n")


def test_review_import_round_trip(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "pack"
    res = runner.invoke(app, ["sample", "--db", str(db), "--week", "2026-W46", "--n", "19", "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    reviews = out / "reviews.csv"
    ids = [r["conversation_id"] for r in csv.DictReader(reviews.open())]
    spin = next(i for i in ids if "spin" in i)
    gave = next(i for i in ids if "gave_up-1" in i)
    clean = next(i for i in ids if "clean-0" in i)
    rec = next(i for i in ids if "recovered-0" in i)
    _fill(reviews, {
        spin: {"recovered_cleanly": "no", "spun": "yes", "gave_up": "no", "generic_apology": "yes", "notes": "looped on 'Error'"},
        gave: {"recovered_cleanly": "NO", "spun": "n", "gave_up": "Y", "generic_apology": "no"},
        clean: {"recovered_cleanly": "yes", "spun": "no", "gave_up": "no", "generic_apology": ""},
        rec: {"recovered_cleanly": "maybe", "spun": "no"},
    }, extra_rows=[["unknown-conv", "", "", "", "", "", "yes", "no", "no", "no", ""]])
    res = runner.invoke(app, ["review", "import", str(reviews), "--db", str(db)])
    assert res.exit_code == 1, res.output
    assert "imported 3 review(s) (0 replaced); 15 row(s) not reviewed yet; 2 rejected" in res.stdout
    rec_line = ids.index(rec) + 2
    assert f"line {rec_line}: recovered_cleanly is 'maybe', not yes/no/blank" in " ".join(res.output.split())
    assert "line 21: conversation 'unknown-conv' is not in the database" in " ".join(res.output.split())
    con = connect(db)
    stored = {r[0]: r[1:] for r in con.execute(
        "SELECT conversation_id, recovered_cleanly, spun, gave_up, generic_apology, notes FROM reviews").fetchall()}
    con.close()
    assert stored[spin] == (False, True, False, True, "looped on 'Error'")
    assert stored[gave] == (False, False, True, False, None)
    assert stored[clean] == (True, False, False, None, None)
    # fix the bad row and import again: idempotent per conversation
    _fill(reviews, {rec: {"recovered_cleanly": "yes"}, spin: {"notes": "second look"}})
    lines = reviews.read_text().splitlines()
    reviews.write_text("\n".join(l for l in lines if not l.startswith("unknown-conv")) + "\n")
    res = runner.invoke(app, ["review", "import", str(reviews), "--db", str(db), "--format", "json"])
    assert res.exit_code == 0, res.output
    out_json = json.loads(res.stdout)
    assert out_json["imported"] == 4 and out_json["replaced"] == 3 and out_json["errors"] == []
    con = connect(db)
    assert con.execute("SELECT count(*) FROM reviews").fetchone()[0] == 4
    assert con.execute("SELECT notes FROM reviews WHERE conversation_id = ?", [spin]).fetchone()[0] == "second look"
    con.close()


def test_review_import_bad_files(db: Path, tmp_path: Path) -> None:
    missing = runner.invoke(app, ["review", "import", str(tmp_path / "nope.csv"), "--db", str(db)])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    bad = tmp_path / "bad.csv"
    bad.write_text("conversation_id,notes\nx,y\n")
    res = runner.invoke(app, ["review", "import", str(bad), "--db", str(db)])
    assert res.exit_code == 1 and "lacks the column(s) recovered_cleanly, spun, gave_up, generic_apology" in " ".join(res.output.split())
    latin = tmp_path / "latin.csv"
    latin.write_bytes("conversation_id,recovered_cleanly,spun,gave_up,generic_apology\ncaf\xe9,yes,no,no,no\n".encode("latin-1"))
    res = runner.invoke(app, ["review", "import", str(latin), "--db", str(db)])
    assert res.exit_code == 1 and "is not UTF-8" in res.output


SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
# sample_logs/EXPECTED.md: the 7 conversations with a first unrecovered error, and those whose
# errors were all recovered (12); the other 17 have no error.
UNRECOVERED = {"c02-date-blind", "c05-date-crash", "c10-conflict-blind", "c12-roomtype-crash",
               "c14-noname-corrective", "c17-soldout-blind", "c24-died-corrective"}
RECOVERED_ONLY = {"c01-date-corrective", "c07-roomtype-corrective", "c08-roomtype-blind", "c09-conflict-corrective",
                  "c15-noname-blind", "c16-soldout-corrective", "b05-deposit-corrective", "b06-deposit-blind",
                  "c20-reversed-corrective", "c21-reversed-blind", "c22-date2-corrective", "c23-date2-blind"}


def test_sample_on_sample_logs_seed_1_identical_and_stratified(tmp_path: Path) -> None:
    runs = []
    for i in range(2):
        out = tmp_path / f"pack{i}"
        res = runner.invoke(app, ["sample", str(SAMPLE_LOGS), "--db", ":memory:", "--n", "12", "--seed", "1",
                                  "--out", str(out), "--format", "json"])
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        data.pop("pack")
        runs.append((data, (out / "reviews.csv").read_text(), sorted(p.name for p in (out / "conversations").iterdir())))
    assert runs[0] == runs[1]
    data = runs[0][0]
    assert data["available"] == {"unrecovered": 7, "recovered": 12, "no_error": 17}
    assert data["allocation"] == {"unrecovered": 4, "recovered": 4, "no_error": 4}
    for c in data["conversations"]:
        cid = c["conversation_id"]
        expected = "unrecovered" if cid in UNRECOVERED else "recovered" if cid in RECOVERED_ONLY else "no_error"
        assert c["stratum"] == expected, cid
    assert len({c["conversation_id"] for c in data["conversations"]}) == 12
    # the default n=50 takes all 36 conversations, each once
    res = runner.invoke(app, ["sample", str(SAMPLE_LOGS), "--db", ":memory:", "--seed", "1", "--format", "json"])
    ids = [c["conversation_id"] for c in json.loads(res.stdout)["conversations"]]
    assert len(ids) == len(set(ids)) == 36


def test_review_round_trip_on_sample_logs(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    out = tmp_path / "pack"
    res = runner.invoke(app, ["sample", str(SAMPLE_LOGS), "--db", str(db), "--n", "12", "--seed", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    reviews = out / "reviews.csv"
    rows = list(csv.DictReader(reviews.open()))
    for r in rows:  # a reviewer who agrees with every computed fact
        r.update(recovered_cleanly="no" if r["stratum"] == "unrecovered" or r["computed_spun"] == "yes" else "yes",
                 spun=r["computed_spun"], gave_up=r["computed_gave_up"], generic_apology="no")
    with reviews.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    for _ in range(2):  # importing twice changes nothing
        res = runner.invoke(app, ["review", "import", str(reviews), "--db", str(db), "--format", "json"])
        assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["replaced"] == 12
    audit = json.loads(runner.invoke(app, ["audit", "--db", str(db), "--format", "json"]).stdout)
    assert audit["reviews"]["reviewed"] == 12 and audit["reviews"]["disagreements"] == []
    assert all(v["agreement"] == 1.0 for v in audit["reviews"]["verdicts"].values())
    c10 = next(p for p in (out / "conversations").iterdir() if "c10-conflict-blind" in p.name).read_text()
    assert "retried the same call (same arguments)" in c10


def test_sample_csv_and_reported_seed(db: Path) -> None:
    res = runner.invoke(app, ["sample", "--db", str(db), "--n", "3", "--seed", "4", "--format", "csv"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "conversation_id,stratum,computed_class,agent,first_ts,prompts,tool_calls,errors,unrecovered"
    assert len(lines) == 4
    # without --seed, the seed drawn is reported so the sample can be drawn again
    res = runner.invoke(app, ["sample", "--db", str(db), "--n", "3", "--format", "json"])
    seed = json.loads(res.stdout)["seed"]
    assert f"seed {seed} (pass --seed {seed} to draw this sample again)" in res.stderr
    again = _sample(db, "--n", "3", "--seed", str(seed))
    assert again["conversations"] == json.loads(res.stdout)["conversations"]


def test_review_import_bom_extra_columns_and_pack_folder(db: Path, tmp_path: Path) -> None:
    """A sheet saved with a BOM and an added column still imports; the pack folder stands for its reviews.csv."""
    out = tmp_path / "pack"
    res = runner.invoke(app, ["sample", "--db", str(db), "--week", "2026-W46", "--n", "3", "--seed", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    reviews = out / "reviews.csv"
    rows = list(csv.reader(reviews.open(encoding="utf-8")))
    header = rows[0] + ["reviewer"]
    body = [r + ["ann"] for r in rows[1:]]
    body[0][header.index("spun")] = "yes"
    body[1][header.index("gave_up")] = "perhaps"
    with reviews.open("w", encoding="utf-8-sig", newline="") as f:  # Excel's "CSV UTF-8" writes a BOM
        csv.writer(f).writerows([header, *body])
    res = runner.invoke(app, ["review", "import", str(out), "--db", str(db), "--format", "json"])
    assert res.exit_code == 1, res.output
    result = json.loads(res.stdout)
    assert result["imported"] == 1 and result["unreviewed"] == 1
    assert [e["line"] for e in result["errors"]] == [3] and "gave_up is 'perhaps'" in result["errors"][0]["reason"]
    con = connect(db)
    assert con.execute("SELECT conversation_id, spun FROM reviews").fetchall() == [(body[0][0], True)]
    con.close()


def test_review_import_folder_without_csv_and_broken_quotes(db: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(app, ["review", "import", str(empty), "--db", str(db)])
    assert res.exit_code == 1 and "is a folder with no reviews.csv" in " ".join(res.output.split())
    broken = tmp_path / "broken.csv"
    broken.write_text("conversation_id,recovered_cleanly,spun,gave_up,generic_apology,notes\n"
                      'x,yes,no,no,no,"unterminated note\n')
    res = runner.invoke(app, ["review", "import", str(broken), "--db", str(db)])
    assert res.exit_code == 1 and "line 2:" in res.output and "Traceback" not in res.output


def test_sample_bad_week_fails_before_loading(tmp_path: Path) -> None:
    """Options are parsed before PATHs are loaded: a typo costs nothing and names the option."""
    res = runner.invoke(app, ["sample", str(tmp_path / "missing.jsonl"), "--db", ":memory:", "--week", "2026-W60"])
    assert res.exit_code == 1 and "--week '2026-W60' does not exist" in res.output


def test_sample_out_that_cannot_be_a_folder(db: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    for out, message in ((blocker, "is a file"), (blocker / "pack", "blocker is a file")):
        res = runner.invoke(app, ["sample", "--db", str(db), "--n", "3", "--seed", "1", "--out", str(out)])
        assert res.exit_code == 1, res.output
        assert message in " ".join(res.output.split()) and "Traceback" not in res.output
    assert blocker.read_text() == "not a folder"  # nothing lost


def test_review_sample_is_the_same_command_as_sample(tmp_path: Path) -> None:
    """``review`` is one noun with its verbs; ``loopscope sample`` stays as the older spelling."""
    args = [str(SAMPLE_LOGS), "--db", ":memory:", "--n", "6", "--seed", "1", "--format", "json"]
    grouped = runner.invoke(app, ["review", "sample", *args])
    old = runner.invoke(app, ["sample", *args])
    assert grouped.exit_code == 0 and old.exit_code == 0, grouped.output + old.output
    assert json.loads(grouped.stdout) == json.loads(old.stdout)
    assert len(json.loads(grouped.stdout)["conversations"]) == 6
    top = runner.invoke(app, ["--help"]).output
    assert "review" in top and "\n│ sample " not in top  # the old spelling is hidden from --help
