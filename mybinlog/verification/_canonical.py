"""Canonical rows, fast: per column a function with the result of
:func:`~mybinlog.clickhouse.types.canonical`, the usual value forms inlined as expression templates, and one
generated function per table for a whole row."""

from __future__ import annotations

import datetime as dt
import decimal
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import MybinlogError, TypeMappingError

if TYPE_CHECKING:
    from ..clickhouse import Capabilities
    from ..ddl import ColumnDef

__all__ = ["Canon", "Row", "fast_canonical"]


Canon = Callable[[Any], "str | None"]
"""One column's canonical form: a value (MySQL driver value or ClickHouse text) -> comparable text, None = NULL."""


Row = tuple["str | None", ...]


# ---------------------------------------------------------------------------------------------------------------
# fast canonical forms


# Fast canonical forms. ``canonical()`` (in types) is general: any value form the encoder accepts, any text
# ClickHouse prints, and costs a few microseconds per value. Verify calls it for every value of both sides, so for
# the one form a value usually has (an ``int`` from the driver, ClickHouse's own text of a ``DateTime64(3)``...)
# an expression applies the same rule with one or two builtin calls, and everything else (NULL, zero dates, values
# outside ClickHouse's range, unusual types) goes to ``canonical``. The result is always canonical's
# (tests/unit/verification/test_verify.py checks it on the workload's values of every type). Expressions are
# templates over ``{x}`` (the value) and ``{f}`` (the canonical function); a table's row function is generated from
# them, so an integer or text column costs no function call at all.

_CALL = "{f}({x})"


def fast_canonical(
    col: ColumnDef, caps: Capabilities, *, side: Literal["source", "clickhouse"], replica_type: str | None = None
) -> Canon:
    """A function with the result of :func:`~..types.canonical` for one column, fast for the usual value forms.

    ClickHouse-side fast paths are used only when the replica column has the type mybinlog creates
    (``replica_type``; without it, or for another type, every value goes through ``canonical``).
    """
    template, slow = _column_template(col, caps, side=side, replica_type=replica_type)
    func = _compile_row([template], [slow], single=True)
    _TEMPLATES[func] = (template, slow)
    return func


_TEMPLATES: weakref.WeakKeyDictionary[Callable[..., Any], tuple[str, Canon]] = weakref.WeakKeyDictionary()


def _column_template(
    col: ColumnDef, caps: Capabilities, *, side: Literal["source", "clickhouse"], replica_type: str | None
) -> tuple[str, Canon]:
    from ..clickhouse.types import canonical, column_spec

    slow = canonical(col, caps, side=side)
    spec = column_spec(col, caps)
    name = col.name
    where = "MySQL" if side == "source" else "ClickHouse"

    def guarded(value: Any) -> str | None:
        try:
            return slow(value)
        except MybinlogError:
            raise
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise TypeMappingError(
                f"column `{name}`: cannot compare the {where} value {value!r:.80} ({type(value).__name__}): {exc}"
            ) from exc

    if side == "source":
        template = _source_template(spec)
    elif replica_type is not None and _unwrap_nullable(replica_type) == spec.ch.replace(" ", ""):
        template = _clickhouse_template(spec)
    else:
        template = _CALL
    return template, guarded


def _unwrap_nullable(ch_type: str) -> str:
    t = ch_type.replace(" ", "")
    return t[9:-1] if t.startswith("Nullable(") and t.endswith(")") else t


def _source_template(spec: Any) -> str:
    """The expression for a value as asyncmy/pymysql returns it (see ``types._encoders._encoder`` for the rules)."""
    kind = spec.kind
    if kind == "int":
        if spec.unsigned:
            return "(str({x}) if type({x}) is int and {x} >= 0 else {f}({x}))"
        return "(str({x}) if type({x}) is int else {f}({x}))"
    if kind == "text" and spec.char:
        return "({x}.rstrip(' ') if type({x}) is str else {f}({x}))"
    if kind in ("text", "enum"):
        return "({x} if type({x}) is str else {f}({x}))"
    if kind == "float64":
        return "(('0' if {x} == 0.0 else format({x}, '.15g')) if type({x}) is float else {f}({x}))"
    if kind == "decimal":
        # the driver's Decimal of a DECIMAL(p, s) has exactly s digits; anything else (and zero: no "-0") -> slow
        scale = int(spec.scale)
        if scale == 0:
            return "(format({x}, 'f') if type({x}) is Decimal and {x} and {x}.as_tuple()[2] == 0 else {f}({x}))"
        return (
            "(format({x}, 'f') if type({x}) is Decimal and {x} and "
            f"{{x}}.as_tuple()[2] == {-scale} else {{f}}({{x}}))"
        )
    if kind == "date":
        if spec.lo is None:
            return "({x}.isoformat() if type({x}) is date else {f}({x}))"
        lo, hi = spec.lo, spec.hi
        return (
            "({x}.isoformat() if type({x}) is date and "
            f"date({lo.year}, {lo.month}, {lo.day}) <= {{x}} <= date({hi.year}, {hi.month}, {hi.day}) "
            "else {f}({x}))"
        )
    if kind in ("datetime", "timestamp"):
        fsp = int(spec.fsp)
        if fsp == 0:
            text = "str({x})[:19]"
        else:
            text = f"(str({{x}})[:{20 + fsp}] if {{x}}.microsecond else str({{x}}) + '.{'0' * fsp}')"
        if spec.lo is None:
            return f"({text} if type({{x}}) is datetime and {{x}}.tzinfo is None else {{f}}({{x}}))"
        lo, hi = spec.lo, spec.hi
        lo_expr = f"datetime({lo.year}, {lo.month}, {lo.day}, {lo.hour}, {lo.minute}, {lo.second}, {lo.microsecond})"
        hi_expr = f"datetime({hi.year}, {hi.month}, {hi.day}, {hi.hour}, {hi.minute}, {hi.second}, {hi.microsecond})"
        return (
            f"({text} if type({{x}}) is datetime and {{x}}.tzinfo is None and {lo_expr} <= {{x}} <= {hi_expr} "
            "else {f}({x}))"
        )
    if kind == "time":
        return (
            "(str(({x}.days * 86400 + {x}.seconds) * 1000000 + {x}.microseconds) "
            "if type({x}) is timedelta else {f}({x}))"
        )
    return _CALL


