"""A deterministic demo agent instrumented with the collector.

The hotel-booking agent of the corrective-prompting write-up (seed 002), with
its ``crash``, ``blind`` and ``corrective`` modes and a scripted model, played
through 36 conversations whose records land in ``concierge.jsonl`` and
``back_office.jsonl``. ``loopscope demo --out DIR`` runs it; the committed
``sample_logs/`` are its output. Imports only the standard library,
``opentelemetry-api`` and the collector.
"""

from loopscope.cli.demo.run import run_demo

__all__ = ["run_demo"]
