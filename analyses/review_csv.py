"""The review pack's CSV: its verdict columns and the cells a spreadsheet would run.

Shared by the pack that writes it (``review_pack``) and the import that reads it back
(``review``), in a module of its own so that reading verdicts (``audit``, ``review import``)
does not import the pack's writer and, with it, the triage timelines and the sampler.
"""

from __future__ import annotations

VERDICT_COLUMNS = ("recovered_cleanly", "spun", "gave_up", "generic_apology")
CSV_COLUMNS = ("conversation_id", "stratum", "computed_class", "computed_spun", "computed_gave_up", "file",
               *VERDICT_COLUMNS, "notes")
# Leading characters a spreadsheet would run as a formula.
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
