"""Time and peak memory of ``loopscope load`` on a folder of coding-agent sessions, vs bare ``json.loads``.

Builds a history of N copies of the real Claude Code and Codex sessions committed in
tests/fixtures/transcripts/ (each copy made distinct by one extra line, so none is skipped as
already loaded), then, each in a fresh process: the baseline (``json.loads`` of every line of
every file, nothing kept), the load into a new store, and the load again (every file
unchanged). Prints seconds, peak RSS and the ratios to the baseline.

    python benchmarks/transcripts_load.py [--copies 200]
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "transcripts"
BASELINE = (
    "import json, sys, pathlib\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.jsonl')):\n"
    "    for line in open(p, 'rb'):\n"
    "        try:\n"
    "            json.loads(line)\n"
    "        except ValueError:\n"
    "            pass\n"
)
LOAD = "import sys; from loopscope.cli import main; sys.argv = ['loopscope', 'load', '--db', sys.argv[2], '--format', 'json', sys.argv[1]]; main()"
PEAK = "import resource; print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"


def build(folder: Path, copies: int) -> int:
    sources = [p for p in FIXTURES.rglob("*") if p.name.endswith((".jsonl", ".jsonl.gz"))]
    size = 0
    for n in range(copies):
        for i, src in enumerate(sources):
            data = src.read_bytes()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            data += b'{"type":"summary","summary":"copy %d","leafUuid":"x"}\n' % n
            rel = src.relative_to(FIXTURES)
            name = rel.name.removesuffix(".gz").replace(".jsonl", f"-{n}-{i}.jsonl")
            target = folder / f"copy-{n}" / rel.parent / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            size += len(data)
    return size


def run(code: str, *args: str) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of ``code`` in a fresh interpreter."""
    wrapper = f"import subprocess, sys\nstart = __import__('time').perf_counter()\nsubprocess.run([sys.executable, '-c', {code!r}, *sys.argv[1:]], check=True, stdout=subprocess.DEVNULL)\nprint(__import__('time').perf_counter() - start)\n{PEAK}"
    out = subprocess.run([sys.executable, "-c", wrapper, *args], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=200)
    copies = parser.parse_args().copies
    with tempfile.TemporaryDirectory(prefix="loopscope-transcripts-") as tmp:
        folder = Path(tmp) / "history"
        started = time.perf_counter()
        size = build(folder, copies)
        files = sum(1 for _ in folder.rglob("*.jsonl"))
        print(f"{files} files, {size / 2**20:.0f} MiB (built in {time.perf_counter() - started:.1f} s)")
        db = str(Path(tmp) / "store.duckdb")
        base_s, base_mb = run(BASELINE, str(folder))
        load_s, load_mb = run(LOAD, str(folder), db)
        again_s, again_mb = run(LOAD, str(folder), db)
        print(f"baseline json.loads  {base_s:7.2f} s  {base_mb:6.0f} MiB")
        print(f"load (new store)     {load_s:7.2f} s  {load_mb:6.0f} MiB  {load_s / base_s:5.1f}x time")
        print(f"load again           {again_s:7.2f} s  {again_mb:6.0f} MiB  {again_s / base_s:5.1f}x time")


if __name__ == "__main__":
    main()
