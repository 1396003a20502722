"""The lexer of MySQL/MariaDB DDL: statement text -> tokens, and the quoting that writes names and strings back.

Comments are skipped; versioned comments (``/*!50100 ... */``, ``/*M!100100 ... */``) are read as code whatever
their version. ``sql_mode`` decides whether ``"x"`` is an identifier (``ANSI_QUOTES``) and whether a backslash
escapes (``NO_BACKSLASH_ESCAPES``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import DdlParseError
from ..source import quote_mysql_ident as quote_identifier

__all__ = [
    "SQL_MODE_ANSI_QUOTES",
    "SQL_MODE_NO_BACKSLASH_ESCAPES",
    "SQL_MODE_REAL_AS_FLOAT",
    "quote_identifier",
    "quote_string",
]


#: ``sql_mode`` bits as carried by QUERY events (``QueryEvent.sql_mode``).
SQL_MODE_REAL_AS_FLOAT = 1
SQL_MODE_ANSI_QUOTES = 4
SQL_MODE_NO_BACKSLASH_ESCAPES = 1 << 20


# --------------------------------------------------------------------------------------------------------------
# tokenizer


@dataclass(slots=True)
class _Tok:
    kind: str  # word qident str num hex bit op eof
    value: str  # word: as written; qident: the name; str: unescaped; others: the source text
    start: int
    end: int
    upper: str = ""


_WORD_RE = re.compile(r"[0-9A-Za-z_$\u0080-\U0010ffff]+")
_NUM_RE = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEXNUM_RE = re.compile(r"0x[0-9A-Fa-f]+|0b[01]+")
_OPS3 = ("<=>", "->>")
_OPS2 = ("<=", ">=", "<>", "!=", ":=", "||", "&&", "<<", ">>", "->")
_ESCAPES = {
    "0": "\0",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "%": "\\%",
    "_": "\\_",
}
_DASH_COMMENT_FOLLOW = frozenset(" \t\n\r\f\v")


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_$" or ord(ch) >= 0x80


def _read_quoted(sql: str, i: int, quote: str, backslash: bool) -> tuple[str, int]:
    """Read a quoted string/identifier starting at ``sql[i] == quote``; return (value, index after it)."""
    n = len(sql)
    out: list[str] = []
    j = i + 1
    while True:
        if j >= n:
            raise DdlParseError(f"unterminated {quote}-quoted text", sql, i)
        ch = sql[j]
        if ch == quote:
            if j + 1 < n and sql[j + 1] == quote:
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1
        if ch == "\\" and backslash and j + 1 < n:
            nxt = sql[j + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            j += 2
            continue
        # copy a run of plain characters at once
        k = j + 1
        while k < n and sql[k] != quote and not (backslash and sql[k] == "\\"):
            k += 1
        out.append(sql[j:k])
        j = k


def _tokenize(sql: str, *, ansi_quotes: bool = False, backslash: bool = True) -> list[_Tok]:
    toks: list[_Tok] = []
    append = toks.append
    i = 0
    n = len(sql)
    versioned = 0
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
            continue
        if c == "#":
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == "-" and sql.startswith("--", i) and (i + 2 >= n or sql[i + 2] in _DASH_COMMENT_FOLLOW):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == "/" and sql.startswith("/*", i):
            if sql.startswith("/*!", i) or sql.startswith("/*M!", i):
                j = i + (3 if sql[i + 2] == "!" else 4)
                k = j
                while k < n and k - j < 6 and sql[k].isdigit():
                    k += 1
                i = k
                versioned += 1
                continue
            j = sql.find("*/", i + 2)
            if j < 0:
                raise DdlParseError("unterminated comment", sql, i)
            i = j + 2
            continue
        if c == "*" and versioned and sql.startswith("*/", i):
            versioned -= 1
            i += 2
            continue
        if c == "'" or (c == '"' and not ansi_quotes):
            value, j = _read_quoted(sql, i, c, backslash)
            append(_Tok("str", value, i, j))
            i = j
            continue
        if c == "`" or (c == '"' and ansi_quotes):
            value, j = _read_quoted(sql, i, c, False)
            append(_Tok("qident", value, i, j))
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit() and not (toks and _joinable(toks[-1], i))):
            m = _HEXNUM_RE.match(sql, i)
            if m is not None and (m.end() >= n or not _is_word_char(sql[m.end()])):
                append(_Tok("hex" if m.group()[1] in "xX" else "bit", m.group(), i, m.end()))
                i = m.end()
                continue
            m = _NUM_RE.match(sql, i)
            if m is not None and (m.end() >= n or not _is_word_char(sql[m.end()])):
                append(_Tok("num", m.group(), i, m.end()))
                i = m.end()
                continue
        if _is_word_char(c):
            m = _WORD_RE.match(sql, i)
            assert m is not None
            word = m.group()
            j = m.end()
            if j < n and sql[j] == "'" and word.lower() in ("x", "b", "n"):
                value, k = _read_quoted(sql, j, "'", backslash)
                kind = {"x": "hex", "b": "bit", "n": "str"}[word.lower()]
                append(_Tok(kind, value if kind == "str" else sql[i:k], i, k))
                i = k
                continue
            append(_Tok("word", word, i, j, word.upper()))
            i = j
            continue
        op = c
        if sql.startswith(_OPS3, i):
            op = sql[i : i + 3]
        elif sql.startswith(_OPS2, i):
            op = sql[i : i + 2]
        append(_Tok("op", op, i, i + len(op)))
        i += len(op)
    while toks and toks[-1].kind == "op" and toks[-1].value == ";":
        toks.pop()
    return toks


def _joinable(prev: _Tok, pos: int) -> bool:
    """``a.5`` after an identifier is a qualified name, not a number."""
    return prev.end == pos and prev.kind in ("word", "qident")


# --------------------------------------------------------------------------------------------------------------
# rendering helpers


_STRING_ESCAPES = {"\\": "\\\\", "'": "''", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"}
_STRING_ESCAPE_RE = re.compile(r"[\\'\0\n\r\x1a]")


def quote_string(value: str) -> str:
    """A MySQL string literal (default sql_mode) for ``value``."""
    return "'" + _STRING_ESCAPE_RE.sub(lambda m: _STRING_ESCAPES[m.group()], value) + "'"


def _tok_text(tok: _Tok) -> str:
    if tok.kind == "qident":
        return quote_identifier(tok.value)
    if tok.kind == "str":
        return quote_string(tok.value)
    return tok.value


def _render_tokens(toks: list[_Tok]) -> str:
    """Canonical text of an expression: tokens in canonical form, one space where the source had a gap."""
    parts: list[str] = []
    prev: _Tok | None = None
    for tok in toks:
        if prev is not None and tok.start > prev.end:
            parts.append(" ")
        parts.append(_tok_text(tok))
        prev = tok
    return "".join(parts)
