"""DuckDB SQL -> ClickHouse SQL: sqlglot, plus the few rewrites loopscope's queries need.

The analyses write their SQL once, in DuckDB's dialect. On a ClickHouse store
(``store.clickhouse``) each statement is transpiled by sqlglot and then
rewritten where sqlglot's output would run but mean something else:

- **Parameters.** DuckDB's ``?`` (positional) and ``$1`` become ClickHouse
  server-side parameters ``{p1:Type}``; the type comes from the Python value
  bound at execution time (``param_type``), so values are never formatted into
  the text.
- **Exact quantiles.** ``quantile_cont(x, q)`` (and ``median``) become DuckDB's
  own computation over ``arraySort(groupArray(x))``: rank ``(n - 1) * q``, then
  ``lo * (1 - d) + hi * d``. ClickHouse's ``quantile``/``median`` are approximate
  (reservoir sampling); ``quantileExactInclusive`` interpolates as
  ``lo + (hi - lo) * d``, which differs from DuckDB in the last bit.
- **Output names.** ClickHouse names an unaliased ``x.col`` projection
  ``x.col`` (DuckDB: ``col``), which breaks a later ``USING (col)`` or
  ``s.col``; each such projection gets ``AS col``.
- **Full regex match.** ``regexp_full_match(s, p)`` (no sqlglot translation)
  becomes ``match(s, concat('^(?:', p, ')$'))``: both engines use RE2.
- **Booleans.** ClickHouse gives a comparison as ``UInt8`` (0/1); a
  predicate in a SELECT list is cast to ``Bool`` so the views' flags
  (``is_open``, ``is_replay``...) come back as booleans, as from DuckDB.
- ``bool_or`` / ``bool_and`` become ``max`` / ``min``; several ``unnest`` in
  one SELECT list are zipped (``arrayZip``: two ``arrayJoin`` would cross
  them); ``suffix``/``prefix`` become ``endsWith``/``startsWith``;
  ``list(x ORDER BY k)`` sorts ``groupArray`` by the key; ``len`` of a list
  is ``length``; ``LIMIT NULL`` is no limit; ``json_extract_string(x, ?)`` with a bound JSONPath
  (the tag filters and ``--by tag:KEY``) is ``JSON_VALUE``, NULL when the key is absent.
- ``LATERAL`` joins have no ClickHouse equivalent: ``UntranslatableSQL`` is
  raised (the views that used them have portable forms in
  ``store.clickhouse``).

Session settings the translations rely on (``SETTINGS``): ``join_use_nulls =
1`` (an outer join's missing side is NULL, not the type's default) and
``aggregate_functions_null_for_empty = 1`` (``max`` of no rows is NULL, as
in SQL), and ``final = 1`` (a record delivered twice to a deduplicating table
counts once; see ``store.clickhouse_otel``). Translations are cached by statement text.
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
    "final": 1,
    "allow_experimental_correlated_subqueries": 1,
    "function_json_value_return_type_allow_nullable": 1,
    "cast_keep_nullable": 1,
}
"""ClickHouse settings every translated statement runs with (see the module docstring)."""

_MARK = "__ls_p{}__"
_NULL_MARK = "__ls_n{}__"
NO_LIMIT = 2**63 - 1
_MARK_RE = re.compile(r"__ls_([pn])([A-Za-z0-9]+(?:_[A-Za-z0-9]+)*)__")


class UntranslatableSQL(LoopscopeError):
    """A statement uses a DuckDB feature with no ClickHouse translation."""


@dataclass(frozen=True)
class Translated:
    """A statement in ClickHouse's dialect; ``__ls_pN__`` marks where the N-th (1-based) parameter goes."""

    text: str
    n_params: int
    limit_params: frozenset[str] = frozenset()
    """Parameters in LIMIT / OFFSET: NULL there means no limit (DuckDB); ClickHouse needs a number."""
    array_params: frozenset[str] = frozenset()
    """Parameters cast to a list: NULL there is bound as an empty list (ClickHouse has no NULL array)."""


