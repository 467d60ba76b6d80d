"""Peak memory and time of the messages reader on one big conversation, vs bare ``json.loads``.

The messages reader holds a whole file in memory (docs/inputs.md says about ten times its size,
and refuses files above 256 MiB). This script measures it: it writes one OpenAI-shaped
conversation of N tool calls (as one JSON document and as per-message JSON Lines), then reads
each in a fresh process, once with ``json.loads`` of every line alone (the floor: the parsed file) and once with
the reader, and prints peak RSS and wall time and their ratios to the file size and the baseline.

    python benchmarks/messages_memory.py [--calls 150000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Every line parsed and kept (the document is one line): what any reader must at least hold.
BASELINE = "import json, sys; parsed = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8')]"
READER = (
    "import sys; from pathlib import Path; from loopscope.analyses.ingest.messages import read; "
    "out = read(Path(sys.argv[1]), {}); assert out.records and not out.bad"
)
PEAK = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def write(folder: Path, calls: int) -> tuple[Path, Path]:
    text = "x" * 200
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for i in range(calls):
        arguments = json.dumps({"q": text, "n": i})
        messages.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": arguments}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": ("Error: " if i % 10 == 0 else "ok ") + text})
    messages.append({"role": "assistant", "content": "done"})
    document = folder / "one.json"
    document.write_text(json.dumps({"conversation_id": "big", "messages": messages}), encoding="utf-8")
    lines = folder / "per_message.jsonl"
    with lines.open("w", encoding="utf-8") as f:
        for message in messages:
            f.write(json.dumps({"conversation_id": "big", **message}) + "\n")
    return document, lines


def measure(code: str, path: Path) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of ``code`` run on ``path`` in a fresh interpreter."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", f"{code}\n{PEAK}", str(path)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for path in write(Path(tmp), args.calls):
            size = path.stat().st_size / 2**20
            base_rss, base_s = measure(BASELINE, path)
            rss, seconds = measure(READER, path)
            print(f"{path.name}: {size:.0f} MiB, {args.calls} calls")
            print(f"  json.loads peak {base_rss:7.0f} MiB ({base_rss / size:4.1f}x file)  {base_s:5.1f} s")
            print(f"  reader     peak {rss:7.0f} MiB ({rss / size:4.1f}x file)  {seconds:5.1f} s"
                  f"  = {rss / base_rss:.1f}x json.loads' memory, {seconds / base_s:.1f}x its time")


if __name__ == "__main__":
    main()
