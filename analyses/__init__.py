"""loopscope analyses: readers -> one DuckDB store -> one module per analysis.

Modules (one guess each):

- ``store``: open a DuckDB file and migrate its schema (``migrations``).
- ``model``: the normative derived views (replays, prompts, error classes).
- ``selection``: which prompts an analysis looks at (time, agent, tags, files).
- ``loader``: JSON Lines (and gz) -> tables, with quarantine and idempotency.
- ``metrics``: the four dashboard metrics.
- further analysis modules sit beside these.

Nothing here imports ``loopscope.cli``.
"""
