"""A learned baseline for lint's ``generic`` verdict, measured against the hand-written rules.

Is the limit on lint's accuracy the rules or the data? This script trains a small, plain text
classifier on the labelled fixtures (``tests/fixtures/error_messages*.jsonl``) and scores it where
the rules were never tuned: on a fixture set it did not train on.

- **model**: logistic regression over TF-IDF word 1-2-grams of the message's template (values masked
  by ``template_of``: ``<path>``, ``'<*>'``, ``<num>``...) and character 2-5-grams of the raw text.
  Its regularisation C and its decision threshold are chosen inside the training sets only (grouped
  5-fold cross-validation, the groups being the fixture sets).
- **hybrid**: the rules' verdict, overridden where the model is confident. "Confident" is set from
  the model's own out-of-fold probabilities on the training sets (the band of probabilities where it
  was right at least 95% of the time), never from the rules' accuracy there: the rules were tuned on
  every fixture set, so on any of them they look nearly perfect and would always win.
- **rules**: ``loopscope.analyses.lint.lint_message``. On every fixture set the rules were tuned on
  that set, so their figure on a held-out fold is optimistic (a tuning figure); their honest figure
  is each set's first look, recorded in docs/lint.md (pooled below; ``--history`` replays each one with
  the rules of its commit, run from git, and a learner trained only on the sets labelled before it).

The rules' verdict is not a feature of the model: under leave-one-set-out it carries the held-out
set's labels (the rules were tuned on it), and a learner given it learns to copy it.

Usage::

    python benchmarks/lint_learned.py                  # leave-one-set-out, per set and pooled
    python benchmarks/lint_learned.py --errors         # ... and every message one of the three gets wrong
    python benchmarks/lint_learned.py --history        # ... and each first look replayed (slower: git, old rules)
    python benchmarks/lint_learned.py --curve          # ... and the learning curve
    python benchmarks/lint_learned.py --eval FILE      # train on every fixture set (not FILE), score FILE
    python benchmarks/lint_learned.py --eval FILE --errors

FILE is JSON lines with ``message`` and ``label`` (``generic`` / ``instructive``), like the fixtures.
Deterministic (fixed seeds, liblinear) and a few seconds of CPU. Needs scikit-learn: ``pip install
-e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix, hstack, vstack
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GroupKFold

from loopscope.analyses.lint import lint_message
from loopscope.analyses.lint.templates import template_of

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
SEED = 0
C_GRID = (8.0, 32.0)
INNER_FOLDS = 5
CONFIDENT = 0.95  # the hybrid overrides the rules where the model was right this often out of fold

# Short names of the fixture sets (tests/test_lint_accuracy.py), in the order they were labelled.
SET_NAMES = {
    "error_messages.jsonl": "first",
    "error_messages_fresh.jsonl": "fresh",
    "error_messages_real.jsonl": "real",
    "error_messages_untuned.jsonl": "A",
    "error_messages_untuned2.jsonl": "B",
    "error_messages_untuned3.jsonl": "C",
    "error_messages_untuned4.jsonl": "D",
    "error_messages_untuned5.jsonl": "E",
    "error_messages_heldout.jsonl": "H",
    "error_messages_untuned6.jsonl": "I",
    "error_messages_untuned7.jsonl": "J",
    "error_messages_untuned8.jsonl": "K",
    "error_messages_heldout_l.jsonl": "L",
    "error_messages_untuned9.jsonl": "M",
    "error_messages_untuned10.jsonl": "O",
    "error_messages_heldout_n.jsonl": "N",
    "error_messages_untuned11.jsonl": "P",
    "error_messages_heldout_q.jsonl": "Q",
    "error_messages_heldout_r.jsonl": "R",
    "error_messages_heldout_s.jsonl": "S",
    "error_messages_untuned12.jsonl": "T",
    "error_messages_heldout_u.jsonl": "U",
    "error_messages_heldout_v.jsonl": "V",
    "error_messages_heldout_w.jsonl": "W",
}
FIRST_THREE = ("first", "fresh", "real")

# The rules' first look at each set (precision, recall), as docs/lint.md records it: the rules of that
# moment on a set labelled before they ran on it. "held-out third" is the SHA-1 third of the first three
# files (tests/test_lint_accuracy.py); W's is main's rules (88997d3), the better of its two first looks.
FIRST_LOOK = {
    "held-out third": (0.887, 0.940),
    "A": (0.737, 0.700),
    "B": (0.583, 0.700),
    "C": (0.714, 0.714),
    "D": (0.625, 0.500),
    "E": (0.607, 0.810),
    "H": (0.929, 0.867),
    "I": (0.538, 0.583),
    "J": (0.857, 0.600),
    "K": (0.588, 0.769),
    "L": (0.889, 0.615),
    "M": (0.821, 0.885),
    "O": (0.889, 0.667),
    "N": (0.857, 0.900),
    "P": (0.733, 1.000),
    "Q": (0.889, 0.727),
    "R": (1.000, 0.556),
    "S": (1.000, 0.714),
    "T": (0.600, 0.429),
    "U": (0.769, 0.714),
    "V": (0.500, 0.500),
    "W": (0.756, 0.723),
}

# The commit whose rules gave each first look (docs/lint.md, tests/test_lint_accuracy.py); L's and S's
# first looks name no commit: the last change to analyses/lint before each was labelled (8025703 before
# 40e6f02, 2e76ef6, round 5, before S's evaluation). ``--history`` runs them from git.
FIRST_LOOK_RULES = {
    "held-out third": "89a2528", "A": "7608325", "B": "a2c34f6", "C": "9c1d1b3", "D": "9c1d1b3",
    "E": "696fe31", "H": "696fe31", "I": "78e4160", "J": "5f8610a", "K": "2ca9b42", "L": "8025703",
    "M": "37133e3", "O": "191909e", "N": "9c132c6", "P": "9c132c6", "Q": "f394124", "R": "7eae950",
    "S": "2e76ef6", "T": "b763113", "U": "4e53a21", "V": "9dba1a9", "W": "88997d3",
}  # fmt: skip

# What the rules had been tuned on (or could have been) when each set got its first look: the sets
# labelled before it. A learner trained on exactly these is the like-for-like comparison with the
# rules' first look. Sets evaluated with the same rules share a stage and never train on each other.
STAGE = {
    "held-out third": 1,
    "A": 2, "B": 3, "C": 4, "D": 4, "E": 5, "H": 5, "I": 6, "J": 7, "K": 8, "L": 9, "M": 10, "O": 11,
    "N": 12, "P": 12, "Q": 13, "R": 14, "S": 15, "T": 16, "U": 17, "V": 18, "W": 19,
}  # fmt: skip
LATER = 11  # from set O on, the learner trains on 900 messages or more: the later first looks


@dataclass
class Row:
    message: str
    generic: bool
    group: str  # the fixture set (one fold)
    rules: bool = False
    rule_ids: tuple[str, ...] = ()
    template: str = ""

    def __post_init__(self) -> None:
        self.template = template_of(self.message)


def held_out_third(message: str) -> bool:
    """The SHA-1 third of the first three files (tests/test_lint_accuracy.py's "held-out third")."""
    return int(hashlib.sha1(message.encode("utf-8")).hexdigest(), 16) % 3 == 0


def read_rows(path: Path, group: str) -> list[Row]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj.get("label") not in ("generic", "instructive"):
            raise SystemExit(f"{path}, line {n}: label must be 'generic' or 'instructive', got {obj.get('label')!r}")
        rows.append(Row(obj["message"], obj["label"] == "generic", group))
    return rows


def fixture_rows(exclude: Path | None = None) -> list[Row]:
    rows: list[Row] = []
    order = list(SET_NAMES)
    for path in sorted(FIXTURES.glob("error_messages*.jsonl"), key=lambda p: (order.index(p.name) if p.name in order else len(order), p.name)):
        if exclude is not None and path.resolve() == exclude.resolve():
            continue
        rows += read_rows(path, SET_NAMES.get(path.name, path.stem.removeprefix("error_messages_")))
    return rows


def apply_rules(rows: list[Row]) -> None:
    for row in rows:
        result = lint_message(row.message)
        row.rules = result.generic
        row.rule_ids = tuple(result.rule_ids)


# --- the model -----------------------------------------------------------------------------------

# words, placeholders such as <path> or '<*>', and single punctuation marks (a colon, a brace) of the template
TOKEN = r"'<\*>'|<[a-z*]+>|[A-Za-z_]+|[^\sA-Za-z0-9]"


class Hashed:
    """Raw n-gram counts of every message, computed once (hashing needs no fit, so no fold sees another's text)."""

    words = HashingVectorizer(token_pattern=TOKEN, ngram_range=(1, 2), lowercase=True, alternate_sign=False, norm=None, n_features=2**20)
    chars = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 5), lowercase=True, alternate_sign=False, norm=None, n_features=2**20)

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.blocks: list[tuple[csr_matrix, csr_matrix]] = []
        self.w: csr_matrix | None = None
        self.c: csr_matrix | None = None

    def get(self, rows: list[Row]) -> tuple[csr_matrix, csr_matrix]:
        new = list(dict.fromkeys(r.message for r in rows if r.message not in self.index))
        if new:
            templates = {r.message: r.template for r in rows}
            w = self.words.transform([templates[m] for m in new]).tocsr()
            c = self.chars.transform(new).tocsr()
            self.w = w if self.w is None else vstack([self.w, w]).tocsr()
            self.c = c if self.c is None else vstack([self.c, c]).tocsr()
            for m in new:
                self.index[m] = len(self.index)
        assert self.w is not None and self.c is not None
        at = [self.index[r.message] for r in rows]
        return self.w[at], self.c[at]


