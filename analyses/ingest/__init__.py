"""Bring log files into the store: one reader per input format, one record validator.

``load_paths(con, paths)`` (in ``load``) expands PATHs, picks a reader per file
and loads each file in its own transaction. ``files`` finds and reads files,
``records`` is the record validator (DuckDB SQL), ``jsonl`` reads records
files, ``formats`` detects a file's format, and ``messages`` / ``otlp`` /
``transcripts`` (Claude Code and Codex CLI sessions) turn other formats into v1
records that pass through the same validator.
"""

from loopscope.analyses.ingest.load import LoadSummary, load_paths

__all__ = ["LoadSummary", "load_paths"]