def _clickhouse_template(spec: Any) -> str:
    """The expression for ClickHouse's text (``str``, or None for NULL) of a column of the type mybinlog creates."""
    kind = spec.kind
    if kind in ("int", "year", "bit", "time", "enum", "set", "json") or (kind == "text" and not spec.char):
        return "{x}"  # printed canonically (integers in decimal; text, members and JSON text as stored)
    if kind == "text":
        return "({x}.rstrip(' ') if {x} is not None else None)"
    if kind == "float64":
        return "(('0' if float({x}) == 0.0 else format(float({x}), '.15g')) if {x} is not None else None)"
    if kind == "date":
        return "({x} if {x} is not None and len({x}) == 10 and {x}[:4] != '0000' else {f}({x}))"
    if kind in ("datetime", "timestamp"):
        size = 19 if spec.fsp == 0 else 20 + spec.fsp
        return f"({{x}} if {{x}} is not None and len({{x}}) == {size} and {{x}}[:4] != '0000' else {{f}}({{x}}))"
    if kind == "decimal":
        return f"_decimal_text({{x}}, {int(spec.scale)}, {{f}})"
    return _CALL


def _decimal_text(t: str | None, scale: int, slow: Canon) -> str | None:
    """ClickHouse's text of a Decimal(p, scale) -> exactly ``scale`` digits (new servers drop trailing zeros)."""
    if t is None or "e" in t or "E" in t:
        return slow(t)
    dot = t.find(".")
    if dot < 0:
        out = t + "." + "0" * scale if scale else t
    elif 0 < len(t) - dot - 1 <= scale:
        out = t + "0" * (scale - (len(t) - dot - 1))
    else:
        return slow(t)
    if out[:1] == "-" and not out.strip("-0."):  # negative zero
        return slow(t)
    return out


_GENERATED_GLOBALS: dict[str, Any] = {
    "Decimal": decimal.Decimal,
    "date": dt.date,
    "datetime": dt.datetime,
    "timedelta": dt.timedelta,
    "_decimal_text": _decimal_text,
}


def _compile_row(templates: Sequence[str], slow: Sequence[Canon], *, single: bool = False) -> Callable[[Any], Any]:
    """Generate ``row -> tuple of canonical values`` (or, ``single``, ``value -> canonical value``) from the
    templates. Only the fixed templates and numbers reach the generated source, never names or values."""
    params = ", ".join(f"f{i}=f{i}" for i in range(len(slow)))
    exprs = [t.format(x=f"x{i}", f=f"f{i}") for i, t in enumerate(templates)]
    if single:
        body = f"def canon(x0, {params}):\n    return {exprs[0]}\n"
    else:
        names = ", ".join(f"x{i}" for i in range(len(templates)))
        body = f"def canon(row, {params}):\n    {names}, = row\n    return ({', '.join(exprs)},)\n"
    namespace: dict[str, Any] = {f"f{i}": f for i, f in enumerate(slow)}
    exec(compile(body, "<mybinlog.verify canonical row>", "exec"), dict(_GENERATED_GLOBALS), namespace)
    func: Callable[[Any], Any] = namespace["canon"]
    return func


def _row_function(canons: Sequence[Canon]) -> Callable[[Sequence[Any]], Row]:
    """One function for a whole row: the columns' templates inlined when they come from :func:`fast_canonical`."""
    templates: list[str] = []
    slow: list[Canon] = []
    for canon in canons:
        known = _TEMPLATES.get(canon)
        if known is None:
            templates.append(_CALL)
            slow.append(canon)
        else:
            templates.append(known[0])
            slow.append(known[1])
    if not canons:
        return lambda row: ()
    return _compile_row(templates, slow)
