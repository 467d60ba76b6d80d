"""DuckDB SQL -> ClickHouse SQL: sqlglot, plus the few rewrites loopscope's queries need.

The analyses write their SQL once, in DuckDB's dialect. On a ClickHouse store
(``store.clickhouse``) each statement is transpiled by sqlglot and then
rewritten where sqlglot's output would run but mean something else:

- **Parameters.** DuckDB's ``?`` (positional) and ``$1`` become ClickHouse
  server-side parameters ``{p1:Type}``; the type comes from the Python value
  bound at execution time (``param_type``), so values are never formatted into
  the text.
- **Exact quantiles.** ``quantile_cont(x, q)`` (and ``median``) become
  ``quantileExactInclusive(q)(x)``: the same linear interpolation between
  closest ranks. ClickHouse's ``quantile``/``median`` are approximate
  (reservoir sampling) and would give other figures.
- **Output names.** ClickHouse names an unaliased ``x.col`` projection
  ``x.col`` (DuckDB: ``col``), which breaks a later ``USING (col)`` or
  ``s.col``; each such projection gets ``AS col``.
- **Full regex match.** ``regexp_full_match(s, p)`` (no sqlglot translation)
  becomes ``match(s, concat('^(?:', p, ')$'))``: both engines use RE2.
- ``LATERAL`` joins have no ClickHouse equivalent: ``UntranslatableSQL`` is
  raised (the views that used them have portable forms in
  ``store.clickhouse``).

Session settings the translations rely on (``SETTINGS``): ``join_use_nulls =
1`` (an outer join's missing side is NULL, not the type's default) and
``aggregate_functions_null_for_empty = 1`` (``max`` of no rows is NULL, as
in SQL). Translations are cached by statement text.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from loopscope.analyses.errors import LoopscopeError

__all__ = ["SETTINGS", "Translated", "UntranslatableSQL", "bind", "param_type", "translate"]

SETTINGS = {
    "join_use_nulls": 1,
    "aggregate_functions_null_for_empty": 1,
    "session_timezone": "UTC",
}
"""ClickHouse settings every translated statement runs with (see the module docstring)."""

_MARK = "__ls_p{}__"
_MARK_RE = re.compile(r"__ls_p(\d+)__")


class UntranslatableSQL(LoopscopeError):
    """A statement uses a DuckDB feature with no ClickHouse translation."""


@dataclass(frozen=True)
class Translated:
    """A statement in ClickHouse's dialect; ``__ls_pN__`` marks where the N-th (1-based) parameter goes."""

    text: str
    n_params: int


def _number_placeholders(sql: str) -> str:
    """Rewrite positional ``?`` as ``$1``, ``$2``... in order (DuckDB does not mix the two styles)."""
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    out: list[str] = []
    last = 0
    n = 0
    for token in tokens:
        if token.token_type == TokenType.PLACEHOLDER and token.text == "?":
            n += 1
            out.append(sql[last:token.start])
            out.append(f"${n}")
            last = token.end + 1
    out.append(sql[last:])
    return "".join(out)


def _mark_parameter(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Placeholder):
        return exp.column(_MARK.format(int(node.this)))
    return node


def _rewrite(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.PercentileCont):
        return exp.ParameterizedAgg(
            this="quantileExactInclusive", expressions=[node.expression], params=[node.this]
        )
    if isinstance(node, exp.Median):
        return exp.ParameterizedAgg(
            this="quantileExactInclusive", expressions=[exp.Literal.number("0.5")], params=[node.this]
        )
    if type(node).__name__ == "RegexpFullMatch" or (
        isinstance(node, exp.Anonymous) and str(node.this).lower() == "regexp_full_match"
    ):
        text, pattern = (node.this, node.expression) if not isinstance(node, exp.Anonymous) else node.expressions[:2]
        anchored = exp.func("concat", exp.Literal.string("^(?:"), pattern, exp.Literal.string(")$"))
        return exp.func("match", text, anchored)
    if isinstance(node, exp.Lateral):
        raise UntranslatableSQL("a LATERAL join has no ClickHouse translation")
    return node


def _name_qualified_outputs(tree: exp.Expression) -> None:
    """``SELECT x.col`` -> ``SELECT x.col AS col`` where that name is not taken (ClickHouse keeps ``x.col``)."""
    for select in tree.find_all(exp.Select):
        names = [e.alias_or_name for e in select.expressions]
        for i, projection in enumerate(select.expressions):
            if isinstance(projection, exp.Column) and projection.table and not isinstance(projection.this, exp.Star):
                name = projection.name
                if names.count(name) == 1:
                    select.expressions[i] = exp.alias_(projection.copy(), name, quoted=False)
        select.set("expressions", select.expressions)


@lru_cache(maxsize=2048)
def translate(sql: str) -> Translated:
    """One DuckDB statement in ClickHouse's dialect (cached by text).

    Raises:
        UntranslatableSQL: the statement uses a feature without translation, or sqlglot cannot parse it.
    """
    numbered = _number_placeholders(sql)
    try:
        tree = sqlglot.parse_one(numbered, read="duckdb")
    except SqlglotError as exc:
        raise UntranslatableSQL(f"cannot translate a statement for ClickHouse: {exc}") from None
    n_params = max((int(p.this) for p in tree.find_all(exp.Placeholder) if p.this is not None), default=0)
    tree = tree.transform(_mark_parameter).transform(_rewrite)
    _name_qualified_outputs(tree)
    return Translated(tree.sql(dialect="clickhouse"), n_params)


def param_type(value: object) -> str:
    """The ClickHouse type a Python value is bound as."""
    if value is None:
        return "Nullable(String)"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, dt.datetime):
        return "DateTime64(6)"
    if isinstance(value, dt.date):
        return "Date"
    if isinstance(value, (list, tuple)):
        inner = {param_type(v) for v in value if v is not None}
        element = inner.pop() if len(inner) == 1 else "String"
        if any(v is None for v in value):
            element = f"Nullable({element})"
        return f"Array({element})"
    return "String"


def bind(translated: Translated, params: object) -> tuple[str, dict[str, object]]:
    """The statement text with typed parameter slots, and the parameters by name, for ``client.query``.

    ``params`` is a list (``?`` / ``$N``, in order) or None.
    """
    values = list(params) if isinstance(params, (list, tuple)) else ([] if params is None else [params])
    if len(values) < translated.n_params:
        raise ValueError(f"the statement takes {translated.n_params} parameters, {len(values)} given")
    named: dict[str, object] = {}

    def slot(match: re.Match[str]) -> str:
        n = int(match.group(1))
        value = values[n - 1]
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if isinstance(value, tuple):
            value = list(value)
        named[f"p{n}"] = value
        return "{p%d:%s}" % (n, param_type(value))

    return _MARK_RE.sub(slot, translated.text), named
