"""What a user must know before trusting the figures of a selection.

A figure can be right by arithmetic and still mislead: zero errors because
the log marks its errors only in the text, weeks that are really "no
timestamp", an ``--agent`` that matches nothing. ``notices(con, selection)``
returns those facts of the store as ``Notice`` values (computed in SQL, one
row per kind, over ``prompt_facts`` when fresh: ``store.relations``), and ``check_selection(con, selection)`` refuses a selection
whose ``--agent``/``--tag`` names nothing in the store. ``load``, ``metrics``
and ``audit`` print the notices; the audit's JSON carries them.

Kinds:

- ``unflagged_error_text``: a file of conversation messages had tool results
  that read like errors but carry no error flag, and was loaded with the
  default convention, so they count as successes (the reader's finding, kept in
  ``protocol_violations``); the fix is ``--error-when``.
- ``no_tool_calls``: a file of conversation messages had model responses and
  not one tool call (the reader's finding, kept in ``protocol_violations``): a
  chat without tools, or an agent that writes its actions in the text, whose
  observations then count as prompts.
- ``provider_tools_only``: a file of conversation messages had model responses whose only tool
  calls ran on the provider's side (Anthropic server tools, the MCP connector) (the reader's
  finding, kept in ``protocol_violations``): they are in no figure, and the agent ran no tool.
- ``unread_exit_status``: a Codex rollout had outputs of command tools
  (``exec_command``, ``shell``...), or an OpenHands event stream ``run``
  observations, that state no exit code and no running
  process (the reader's finding, kept in ``protocol_violations``): an edited or
  redacted log, or a Codex that writes its outputs another way; they count as
  successes, so the error figures may be too low.
- ``code_actions``: a smolagents memory dump had CodeAgent steps (the reader's
  finding, kept in ``protocol_violations``): each step's Python code counts as one
  call of ``python_interpreter``, and the tools that code called are in no figure.
- ``call_log_no_previous``: a model-call log had OpenAI Responses API calls continuing a response
  (``previous_response_id``) that is not in the file (the reader's finding, kept in
  ``protocol_violations``): each was read without what came before, so the calls made before it
  are in none of the figures; the fix is to load the earlier log with it.
- ``no_timestamps``: prompts whose records had no time of their own (the
  readers give them 1970-01-01 plus their index, ``ts_synthetic``): time-based
  views put them under ``no timestamp`` (``NO_TIMESTAMP``).
- ``id_collisions``: ``tool_call_id`` values reused by a different call
  (``id_collisions_v``): counted as new calls, not replays.
- ``quarantined_lines``: a file the selection reads from had lines a load set
  aside (the ``quarantine``): they are in none of the figures. ``load`` leaves it
  out (its summary counts them).
"""

from __future__ import annotations

import re

from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

import duckdb

from loopscope.analyses.errors import LoopscopeError
from loopscope.analyses.selection import Selection

NO_TIMESTAMP = "no timestamp"
"""The group name time-based views give prompts whose records have no time of their own."""
SYNTHETIC_BEFORE = "1971-01-01"
"""Readers date records without a time 1970-01-01 plus their index: a prompt that starts before this has none."""