HASHED = Hashed()


class Block:
    """TF-IDF of one block of hashed counts, fitted on the training rows: n-grams seen in fewer than
    ``min_df`` training messages are dropped, then sublinear tf, idf and l2 norm as TfidfVectorizer does."""

    def __init__(self, min_df: int) -> None:
        self.min_df = min_df
        self.keep = np.zeros(0, dtype=np.int64)
        self.tfidf = TfidfTransformer(sublinear_tf=True)

    def fit_transform(self, x: csr_matrix) -> csr_matrix:
        df = np.asarray((x > 0).sum(axis=0)).ravel()
        self.keep = np.flatnonzero(df >= self.min_df)
        return self.tfidf.fit_transform(x[:, self.keep])

    def transform(self, x: csr_matrix) -> csr_matrix:
        return self.tfidf.transform(x[:, self.keep])


class Model:
    """TF-IDF n-grams + logistic regression; C and the threshold chosen on the training sets only.

    A subclass with other features overrides ``_x`` (and ``c_grid``); the rest, how C, the threshold and
    the hybrid's band are chosen, is this class's (benchmarks/lint_embed.py)."""

    c_grid: tuple[float, ...] = C_GRID

    def __init__(self) -> None:
        self.words = Block(min_df=1)
        self.chars = Block(min_df=2)
        self.clf: LogisticRegression | None = None
        self.C = 0.0
        self.threshold = 0.5
        self.lo = 0.0  # the hybrid says instructive where p <= lo
        self.hi = 1.0  # ... and generic where p >= hi

    def _x(self, rows: list[Row], fit: bool = False) -> csr_matrix:
        w, c = HASHED.get(rows)
        if fit:
            return hstack([self.words.fit_transform(w), self.chars.fit_transform(c)]).tocsr()
        return hstack([self.words.transform(w), self.chars.transform(c)]).tocsr()

    @staticmethod
    def _clf(C: float) -> LogisticRegression:
        return LogisticRegression(C=C, class_weight="balanced", solver="liblinear", dual=True, random_state=SEED, max_iter=1000)

    def fit(self, rows: list[Row]) -> Model:
        # The vocabulary and IDF are fitted on the training sets once (no labels involved); the inner
        # folds choose C and the thresholds from out-of-fold probabilities.
        x = self._x(rows, fit=True)
        y = np.array([r.generic for r in rows])
        groups = np.array([r.group for r in rows])
        folds = list(GroupKFold(n_splits=min(INNER_FOLDS, len(set(groups)))).split(x, y, groups))
        best = None
        for C in self.c_grid:
            oof = np.zeros(len(rows))
            for train, test in folds:
                oof[test] = self._clf(C).fit(x[train], y[train]).predict_proba(x[test])[:, 1]
            loss = log_loss(y, oof, labels=[False, True])
            if best is None or loss < best[0]:
                best = (loss, C, oof)
        assert best is not None
        _, self.C, oof = best
        self.threshold = best_f1_threshold(y, oof)
        self.lo, self.hi = confident_band(y, oof, CONFIDENT)
        self.clf = self._clf(self.C).fit(x, y)
        return self

    def proba(self, rows: list[Row]) -> np.ndarray:
        assert self.clf is not None
        return self.clf.predict_proba(self._x(rows))[:, 1]


