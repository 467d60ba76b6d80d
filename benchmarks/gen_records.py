"""Generate N synthetic loopscope v1 records with realistic shapes.

Conversations of 1-4 prompts; each prompt runs 0-8 steps of 1-3 (parallel)
tool calls, ends with a loop_exit (about 2% die open), about 10% of calls
are errors with a real-looking error message (some a JSON body, so the line
has escaped quotes), about 1% are replays (half
flagged ``replayed: true``, half a repeated id), timestamps in a few RFC
3339 spellings, a few unknown fields. Records are written as JSON Lines,
split over several files, by string templates (json.dumps per record would
make generation slower than loading).

    python benchmarks/gen_records.py 1000000 /tmp/bench --files 4
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from pathlib import Path

GENERATOR_VERSION = "2"
"""Bumped when the records change, so benchmarks regenerate their data."""

TOOLS = ["search_flights", "check_availability", "create_reservation", "charge_deposit", "send_confirmation", "lookup_customer"]
SHAPES = [
    '{"origin":"string","destination":"string","date":"string"}',
    '{"check_in":"string","check_out":"string","room_type":"string"}',
    '{"customer_id":"string","amount":"number","currency":"string"}',
    '{"query":"string","limit":"integer"}',
]
ERRORS = [
    ("invalid_date_format", "check_in 'next friday' is not a date: use YYYY-MM-DD, e.g. 2026-11-27"),
    ("reservation_conflict", "room 204 is already booked for 2026-11-27..2026-11-29; pick another room or dates"),
    ("service_unavailable", "payment service returned 503 after 3 attempts; retry later or ask the user to pay at check-in"),
    ("missing_required_field", "guest_name is required: ask the user for the guest's full name"),
    # a JSON error body, as tools often return it: quotes escaped in the line
    ("rate_limited", '{"error": "rate_limited", "message": "too many requests", "retry_after_s": 30}'),
]
EXITS = ["end_turn"] * 90 + ["stop_sequence"] * 3 + ["max_tokens"] * 3 + ["budget_exceeded"] * 2 + ["error"] * 2
AGENTS = ["concierge", "back_office", "support"]

TOOL_CALL = (
    '{{"v":1,"kind":"tool_call","ts":"{ts}","conversation_id":"{conv}","prompt_id":"{prompt}",'
    '"agent":"{agent}","trace_id":"{trace}","span_id":"{span}","tags":{{"deploy":"v{deploy}","mode":"{mode}"}},'
    '"tool_call_id":"{call_id}","tool_name":"{tool}","step":{step},"input_shape":{shape},'
    '"args_fingerprint":"{fp}","outcome":"{outcome}","is_error":{is_error},"attempts":{attempts},'
    '"latency_ms":{latency},"error_type":{etype},"error_message":{emsg},"replayed":{replayed}{extra}}}\n'
)
LOOP_EXIT = (
    '{{"v":1,"kind":"loop_exit","ts":"{ts}","conversation_id":"{conv}","prompt_id":"{prompt}",'
    '"agent":"{agent}","trace_id":"{trace}","span_id":"{span}","tags":{{"deploy":"v{deploy}","mode":"{mode}"}},'
    '"exit_reason":"{reason}","steps":{steps},"tool_calls":{calls},"tool_errors":{errors},'
    '"max_tool_calls":25,"input_tokens":{tin},"output_tokens":{tout},"duration_ms":{dur},'
    '"error_type":null,"error_message":null}}\n'
)


def spell(t: dt.datetime, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.8:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    if r < 0.9:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+00:00"
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


def generate(n: int, out: Path, files: int = 4, seed: int = 7) -> list[Path]:
    """Write about ``n`` records into ``files`` JSONL files under ``out``; returns the paths."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"records-{i:02d}.jsonl" for i in range(files)]
    handles = [p.open("w", encoding="utf-8", buffering=1 << 20) for p in paths]
    per_file = max(1, n // files)
    written = 0
    conv_no = 0
    t = dt.datetime(2026, 9, 1, 0, 0, 0)
    hexd = "0123456789abcdef"
    while written < n:
        conv_no += 1
        conv = f"conv-{conv_no:09d}"
        agent = rng.choice(AGENTS)
        mode = rng.choice(("corrective", "blind"))
        deploy = rng.randint(40, 44)
        handle = handles[min(written // per_file, files - 1)]
        seen_ids: list[str] = []
        for p in range(rng.randint(1, 4)):
            prompt = f"{conv}-p{p + 1}"
            trace = "".join(rng.choices(hexd, k=32))
            calls = errors = 0
            steps = rng.choice((0, 1, 1, 2, 2, 3, 3, 4, 5, 8))
            chunk: list[str] = []
            for step in range(steps):
                for _ in range(rng.choice((1, 1, 1, 2, 3))):
                    t += dt.timedelta(milliseconds=rng.randint(5, 4000))
                    is_error = rng.random() < 0.10
                    replay = rng.random() < 0.01 and bool(seen_ids)
                    call_id = rng.choice(seen_ids) if replay else "toolu_" + "".join(rng.choices(hexd, k=24))
                    seen_ids.append(call_id)
                    etype, emsg = rng.choice(ERRORS) if is_error else (None, None)
                    chunk.append(
                        TOOL_CALL.format(
                            ts=spell(t, rng), conv=conv, prompt=prompt, agent=agent, trace=trace,
                            span="".join(rng.choices(hexd, k=16)), deploy=deploy, mode=mode, call_id=call_id,
                            tool=rng.choice(TOOLS), step=step, shape=rng.choice(SHAPES),
                            fp="".join(rng.choices(hexd, k=64)),
                            outcome="permanent_fail" if is_error else rng.choice(("ok", "ok", "ok", "retried")),
                            is_error="true" if is_error else "false", attempts=rng.randint(1, 3),
                            latency=round(rng.uniform(5, 3000), 1),
                            etype=json.dumps(etype), emsg=json.dumps(emsg),
                            replayed="true" if replay and rng.random() < 0.5 else "false",
                            extra=',"x_region":"eu-west-1"' if rng.random() < 0.02 else "",
                        )
                    )
                    calls += 1
                    errors += is_error
            if rng.random() >= 0.02:
                t += dt.timedelta(milliseconds=rng.randint(100, 3000))
                chunk.append(
                    LOOP_EXIT.format(
                        ts=spell(t, rng), conv=conv, prompt=prompt, agent=agent, trace=trace,
                        span="".join(rng.choices(hexd, k=16)), deploy=deploy, mode=mode,
                        reason=rng.choice(EXITS), steps=steps + 1, calls=calls, errors=errors,
                        tin=rng.randint(500, 20000), tout=rng.randint(50, 2000), dur=round(rng.uniform(300, 60000), 1),
                    )
                )
            handle.write("".join(chunk))
            written += len(chunk)
    for h in handles:
        h.close()
    return paths


def record_count(text: str) -> int:
    """A record count as the benchmarks take it on the command line: ``200k``, ``1m``, ``1000``."""
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * mult)


def cached_dataset(n: int, folder: Path) -> list[str]:
    """The JSONL files of ``n`` records under ``folder``, generated once per size and GENERATOR_VERSION."""
    marker = folder / "DONE"
    stamp = f"{n} {GENERATOR_VERSION}"
    if not marker.exists() or marker.read_text() != stamp:
        print(f"generating {n:,} records in {folder} ...", flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("records-*.jsonl"):
            old.unlink()
        generate(n, folder, files=max(1, n // 1_000_000))
        marker.write_text(stamp)
    return sorted(str(p) for p in folder.glob("records-*.jsonl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, help="number of records (about)")
    parser.add_argument("out", type=Path, help="output folder")
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    paths = generate(args.n, args.out, args.files, args.seed)
    total = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} files, {total / 1e6:.0f} MB under {args.out}")


if __name__ == "__main__":
    main()
