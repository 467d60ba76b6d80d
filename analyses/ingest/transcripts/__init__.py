"""Coding-agent session transcripts already on developers' disks, as v1 records.

Five readers, one per tool, into the same records (docs/inputs.md, "Coding agent
sessions", "Gemini CLI saved chats", "OpenHands event streams" and "smolagents agent memory"): ``claude_code`` (``~/.claude/projects/<encoded-cwd>/<session-id>.jsonl``
and its ``subagents/agent-*.jsonl``), ``codex`` (``~/.codex/sessions/YYYY/MM/DD/
rollout-*.jsonl``), ``gemini_cli`` (``~/.gemini/tmp/<project_hash>/chats/session-*.jsonl``) ``openhands`` (an OpenHands event list, a downloaded trajectory) and ``smolagents`` (a dump of ``agent.memory.get_full_steps()``). What they share (prompts, steps, exits, id collisions) is in
``_session``; ``_lines`` reads a file one line at a time.

Privacy: records keep what v1 keeps (argument shapes and fingerprints, the error
text after redaction) and nothing else of the transcript's content.
"""

from __future__ import annotations

from loopscope.analyses.ingest.formats import BadLine, ReaderOutput

__all__ = ["BadLine", "ReaderOutput"]