def best_f1_threshold(y: np.ndarray, p: np.ndarray) -> float:
    best_t, best_f1 = 0.5, -1.0
    for t in np.unique(p):
        pred = p >= t
        tp = int(np.sum(pred & y))
        f1 = 2 * tp / (int(pred.sum()) + int(y.sum())) if tp else 0.0
        if f1 > best_f1:
            best_t, best_f1 = float(t), f1
    return best_t


def confident_band(y: np.ndarray, p: np.ndarray, target: float) -> tuple[float, float]:
    """The lowest ``hi`` such that messages with p >= hi were generic at least ``target`` of the time,
    and the highest ``lo`` such that those with p <= lo were instructive as often (out of fold)."""
    order = np.argsort(-p)
    hi = 1.01
    hits = 0
    for k, i in enumerate(order, 1):
        hits += bool(y[i])
        if hits / k >= target and k >= 10:
            hi = float(p[i])
    order = np.argsort(p)
    lo = -0.01
    hits = 0
    for k, i in enumerate(order, 1):
        hits += not y[i]
        if hits / k >= target and k >= 10:
            lo = float(p[i])
    return lo, hi


@dataclass
class Verdicts:
    proba: np.ndarray
    model: np.ndarray
    hybrid: np.ndarray


def predict(model: Model, rows: list[Row]) -> Verdicts:
    p = model.proba(rows)
    rules = np.array([r.rules for r in rows])
    hybrid = np.where(p >= model.hi, True, np.where(p <= model.lo, False, rules))
    return Verdicts(p, p >= model.threshold, hybrid)