# The files whose load reported a violation of one kind, among the files the selection reads from.
# {kind}: the violation kind; {records}: the table whose rows tie a file to the selection's prompts;
# {where}: a Selection condition over prompts_v aliased p.
FILE_VIOLATIONS_SQL = """
SELECT s.path, v.detail
FROM protocol_violations v
JOIN sources s USING (source_id)
WHERE v.kind = '{kind}'
  AND EXISTS (
      SELECT 1 FROM {records} r JOIN {prompts} p USING (conversation_id, prompt_id)
      WHERE r.source_id = v.source_id AND {where}
  )
ORDER BY s.path
"""
UNFLAGGED_SQL = FILE_VIOLATIONS_SQL.replace("{kind}", "unflagged_error_text").replace("{records}", "tool_calls")
UNREAD_EXIT_SQL = FILE_VIOLATIONS_SQL.replace("{kind}", "unread_exit_status").replace("{records}", "tool_calls")
NO_PREVIOUS_SQL = FILE_VIOLATIONS_SQL.replace("{kind}", "call_log_no_previous").replace("{records}", "loop_exits")
NO_TOOL_CALLS_SQL = FILE_VIOLATIONS_SQL.replace("{kind}", "no_tool_calls").replace("{records}", "loop_exits")
PROVIDER_ERRORS_RE = re.compile(r"MCP connector\), (\d+) of them error")
PROVIDER_TOOLS_SQL = FILE_VIOLATIONS_SQL.replace("{kind}", "provider_tools_only").replace("{records}", "loop_exits")
CODE_ACTIONS_SQL = FILE_VIOLATIONS_SQL.replace("{kind}", "code_actions").replace("{records}", "tool_calls")
NO_TIMESTAMPS_SQL = f"""
SELECT count(*) FILTER (WHERE p.first_ts < TIMESTAMP '{SYNTHETIC_BEFORE}'), count(*)
FROM {{prompts}} p
WHERE {{where}}
"""
# Whether the loads reported any violation of a kind at all (a few rows, usually none): the
# queries above join every record of the selection to its prompt, so they run only when it did.
ANY_FILE_VIOLATION_SQL = "SELECT 1 FROM protocol_violations WHERE kind = ? LIMIT 1"
ANY_QUARANTINED_SQL = "SELECT 1 FROM quarantine LIMIT 1"
# The files with quarantined lines among the files the selection reads from (a record of theirs
# belongs to a selected prompt), and among the files an analysis was given as PATHs that hold no
# record at all (every line quarantined: no record can lead to them), with how many lines each.
# {where}, {prompts}: as above; {named}: NAMED_SOURCES_CLAUSE with PATHs (its parameter their
# source ids), else nothing.
QUARANTINED_SQL = """
SELECT s.path, q.n
FROM (SELECT source_id, count(*) AS n FROM quarantine GROUP BY source_id) q
JOIN sources s USING (source_id)
WHERE EXISTS (
      SELECT 1 FROM tool_calls r JOIN {prompts} p USING (conversation_id, prompt_id)
      WHERE r.source_id = q.source_id AND {where}
  )
   OR EXISTS (
      SELECT 1 FROM loop_exits r JOIN {prompts} p USING (conversation_id, prompt_id)
      WHERE r.source_id = q.source_id AND {where}
  )
   {named}
ORDER BY s.path
"""
NAMED_SOURCES_CLAUSE = """OR (list_contains(?, q.source_id)
       AND NOT EXISTS (SELECT 1 FROM tool_calls r WHERE r.source_id = q.source_id)
       AND NOT EXISTS (SELECT 1 FROM loop_exits r WHERE r.source_id = q.source_id))"""
