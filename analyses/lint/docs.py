"""Keep the rule table in docs/lint.md in step with the catalog.

``python -m loopscope.analyses.lint.docs docs/lint.md`` rewrites the part of
the file between ``<!-- RULES:START -->`` and ``<!-- RULES:END -->`` from
``RULES``; ``--check`` exits 1 when the file is stale (a test runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from loopscope.analyses.lint.rules import RULES

START = "<!-- RULES:START -->"
END = "<!-- RULES:END -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "\\n")


def rules_markdown() -> str:
    """The catalog as a Markdown section: a summary table, then each rule's rewrite and example."""
    lines = [
        "| id | name | severity | makes it generic | reason |",
        "|---|---|---|---|---|",
    ]
    for rule in RULES:
        lines.append(
            f"| {rule.id} | {rule.name} | {rule.severity} | {'yes' if rule.generic else 'no'} | {_cell(rule.reason)} |"
        )
    lines.append("")
    for rule in RULES:
        lines += [
            f"### {rule.id} {rule.name}",
            "",
            f"- **flags**: `{_cell(rule.example)}`",
            f"- **rewrite**: {rule.rewrite}",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def render(doc: str) -> str:
    """``doc`` with its rules section regenerated."""
    head, _, rest = doc.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{rules_markdown()}{END}{tail}"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"] or ["docs/lint.md"]
    path = Path(paths[0])
    doc = path.read_text(encoding="utf-8")
    if START not in doc or END not in doc:
        print(f"{path}: no {START} ... {END} section", file=sys.stderr)
        return 1
    new = render(doc)
    if check:
        if new != doc:
            print(f"{path} is stale: run python -m loopscope.analyses.lint.docs {path}", file=sys.stderr)
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