# --- scoring ---------------------------------------------------------------------------------------


def counts(y: np.ndarray, pred: np.ndarray) -> tuple[int, int, int]:
    return int(np.sum(pred & y)), int(np.sum(pred & ~y)), int(np.sum(~pred & y))


def pr(c: tuple[int, int, int]) -> str:
    tp, fp, fn = c
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return f"{p:.3f} / {r:.3f}"


def _first_totals(y: np.ndarray, masks: dict[str, np.ndarray]) -> list[int]:
    total = [0, 0, 0]
    for name, m in masks.items():
        for k, c in enumerate(first_look_counts(name, int(y[m].sum()))):
            total[k] += c
    return total


def first_look_counts(name: str, n_generic: int) -> tuple[int, int, int]:
    """(tp, fp, fn) behind a recorded first-look (precision, recall): the integers nearest today's
    number of generic messages that give both figures to three places (a few labels changed since)."""
    p, r = FIRST_LOOK[name]
    for delta in (0, 1, -1, 2, -2, 3, -3):
        g = n_generic + delta
        if g <= 0:
            continue
        tp = round(r * g)
        if round(tp / g, 3) != r:
            continue
        for fp in range(0, 3 * g):
            if tp + fp and round(tp / (tp + fp), 3) == p:
                return tp, fp, g - tp
    raise ValueError(f"no counts give {name}'s first look {p} / {r}")


def table(header: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out)


def disagreements(rows: list[Row], v: Verdicts) -> str:
    out = []
    for i, row in enumerate(rows):
        verdicts = (row.rules, bool(v.model[i]), bool(v.hybrid[i]))
        if all(x == row.generic for x in verdicts):
            continue
        mark = "".join(letter if x != row.generic else "." for letter, x in zip("RMH", verdicts))
        label = "generic" if row.generic else "instr."
        out.append(f"  [{row.group}] {mark} label={label:<7} p={v.proba[i]:.2f} rules={','.join(row.rule_ids) or '-'}  {row.message[:160]!r}")
    return "\n".join(out)