# The rows of id_collisions_v, counted without looking up each one's first call.
ID_COLLISIONS_SQL = """
SELECT count(*), count(DISTINCT c.conversation_id)
FROM {tool_calls_v} c
JOIN {prompts} p USING (conversation_id, prompt_id)
WHERE c.is_id_collision AND {where}
"""
# The same counts from the facts (store.facts): only a call whose id repeats in its conversation
# can collide, and ``repeat_facts`` numbers exactly those (about 2% of the calls), so the
# collisions are its rows flagged so; their prompt ids come from the records by ``seq`` (unique).
# Every call's prompt is in ``prompt_facts`` (its ids are NOT NULL), so with no condition on the
# prompts the join with them is left out.
FACTS_ID_COLLISIONS_SQL = """
SELECT count(*), count(DISTINCT c.conversation_id)
FROM tool_calls c SEMI JOIN (SELECT seq FROM repeat_facts WHERE is_id_collision) r ON r.seq = c.seq
JOIN prompt_facts p USING (conversation_id, prompt_id)
WHERE {where}
"""
FACTS_ALL_ID_COLLISIONS_SQL = """
SELECT count(*), count(DISTINCT conversation_id) FROM repeat_facts WHERE is_id_collision
"""
# Before any facts are built (``load``), which notices can have something to say, from the records
# alone: a file violation of a noticed kind; a record dated before SYNTHETIC_BEFORE (a prompt's
# first_ts is its earliest record's). When neither holds, those notices are empty, and the id
# collisions are counted straight from id_collisions_v (its windows run over the calls whose id
# repeats only), as many as the facts give (tests/test_load_facts.py).
NOTICE_CANDIDATES_SQL = f"""
SELECT EXISTS (SELECT 1 FROM protocol_violations WHERE kind IN ('unflagged_error_text', 'no_tool_calls', 'unread_exit_status',
                                                                'call_log_no_previous', 'code_actions',
                                                                'provider_tools_only'))
    OR EXISTS (SELECT 1 FROM tool_calls WHERE ts < TIMESTAMP '{SYNTHETIC_BEFORE}')
    OR EXISTS (SELECT 1 FROM loop_exits WHERE ts < TIMESTAMP '{SYNTHETIC_BEFORE}')
"""
# {where}: a Selection condition over the prompt's ids only (p.conversation_id, p.prompt_id).
RECORDS_ID_COLLISIONS_SQL = """
SELECT count(*), count(DISTINCT p.conversation_id) FROM id_collisions_v p WHERE {where}
"""
AGENTS_SQL = "SELECT DISTINCT agent FROM prompts_v ORDER BY agent LIMIT 20"
TAGS_SQL = """
SELECT DISTINCT k || '=' || (tags->>k) AS tag
FROM (SELECT tags, unnest(json_keys(tags)) AS k FROM prompts_v WHERE tags IS NOT NULL)
ORDER BY tag
LIMIT 20
"""


@dataclass(frozen=True)
class Notice:
    """One thing the user must know about the figures: ``kind``, a sentence, what to do, how many."""

    kind: str
    message: str
    hint: str
    count: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


def notices(
    con: duckdb.DuckDBPyConnection, selection: Selection | None = None, *, build_facts: bool = True
) -> list[Notice]:
    """The notices of the prompts ``selection`` picks (all prompts when None).

    ``build_facts=False`` (``load``, which leaves the facts to the first analysis): when the
    facts are not up to date and the selection picks by ids and files only, a cheap look at the
    records first (``NOTICE_CANDIDATES_SQL``): when no file violation or undated record can make
    a notice, the id collisions are counted from the records and no facts are built; otherwise
    the facts are brought up to date as for any analysis. The same notices either way.
    """
    from loopscope.analyses.store.facts import facts_fresh
    from loopscope.analyses.store.relations import relations

    chosen = selection or Selection()
    if (not build_facts and getattr(con, "materialises_facts", True) and _ids_only(chosen)
            and not facts_fresh(con)):
        row = con.execute(NOTICE_CANDIDATES_SQL).fetchone()
        if not (row and row[0]):
            where, params = chosen.where("p")
            collisions, conversations = con.execute(RECORDS_ID_COLLISIONS_SQL.format(where=where), params).fetchone() \
                or (0, 0)
            return [_id_collisions_notice(int(collisions), int(conversations))] if collisions else []

    where, params = (selection or Selection()).where("p")
    prompts = relations(con).prompts
    found: list[Notice] = []
    for kind, sql in FILE_NOTICE_SQL:
        for path, detail in _file_violations(con, kind, sql, where, prompts, params):
            count = _leading_count(detail)
            message, hint = _file_notice_text(kind, path, count, detail)
            found.append(Notice(kind, message, hint, count))
    if con.execute(ANY_QUARANTINED_SQL).fetchall():
        named = list(chosen.source_ids or ())
        query = QUARANTINED_SQL.format(where=where, prompts=prompts, named=NAMED_SOURCES_CLAUSE if named else "")
        for path, count in con.execute(query, params + params + ([named] if named else [])).fetchall():
            found.append(
                Notice(
                    "quarantined_lines",
                    f"{count} line(s) of {path} could not be read and are in none of these figures (quarantined)",
                    f"loopscope quarantine --file {PurePath(path).name} lists them with the reason for each",
                    int(count),
                )
            )
    synthetic, total = con.execute(NO_TIMESTAMPS_SQL.format(where=where, prompts=prompts), params).fetchone() or (0, 0)
    if synthetic:
        found.append(
            Notice(
                "no_timestamps",
                f"{synthetic} of {total} prompts come from messages without timestamps: their order is the order "
                f"in the file, and time-based views (days, weeks, newest first) show them as '{NO_TIMESTAMP}'",
                "nothing to fix in loopscope; log a time with each message to get weekly figures",
                int(synthetic),
            )
        )
    collisions, conversations = _id_collisions(con, where, params)
    if collisions:
        found.append(_id_collisions_notice(collisions, conversations))
    return found


