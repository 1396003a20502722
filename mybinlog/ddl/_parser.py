"""The parser's cursor over the tokens of one statement: keywords, names, literals, balanced groups, and errors
that point into the text. The grammar built on it is in ``_parse_column``, ``_parse_create``, ``_parse_alter`` and
``_parse_statement``."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import DdlParseError
from ._lexer import (
    SQL_MODE_ANSI_QUOTES,
    SQL_MODE_NO_BACKSLASH_ESCAPES,
    SQL_MODE_REAL_AS_FLOAT,
    _render_tokens,
    _Tok,
    _tokenize,
)

# --------------------------------------------------------------------------------------------------------------
# parser core


_EOF = "eof"


class _Parser:
    def __init__(self, sql: str, sql_mode: int = 0) -> None:
        self.sql = sql
        self.toks = _tokenize(
            sql,
            ansi_quotes=bool(sql_mode & SQL_MODE_ANSI_QUOTES),
            backslash=not sql_mode & SQL_MODE_NO_BACKSLASH_ESCAPES,
        )
        self.toks.append(_Tok(_EOF, "", len(sql), len(sql)))
        self.i = 0
        self.real_as_float = bool(sql_mode & SQL_MODE_REAL_AS_FLOAT)
        self.target: tuple[str, str] | None = None

    # -- token access --

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != _EOF:
            self.i += 1
        return tok

    def at_end(self) -> bool:
        return self.toks[self.i].kind == _EOF

    def error(self, message: str, tok: _Tok | None = None) -> DdlParseError:
        tok = tok if tok is not None else self.peek()
        near = "end of statement" if tok.kind == _EOF else repr(self.sql[tok.start : tok.start + 40])
        return DdlParseError(f"{message} (near {near})", self.sql, tok.start)

    def is_kw(self, *words: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "word" and tok.upper in words

    def is_op(self, op: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "op" and tok.value == op

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence ``words`` if it is next (all or nothing)."""
        for k, word in enumerate(words):
            tok = self.peek(k)
            if tok.kind != "word" or tok.upper != word:
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def accept_op(self, op: str) -> bool:
        if self.is_op(op):
            self.i += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            raise self.error(f"expected {op!r}")

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error("unexpected text")

    # -- names and values --

    def ident(self) -> str:
        tok = self.peek()
        if tok.kind in ("word", "qident"):
            self.i += 1
            return tok.value
        raise self.error("expected a name")

    def table_name(self, default_schema: str) -> tuple[str, str]:
        first = self.ident()
        if self.accept_op("."):
            return first, self.ident()
        return default_schema, first

    def name_value(self) -> str:
        """A charset/collation/engine name: word, quoted name or string."""
        tok = self.peek()
        if tok.kind in ("word", "qident", "str"):
            self.i += 1
            return tok.value
        raise self.error("expected a name")

    def integer(self) -> int:
        tok = self.peek()
        if tok.kind == "num" and tok.value.isdigit():
            self.i += 1
            return int(tok.value)
        raise self.error("expected an integer")

    def string(self) -> str:
        tok = self.peek()
        if tok.kind != "str":
            raise self.error("expected a quoted string")
        parts = []
        while self.peek().kind == "str":
            parts.append(self.next().value)
        return "".join(parts)

    def group(self) -> list[_Tok]:
        """Consume ``( ... )`` (balanced) and return the tokens inside."""
        start = self.i
        self.expect_op("(")
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind == _EOF:
                raise self.error("unbalanced parentheses")
            if tok.kind == "op":
                if tok.value == "(":
                    depth += 1
                elif tok.value == ")":
                    depth -= 1
        return self.toks[start + 1 : self.i - 1]

    def skip_until(self, stop: Callable[[_Tok], bool]) -> list[_Tok]:
        """Consume tokens at depth 0 until ``stop(token)`` (not consumed) or the end."""
        start = self.i
        while True:
            tok = self.peek()
            if tok.kind == _EOF or stop(tok):
                break
            if tok.kind == "op" and tok.value == "(":
                self.group()
            elif tok.kind == "op" and tok.value == ")":
                break
            else:
                self.i += 1
        return self.toks[start : self.i]

    def skip_to_comma(self) -> list[_Tok]:
        return self.skip_until(lambda t: t.kind == "op" and t.value == ",")

    def text_since(self, start: int) -> str:
        return _render_tokens(self.toks[start : self.i])

    def optional_eq(self) -> None:
        self.accept_op("=")