# --- the two modes ---------------------------------------------------------------------------------


@dataclass
class Scored:
    """Each message's label and the three verdicts on it."""

    y: np.ndarray
    rules: np.ndarray
    model: np.ndarray
    hybrid: np.ndarray

    def counts(self, verdict: str) -> tuple[int, int, int]:
        return counts(self.y, getattr(self, verdict))


def leave_one_set_out(show_errors: bool, history: bool, make: Callable[[], Model] = Model) -> Scored:
    """Prints the leave-one-set-out table; returns the verdicts, pooled."""
    rows = fixture_rows()
    apply_rules(rows)
    groups = list(dict.fromkeys(r.group for r in rows))
    proba = np.zeros(len(rows))
    model_v = np.zeros(len(rows), dtype=bool)
    hybrid_v = np.zeros(len(rows), dtype=bool)
    chosen = []
    for g in groups:
        test = [i for i, r in enumerate(rows) if r.group == g]
        model = make().fit([r for r in rows if r.group != g])
        v = predict(model, [rows[i] for i in test])
        proba[test], model_v[test], hybrid_v[test] = v.proba, v.model, v.hybrid
        chosen.append((g, model.C, model.threshold, model.lo, model.hi))
    y = np.array([r.generic for r in rows])
    rules_v = np.array([r.rules for r in rows])
    group_of = np.array([r.group for r in rows])

    print("Leave one set out: each fixture set scored by a model trained on the others (precision / recall of 'generic').")
    print("rules* = today's rules, which were tuned on every one of these sets: an optimistic, tuning figure.\n")
    lines = []
    for g in groups:
        m = group_of == g
        lines.append([g, str(int(m.sum())), str(int(y[m].sum())), pr(counts(y[m], rules_v[m])),
                      pr(counts(y[m], model_v[m])), pr(counts(y[m], hybrid_v[m]))])  # fmt: skip
    lines.append(["pooled", str(len(rows)), str(int(y.sum())), pr(counts(y, rules_v)), pr(counts(y, model_v)), pr(counts(y, hybrid_v))])
    print(table(["set", "n", "generic", "rules*", "model", "hybrid"], lines))
    cs = sorted({c for _, c, *_ in chosen})
    ts = [t for _, _, t, _, _ in chosen]
    band = [(lo, hi) for *_, lo, hi in chosen]
    bands = {g: (lo, hi) for g, _, _, lo, hi in chosen}
    print(f"\nchosen inside the training folds: C in {cs}, threshold {min(ts):.2f}-{max(ts):.2f}, "
          f"hybrid overrides the rules where p <= {min(b[0] for b in band):.2f}-{max(b[0] for b in band):.2f} "
          f"or p >= {min(b[1] for b in band):.2f}-{max(b[1] for b in band):.2f}")  # fmt: skip

    sure = np.array([p >= hi or p <= lo for p, (lo, hi) in zip(proba, (bands[r.group] for r in rows))])
    right = (proba >= 0.5) == y  # where the model is confident, p >= 0.5 is its verdict
    print(f"the model is confident on {int(sure.sum())} of {len(rows)} messages: right on {right[sure].mean():.3f} of them "
          f"(rules* {(rules_v == y)[sure].mean():.3f}); elsewhere the model is right on {(model_v == y)[~sure].mean():.3f}")  # fmt: skip

    # Like with like: the rules' first look at each set against the learner on the same messages.
    third = np.array([r.group in FIRST_THREE and held_out_third(r.message) for r in rows])
    masks = {name: (third if name == "held-out third" else group_of == name) for name in FIRST_LOOK}
    first = _first_totals(y, masks)
    loso = [0, 0, 0]
    for name, m in masks.items():
        for k, c in enumerate(counts(y[m], model_v[m])):
            loso[k] += c
    print(f"\nFirst looks ({len(FIRST_LOOK)} sets with a first-look figure in docs/lint.md, n = {int(sum(m.sum() for m in masks.values()))}):")
    print(f"  rules at each set's first look (the honest rules figure) {pr(tuple(first))}"
          f"  (tp {first[0]}, fp {first[1]}, fn {first[2]}; counts rebuilt from the recorded figures)")  # fmt: skip
    print(f"  model, leave one set out on the same messages          {pr(tuple(loso))}  (tp {loso[0]}, fp {loso[1]}, fn {loso[2]})")

    if history:
        print_history(rows, masks, third, make)
    if show_errors:
        print("\nDisagreements with the label (R rules, M model, H hybrid wrong; leave one set out):")
        print(disagreements(rows, Verdicts(proba, model_v, hybrid_v)))
    return Scored(y, rules_v, model_v, hybrid_v)