def _id_collisions_notice(collisions: int, conversations: int) -> Notice:
    return Notice(
        "id_collisions",
        f"{collisions} tool call(s) in {conversations} conversation(s) reuse the tool_call_id of a different "
        "earlier call (another tool or other arguments): counted as new calls, not replays",
        "the harness reuses ids; loopscope audit lists them as reused_tool_call_id protocol violations",
        int(collisions),
    )


def _ids_only(selection: Selection) -> bool:
    """The selection picks prompts by their ids and files only (``load``'s): its condition reads no other column."""
    return not (selection.since or selection.until or selection.agents or selection.tags or selection.untagged)


def _file_violations(
    con: duckdb.DuckDBPyConnection, kind: str, sql: str, where: str, prompts: str, params: list[object]
) -> list[tuple[str, str]]:
    """The files with a violation of ``kind`` among the selection's: ``sql`` runs only if the store has one."""
    if not con.execute(ANY_FILE_VIOLATION_SQL, [kind]).fetchall():
        return []
    return con.execute(sql.format(where=where, prompts=prompts), params).fetchall()


def _id_collisions(con: duckdb.DuckDBPyConnection, where: str, params: list[object]) -> tuple[int, int]:
    """How many of the selection's calls are id collisions, and in how many conversations."""
    from loopscope.analyses.store.relations import FACTS, relations

    rel = relations(con)
    if rel.prompts != FACTS.prompts:  # the views: no facts to read
        sql = ID_COLLISIONS_SQL.format(where=where, prompts=rel.prompts, tool_calls_v=rel.tool_calls)
    elif where == "TRUE" and not params:
        sql = FACTS_ALL_ID_COLLISIONS_SQL
    else:
        sql = FACTS_ID_COLLISIONS_SQL.format(where=where)
    row = con.execute(sql, params).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


FILE_NOTICE_SQL = (
    ("unflagged_error_text", UNFLAGGED_SQL),
    ("unread_exit_status", UNREAD_EXIT_SQL),
    ("no_tool_calls", NO_TOOL_CALLS_SQL),
    ("provider_tools_only", PROVIDER_TOOLS_SQL),
    ("code_actions", CODE_ACTIONS_SQL),
    ("call_log_no_previous", NO_PREVIOUS_SQL),
)
"""The readers' file findings that make a notice (``protocol_violations`` kinds), in the order notices lists them."""


