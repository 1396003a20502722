"""``Replicator(replica=...)`` refuses the names that ``mybinlog replicate --replica`` refuses: an empty name (it
silently became the database's) and control characters (a newline split log lines), before anything connects."""

from __future__ import annotations

from typing import Any

import pytest

from mybinlog.errors import ConfigurationError
from mybinlog.replication import Replicator


class _NoTarget:
    """Stands where the target goes: the name is checked before the target is used at all."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the target was used ({name}) before the replica name was checked")


@pytest.mark.parametrize("name", ["", "  ", "a\nb", "shop\r", "tab\there", "del\x7f", "ls\u2028x"])
def test_bad_replica_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Replicator("mysql://repl@127.0.0.1:1", _NoTarget(), database="shop", replica=name)  # type: ignore[arg-type]
    message = str(info.value)
    assert "Replicator(replica=...)" in message
    assert "replica=None" in message or "use letters, digits" in message  # the fix


@pytest.mark.parametrize(("replica", "expected"), [(None, "shop"), ("shop-eu.2", "shop-eu.2"), ("名", "名")])
def test_good_replica_names_are_kept(replica: str | None, expected: str) -> None:
    repl = Replicator("mysql://repl@127.0.0.1:1", _NoTarget(), database="shop", replica=replica)  # type: ignore[arg-type]
    assert repl.replica == expected