_OLD_RULES = """
import json, sys
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, sys.argv[1])
from loopscope.analyses.lint import lint_message
import loopscope.analyses.lint as lint
assert lint.__file__.startswith(sys.argv[1]), lint.__file__
print(json.dumps([lint_message(m).generic for m in json.load(sys.stdin)]))
"""


def old_rules(commit: str, messages: list[str]) -> list[bool]:
    """The verdicts of the rules at ``commit`` (its analyses/ and collectors/ from git, run in a subprocess)."""
    repo = FIXTURES.parent.parent
    with tempfile.TemporaryDirectory(prefix="lint_learned_") as tmp:
        (Path(tmp) / "loopscope").mkdir()
        archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "analyses", "collectors"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(Path(tmp) / "loopscope")], input=archive, check=True)
        out = subprocess.run([sys.executable, "-c", _OLD_RULES, tmp], input=json.dumps(messages), text=True, capture_output=True, check=True)
    return json.loads(out.stdout)


def print_history(rows: list[Row], masks: dict[str, np.ndarray], third: np.ndarray, make: Callable[[], Model] = Model) -> None:
    """Each first look replayed: the rules of that moment (from git), and a learner trained only on the
    sets labelled before it, alone and as the hybrid with those rules. Like with like, and honest."""
    y = np.array([r.generic for r in rows])
    chrono = [0, 0, 0]
    chrono_h = [0, 0, 0]
    then = [0, 0, 0]
    per_set = []
    later = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]  # rules then, model, hybrid on the later first looks
    later_n = [0, 0]
    paired = [[0, 0], [0, 0]]  # model, hybrid: messages only the rules got right, only it got right
    for name, m in masks.items():
        stage = STAGE[name]
        if name == "held-out third":
            train = [r for r, t in zip(rows, third) if r.group in FIRST_THREE and not t]
        else:
            train = [r for r in rows if r.group in FIRST_THREE or STAGE.get(r.group, 99) < stage]
        model = make().fit(train)
        test = [rows[i] for i in np.flatnonzero(m)]
        v = predict(model, test)
        yt = y[m]
        rules_then = np.array(old_rules(FIRST_LOOK_RULES[name], [r.message for r in test]))
        hybrid = np.where(v.proba >= model.hi, True, np.where(v.proba <= model.lo, False, rules_then))
        c, cr, ch = counts(yt, v.model), counts(yt, rules_then), counts(yt, hybrid)
        for k, pred in enumerate((v.model, hybrid)):
            paired[k][0] += int(np.sum((rules_then == yt) & (pred != yt)))
            paired[k][1] += int(np.sum((rules_then != yt) & (pred == yt)))
        if STAGE[name] >= LATER:
            for k in range(3):
                later[0][k] += cr[k]
                later[1][k] += c[k]
                later[2][k] += ch[k]
            later_n[0] += len(test)
            later_n[1] += int(yt.sum())
        for k in range(3):
            chrono[k] += c[k]
            then[k] += cr[k]
            chrono_h[k] += ch[k]
        per_set.append([name, FIRST_LOOK_RULES[name], str(len(train)), str(len(test)), str(int(yt.sum())),
                        "%.3f / %.3f" % FIRST_LOOK[name], pr(cr), pr(c), pr(ch)])  # fmt: skip
    print("\nEach first look replayed (rules run from git at the commit of the first look; the learner trained only")
    print("on the sets labelled before it; the hybrid is that learner with those rules). Labels are today's, so the")
    print("replayed rules can differ a little from the recorded figure.\n")
    n = sum(int(m.sum()) for m in masks.values())
    generic = sum(int(y[m].sum()) for m in masks.values())
    per_set.append(["pooled", "", "", str(n), str(generic), pr(tuple(_first_totals(y, masks))),
                    pr(tuple(then)), pr(tuple(chrono)), pr(tuple(chrono_h))])  # fmt: skip
    later_names = [name for name in masks if STAGE[name] >= LATER]
    per_set.append([f"{later_names[0]}..{later_names[-1]}", "", ">= 900", str(later_n[0]), str(later_n[1]), "",
                    *(pr(tuple(c)) for c in later)])  # fmt: skip
    print(table(["set", "rules of", "trained on", "n", "generic", "recorded", "rules then", "model", "hybrid"], per_set))
    for name, (rules_only, it_only) in zip(("model", "hybrid"), paired):
        z = (it_only - rules_only) / max(1.0, (it_only + rules_only) ** 0.5)
        print(f"  paired with the rules then: {rules_only} messages only the rules got right, {it_only} only the {name} (McNemar z = {z:.1f})")