def _number_placeholders(sql: str) -> str:
    """Rewrite positional ``?`` as ``$1``, ``$2``... in order (DuckDB does not mix the two styles)."""
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    out: list[str] = []
    last = 0
    n = 0
    for token in tokens:
        # sqlglot reads "?::" (a parameter cast, as in ?::VARCHAR[]) as one token
        if (token.token_type == TokenType.PLACEHOLDER and token.text == "?") or token.token_type == TokenType.QDCOLON:
            n += 1
            out.append(sql[last:token.start])
            out.append(f"${n}" + token.text[1:])
            last = token.end + 1
    out.append(sql[last:])
    return "".join(out)


def _is_array_cast(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.ARRAY


def _mark_parameter(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Placeholder):
        return exp.column(_MARK.format(node.this))
    # ``?::VARCHAR[] IS NULL``: ClickHouse has no NULL array; whether the value is NULL is known at binding
    if (isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) and _is_array_cast(node.this)
            and isinstance(node.this.this, exp.Placeholder)):
        return exp.column(_NULL_MARK.format(node.this.this.this))
    return node


_RENAMED = {"suffix": "endsWith", "prefix": "startsWith"}


def _ordered_list(order: exp.Order) -> exp.Expression:
    """``list(x ORDER BY k...)`` -> x of ``groupArray((x, (k...)))`` sorted by the keys (NULLs of x kept)."""
    keys = order.expressions
    directions = {bool(k.args.get("desc")) for k in keys}
    if len(directions) != 1:
        raise UntranslatableSQL("list(... ORDER BY ...) with mixed directions has no ClickHouse translation")
    key = exp.Tuple(expressions=[k.this for k in keys]) if len(keys) > 1 else keys[0].this
    pairs = exp.func("groupArray", exp.Tuple(expressions=[order.this, key]))
    sort = "arrayReverseSort" if directions.pop() else "arraySort"
    second = exp.Lambda(this=exp.Dot(this=exp.column("_ls_t"), expression=exp.Literal.number(2)),
                        expressions=[exp.to_identifier("_ls_t")])
    first = exp.Lambda(this=exp.Dot(this=exp.column("_ls_t"), expression=exp.Literal.number(1)),
                       expressions=[exp.to_identifier("_ls_t")])
    return exp.func("arrayMap", first, exp.func(sort, second, pairs))


def _zip_unnests(select: exp.Select) -> None:
    """``SELECT unnest(a), unnest(b)`` zips the lists (DuckDB); two arrayJoin would cross them: zip first."""
    found = [(i, e) for i, e in enumerate(select.expressions) if isinstance(e.unalias(), (exp.Explode, exp.Unnest))]
    if len(found) < 2:
        return
    lists = []
    for _, e in found:
        inner = e.unalias()
        lists.append(inner.this if isinstance(inner, exp.Explode) else inner.expressions[0])
    zipped = exp.alias_(exp.func("arrayJoin", exp.Anonymous(this="arrayZip", expressions=lists)), "_ls_zip")
    for k, (i, e) in enumerate(found, start=1):
        source: exp.Expression = zipped if k == 1 else exp.column("_ls_zip")
        element = exp.Anonymous(this="tupleElement", expressions=[source, exp.Literal.number(k)])
        select.expressions[i] = exp.alias_(element, e.alias) if e.alias else element
    select.set("expressions", select.expressions)


