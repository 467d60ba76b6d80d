"""loopscope analyses: readers -> one DuckDB store -> one module per analysis.

``store`` opens and migrates the DuckDB file, ``model`` defines the normative
views, ``ingest`` brings files in, and each analysis
(``metrics``, ``recovery``, ``incidents``, ``triage``, ``lint``, ``audit``,
``sampling``, ``compare``, ``check``) reads the views through a ``Selection``.
docs/architecture.md maps every module. Nothing here imports ``loopscope.cli``.
"""