def print_curve(fractions: tuple[float, ...] = (0.25, 0.5, 1.0), make: Callable[[], Model] = Model) -> None:
    """Leave one set out with the training sets thinned to a fraction of their messages (seeded): does the
    learner still gain from more data?"""
    rows = fixture_rows()
    y = np.array([r.generic for r in rows])
    groups = list(dict.fromkeys(r.group for r in rows))
    rng = np.random.default_rng(SEED)
    keep = rng.random(len(rows))  # one draw per message, so a smaller fraction is a subset of a larger one
    print("\nLearning curve (leave one set out, training sets thinned at random to a fraction of their messages):")
    for f in fractions:
        pred = np.zeros(len(rows), dtype=bool)
        for g in groups:
            train = [r for r, k in zip(rows, keep) if r.group != g and k < f]
            test = [i for i, r in enumerate(rows) if r.group == g]
            model = make().fit(train)
            pred[test] = model.proba([rows[i] for i in test]) >= model.threshold
        print(f"  {f:.2f} of the training messages (about {int(f * (len(rows) - len(rows) / len(groups)))}): model {pr(counts(y, pred))}")


def evaluate(path: Path, show_errors: bool, make: Callable[[], Model] = Model) -> Scored:
    """Prints the scores on ``path`` of a model trained on every fixture set but it; returns the verdicts."""
    target = read_rows(path, "eval")
    seen = {r.message for r in target}
    train = [r for r in fixture_rows(exclude=path) if r.message not in seen]
    dropped = len(fixture_rows(exclude=path)) - len(train)
    apply_rules(target)
    model = make().fit(train)
    v = predict(model, target)
    y = np.array([r.generic for r in target])
    rules_v = np.array([r.rules for r in target])
    print(f"{path}: n = {len(target)}, generic = {int(y.sum())}; trained on {len(train)} fixture messages"
          + (f" ({dropped} also in {path.name} left out)" if dropped else ""))  # fmt: skip
    print(f"model: C = {model.C}, threshold {model.threshold:.2f}; hybrid keeps the rules unless p <= {model.lo:.2f} or p >= {model.hi:.2f}\n")
    lines = [[name, pr(c), *map(str, c)] for name, c in (
        ("rules", counts(y, rules_v)), ("model", counts(y, v.model)), ("hybrid", counts(y, v.hybrid)))]  # fmt: skip
    print(table(["verdict", "precision / recall", "tp", "fp", "fn"], lines))
    if show_errors:
        print("\nDisagreements with the label (R rules, M model, H hybrid wrong):")
        print(disagreements(target, v))
    return Scored(y, rules_v, v.model, v.hybrid)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", type=Path, metavar="FILE", help="train on every fixture set (not FILE) and score FILE")
    parser.add_argument("--errors", action="store_true", help="list the messages the rules, model or hybrid get wrong")
    parser.add_argument("--history", action="store_true", help="also replay each first look (its rules from git, a learner on the sets before it)")
    parser.add_argument("--curve", action="store_true", help="also the learning curve: leave one set out on a fraction of the training messages")
    args = parser.parse_args(argv)
    if args.eval:
        evaluate(args.eval, args.errors)
    else:
        leave_one_set_out(args.errors, args.history)
        if args.curve:
            print_curve()


if __name__ == "__main__":
    sys.exit(main())