def _file_notice_text(kind: str, path: str, count: int, detail: str) -> tuple[str, str]:
    """The message and hint of the notice for a reader's file finding of ``kind`` (``count`` read from ``detail``)."""
    if kind == "unflagged_error_text":
        return (
            f"{count} tool result(s) in {path} read like an error but carry no error flag: "
            "they were counted as successes, so the error figures are too low",
            "load it again with --error-when prefix (text starts with 'Error:') or --error-when json-error-key "
            "(docs/inputs.md)",
        )
    if kind == "unread_exit_status":
        tools = detail.split("command tools (", 1)[-1].split(")", 1)[0] if "command tools (" in detail else "?"
        return (
            f"{count} output(s) of command tools in {path} ({tools}) state no exit code: loopscope cannot "
            "tell whether those commands failed and counted them as successes, so the error figures may be "
            "too low",
            ("OpenHands writes each command's exit code in its run observation (extras.metadata.exit_code): "
             "an edited or trimmed event log loses it; see docs/inputs.md")
            if "OpenHands run" in tools else
            "Codex writes 'Process exited with code N' (or 'Exit code: N') in each command's output: an edited "
            "or redacted log loses it; if your Codex writes it another way, see docs/inputs.md",
        )
    if kind == "no_tool_calls":
        return (
            f"{path}: {count} model response(s) and not one tool call: if this agent writes its actions in the "
            "text (a command block, a ReAct 'Action:' line) and gets the result back as a user message, "
            "loopscope cannot see those actions and counts every observation as a prompt",
            "a chat without tools needs nothing; for a text-action agent these figures mean nothing: log its "
            "tool calls as tool_calls / tool_use (function calling) (docs/inputs.md)",
        )
    if kind == "provider_tools_only":
        # The reader's detail is "FILE: N call(s) of tools ... (..., MCP connector), E of them error(s), ...":
        # the last match, so that a file name holding the same words cannot be read as the count.
        matches = PROVIDER_ERRORS_RE.findall(detail)
        errors = matches[-1] if matches else "?"
        return (
            f"{path}: {count} tool call(s) ({errors} error(s)) ran on the provider's side (Anthropic server "
            "tools such as web_search, the MCP connector) and the agent ran none: they are in none of these "
            "figures, which count the tool calls the agent runs",
            "nothing to fix: the provider runs those tools and reports their errors to the model itself "
            "(docs/inputs.md, Anthropic server tools)",
        )
    if kind == "code_actions":
        return (
            f"{path}: {count} step(s) of a smolagents CodeAgent ran Python code: each counts as one call of "
            "python_interpreter (an error when the code raised), and the tools that code called are in none of "
            "these figures",
            "the memory does not say which tools the code called: to count them, run a ToolCallingAgent, or "
            "export the run's OpenTelemetry spans (openinference-instrumentation-smolagents) and load those "
            "(docs/inputs.md)",
        )
    assert kind == "call_log_no_previous", kind
    return (
        f"{count} logged Responses API call(s) in {path} continue a response (previous_response_id) that "
        "is not in the file: each was read without what came before it, so the calls made before are in "
        "none of these figures",
        "load the log that holds the earlier calls together with it (docs/inputs.md, model-call logs)",
    )


def _leading_count(detail: str) -> int:
    """The count in a reader's ``unflagged_error_text`` detail (``"FILE: N tool result(s) ..."``)."""
    head = detail.split(": ", 1)[-1].split(" ", 1)[0]
    return int(head) if head.isdigit() else 0


def check_selection(con: duckdb.DuckDBPyConnection, selection: Selection) -> None:
    """Refuse an ``--agent`` or ``--tag`` that no prompt in the store has, naming what exists.

    Raises:
        LoopscopeError: an agent or tag matches no prompt.
    """
    for agent in selection.agents:
        if not con.execute("SELECT 1 FROM prompts_v WHERE agent = ? LIMIT 1", [agent]).fetchall():
            existing = [row[0] for row in con.execute(AGENTS_SQL).fetchall()]
            raise LoopscopeError(
                f"no prompt has agent {agent!r}",
                hint="agents in the store: " + (", ".join(existing) if existing else "none (load logs first)"),
            )
    for key, value in selection.tags:
        if not con.execute("SELECT 1 FROM prompts_v WHERE tags->>? = ? LIMIT 1", [key, value]).fetchall():
            existing = [row[0] for row in con.execute(TAGS_SQL).fetchall()]
            raise LoopscopeError(
                f"no prompt has tag {key}={value}",
                hint="tags in the store: " + (", ".join(existing) if existing else "none"),
            )