# DuckDB's quantile_cont, step by step: the sorted values, rank (n - 1) * q, and between the two
# closest ranks lo * (1 - d) + hi * d (quantileExactInclusive computes lo + (hi - lo) * d, which
# differs in the last bit: 2.98 against DuckDB's 2.9799999999999995 for [1, 3] at 0.99).
_QUANTILE_TEMPLATE = """
if(length(arraySort(groupArray(toFloat64(__ls_v)))) = 0, NULL,
   if(floor((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q)
        = ceil((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q),
      arrayElement(arraySort(groupArray(toFloat64(__ls_v))),
                   toUInt64(floor((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q)) + 1),
      arrayElement(arraySort(groupArray(toFloat64(__ls_v))),
                   toUInt64(floor((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q)) + 1)
        * (1 - ((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q
                - floor((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q)))
      + arrayElement(arraySort(groupArray(toFloat64(__ls_v))),
                     toUInt64(ceil((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q)) + 1)
        * ((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q
           - floor((length(arraySort(groupArray(toFloat64(__ls_v)))) - 1) * __ls_q))))
"""


def _duckdb_quantile(value: exp.Expression, q: exp.Expression) -> exp.Expression:
    """``quantile_cont(value, q)`` computed the way DuckDB does, to the last bit."""
    template = sqlglot.parse_one(_QUANTILE_TEMPLATE, read="clickhouse")

    def fill(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name in ("__ls_v", "__ls_q") and not node.table:
            return (value if node.name == "__ls_v" else q).copy()
        return node

    return exp.Paren(this=template.transform(fill))


def _rewrite(node: exp.Expression) -> exp.Expression:
    if (isinstance(node, exp.JSONExtractScalar) and "only_json_types" not in node.args
            and not isinstance(node.expression, (exp.Literal, exp.JSONPath))):
        # json_extract_string(tags, ?) with a bound JSONPath ('$."model"', the tag filters and
        # --by tag:KEY): ClickHouse's JSON_VALUE reads the same path (sqlglot's JSONExtractString
        # takes keys, not a path, and matched nothing); NULL when the key is absent
        # (function_json_value_return_type_allow_nullable), as in DuckDB. ``tags->>?`` (a bound
        # key, only_json_types) keeps sqlglot's translation.
        return exp.Anonymous(this="JSON_VALUE", expressions=[node.this, node.expression])
    if isinstance(node, exp.PercentileCont):
        return _duckdb_quantile(node.this, node.expression)
    if isinstance(node, exp.Median):
        return _duckdb_quantile(node.this, exp.Literal.number("0.5"))
    if type(node).__name__ == "RegexpFullMatch" or (
        isinstance(node, exp.Anonymous) and str(node.this).lower() == "regexp_full_match"
    ):
        text, pattern = (node.this, node.expression) if not isinstance(node, exp.Anonymous) else node.expressions[:2]
        anchored = exp.func("concat", exp.Literal.string("^(?:"), pattern, exp.Literal.string(")$"))
        return exp.Cast(this=exp.func("match", text, anchored), to=exp.DataType.build("Bool", dialect="clickhouse"))
    if isinstance(node, exp.Length) and isinstance(node.this, exp.Cast) and node.this.to.this == exp.DataType.Type.ARRAY:
        return exp.Anonymous(this="length", expressions=[node.this])  # of a list; ClickHouse's CHAR_LENGTH takes strings only
    if isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
        return _ordered_list(node.this)
    if isinstance(node, (exp.First, exp.Last)) and isinstance(node.this, exp.Order):
        # first(x ORDER BY k): the first (last) element of the ordered list; NULLs of x count, as in DuckDB
        index = exp.Literal.number(1) if isinstance(node, exp.First) else exp.Neg(this=exp.Literal.number(1))
        return exp.Anonymous(this="arrayElement", expressions=[_ordered_list(node.this), index])
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in _RENAMED:
        renamed = exp.Anonymous(this=_RENAMED[str(node.this).lower()], expressions=node.expressions)
        return exp.Cast(this=renamed, to=exp.DataType.build("Bool", dialect="clickhouse"))
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node.set("materialized", None)  # AS [NOT] MATERIALIZED: a DuckDB planner hint, no ClickHouse syntax
        return node
    if isinstance(node, exp.Join) and node.args.get("kind") in ("ANTI", "SEMI") and not node.args.get("side"):
        node.set("side", "LEFT")  # ClickHouse spells them LEFT ANTI / LEFT SEMI JOIN
        return node
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "hash":
        return exp.Anonymous(this="cityHash64", expressions=node.expressions)  # only ever a grouping key
    if isinstance(node, (exp.LogicalOr, exp.LogicalAnd)):  # bool_or / bool_and: max / min of a Bool
        return exp.Anonymous(this="max" if isinstance(node, exp.LogicalOr) else "min", expressions=[node.this])
    if isinstance(node, exp.Select):
        _zip_unnests(node)
    if isinstance(node, exp.Lateral):
        raise UntranslatableSQL("a LATERAL join has no ClickHouse translation")
    return node


_PREDICATES = (exp.Predicate, exp.Connector, exp.Not, exp.Boolean, exp.Exists, exp.ArrayContains, exp.StartsWith)


def _is_predicate(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Coalesce):
        return all(_is_predicate(e) for e in [node.this, *node.expressions])
    return isinstance(node, _PREDICATES)


def _bool_outputs(tree: exp.Expression) -> None:
    """A predicate in a SELECT list -> ``CAST(... AS Bool)``: ClickHouse gives comparisons as UInt8 (0/1)."""
    for select in tree.find_all(exp.Select):
        for i, projection in enumerate(select.expressions):
            inner = projection.unalias()
            if _is_predicate(inner):
                cast = exp.Cast(this=exp.Paren(this=inner.copy()), to=exp.DataType.build("Bool", dialect="clickhouse"))
                name = projection.alias_or_name if isinstance(projection, exp.Alias) else None
                select.expressions[i] = exp.alias_(cast, name) if name else cast
        select.set("expressions", select.expressions)


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
    n_params = max((int(p.this) for p in tree.find_all(exp.Placeholder) if str(p.this).isdigit()), default=0)
    limits = frozenset(
        str(p.this) for node in tree.find_all(exp.Limit, exp.Offset) for p in node.find_all(exp.Placeholder)
        if p.this is not None
    )
    arrays = frozenset(
        str(c.this.this) for c in tree.find_all(exp.Cast) if _is_array_cast(c) and isinstance(c.this, exp.Placeholder)
    ) | frozenset(  # list_contains(?, x): the parameter is a list
        str(c.this.this) for c in tree.find_all(exp.ArrayContains) if isinstance(c.this, exp.Placeholder)
    )
    tree = tree.transform(_mark_parameter).transform(_rewrite)
    _name_qualified_outputs(tree)
    _bool_outputs(tree)
    return Translated(tree.sql(dialect="clickhouse"), n_params, limits, arrays)


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

    ``params``: a list (``?`` / ``$N``, in order), a dict (``$name``), or None.
    """
    if isinstance(params, dict):
        by_key = {str(k): v for k, v in params.items()}
    else:
        values = list(params) if isinstance(params, (list, tuple)) else ([] if params is None else [params])
        if len(values) < translated.n_params:
            raise ValueError(f"the statement takes {translated.n_params} parameters, {len(values)} given")
        by_key = {str(i): v for i, v in enumerate(values, start=1)}
    named: dict[str, object] = {}

    def slot(match: re.Match[str]) -> str:
        kind, key = match.group(1), match.group(2)
        value = by_key[key]
        if kind == "n":  # ``?::T[] IS NULL``
            return "true" if value is None else "false"
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if isinstance(value, tuple):
            value = list(value)
        if value is None and key in translated.limit_params:
            value = NO_LIMIT
        name = f"p{key}"
        ch_type = param_type(value)
        if value is None and key in translated.array_params:
            value, ch_type = [], "Array(String)"  # tested NULL above; a NULL array does not exist here
        named[name] = value
        return "{%s:%s}" % (name, ch_type)

    return _MARK_RE.sub(slot, translated.text), named
