"""The interface every target implements (:class:`Target`), and what the implementations share: the password
variable and the reading of ClickHouse's error messages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._capabilities import Capabilities

__all__ = ["PASSWORD_ENV", "Target"]


#: Environment variable with the ClickHouse password, used when the URL has none.
PASSWORD_ENV = "MYBINLOG_CH_PASSWORD"


# --- errors ----------------------------------------------------------------------------------------------------------


_CODE_RE = re.compile(r"Code: (\d+)")


def _server_message(text: str) -> tuple[str, int | None]:
    """(message, code) from a ClickHouse exception text, in the 18.x form or the current one."""
    text = text.strip()
    match = _CODE_RE.search(text)
    code = int(match.group(1)) if match else None
    # 18.x: "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist., e.what() = DB::Exception"
    text = text.replace("e.displayText() = ", "")
    text = re.sub(r",? ?e\.what\(\) = DB::Exception\s*$", "", text)
    text = re.sub(r"^Code: \d+[,.] ", "", text)  # the code is reported separately
    text = re.sub(r"^DB::Exception: ", "", text)
    text = re.sub(r" \(version \d[^\n]*\)\s*$", "", text)
    # drop stack traces (they follow "Stack trace" in server logs and some HTTP answers)
    text = text.split("\nStack trace", 1)[0].split(", Stack trace", 1)[0]
    if len(text) > 2000:
        text = text[:2000] + "..."
    return text, code


# --- the interface ---------------------------------------------------------------------------------------------------


@runtime_checkable
class Target(Protocol):
    """One connection to one ClickHouse (a server over HTTP, or embedded chdb).

    Calls on one target may be made concurrently from tasks of one event loop; each call is one statement.
    """

    capabilities: Capabilities
    kind: str  # "http" | "chdb"
    description: str  # safe for logs: never the password
    database: str | None  # the default database for unqualified names (None: the server's default)

    async def execute(self, sql: str) -> None:
        """Run a statement that returns no rows (DDL, ALTER, OPTIMIZE, ...)."""
        ...

    async def query(self, sql: str) -> list[list[str | None]]:
        """Run a SELECT (without a FORMAT clause) and return all rows: strings, ``None`` for NULL."""
        ...

    async def insert_tsv(
        self, table: str, columns: Sequence[str], data: bytes, *, dedup_token: str | None = None
    ) -> None:
        """Insert TabSeparated rows (each ending with ``\\n``) into ``table`` (already quoted, "`db`.`t`").

        ``columns`` are the unquoted column names, in the order of the fields. ``dedup_token`` is sent as
        ``insert_deduplication_token`` when the server supports it (``capabilities.insert_deduplication_token``;
        ignored otherwise): a repeated insert with the same token into a table with
        ``non_replicated_deduplication_window`` (or a Replicated table) is dropped by the server. Empty ``data``
        inserts nothing.
        """
        ...

    async def aclose(self) -> None:
        """Close the connection (idempotent)."""
        ...
