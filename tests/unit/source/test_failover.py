"""The failover check's pure logic (mybinlog/source/_failover.py): may a stream at a position read on from another
server, judged from that server's GTIDs; and MySQLGtidSet.difference, which names what a lagging server lacks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mybinlog.errors import GtidSetError, SourceConnectionError, SourceHistoryError, SourceLaggingError
from mybinlog.protocol._gtid import MAX_GNO, MariaDBGtidSet, MySQLGtidSet
from mybinlog.source._failover import _check_mariadb, _check_mysql, _mariadb_state

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "4c2d1a3e-71ca-11e1-9e33-c80aa9429562"
U3 = "00000000-0000-0000-0000-000000000001"
WHERE = "repl@db2:3306"


def _says(message: str, *parts: str) -> None:
    """Assert that ``message`` contains every one of ``parts``."""
    missing = [part for part in parts if part not in message]
    assert not missing, f"{missing} not in: {message}"


def my(text: str) -> MySQLGtidSet:
    return MySQLGtidSet.parse(text)


def maria(text: str) -> MariaDBGtidSet:
    return MariaDBGtidSet.parse(text)


# ------------------------------------------------------------------------------------------------------------
# MySQL: gtid_executed against the position


@pytest.mark.parametrize(
    ("executed", "position"),
    [
        (f"{U1}:1-10", f"{U1}:1-10"),
        (f"{U1}:1-12", f"{U1}:1-10"),
        (f"{U1}:1-10,{U2}:1-3", f"{U1}:1-10"),  # the new primary's own writes after the promotion
        (f"{U1}:1-10", ""),
        ("", ""),
    ],
)
def test_mysql_a_server_that_holds_the_position_may_be_read(executed: str, position: str) -> None:
    _check_mysql(WHERE, my(executed), my(position), 1)


@pytest.mark.parametrize(
    ("executed", "position", "missing"),
    [
        (f"{U1}:1-5", f"{U1}:1-8", f"{U1}:6-8"),
        (f"{U1}:1-5:7", f"{U1}:1-8", f"{U1}:6:8"),  # a hole (parallel apply)
        (f"{U1}:1-10", f"{U1}:1-10,{U2}:1-2", f"{U2}:1-2"),  # an old primary's transactions not applied yet
        (f"{U1}:3-10", f"{U1}:1-10", f"{U1}:1-2"),
    ],
)
def test_mysql_a_lagging_server_is_waited_for_naming_what_it_lacks(executed: str, position: str, missing: str) -> None:
    with pytest.raises(SourceLaggingError) as info:
        _check_mysql(WHERE, my(executed), my(position), 1)
    assert isinstance(info.value, SourceConnectionError)  # retried within the reconnect budget
    message = str(info.value)
    assert message.startswith(WHERE)
    _says(message, f"not yet executed [{missing}]", "lags behind", f"[{executed}]", f"[{position}]", "server_id 1")


@pytest.mark.parametrize(
    ("executed", "position"),
    [
        (f"{U2}:1-100", f"{U1}:1-10"),  # another server's history altogether
        ("", f"{U1}:1-10"),  # nothing at all (a fresh server)
        (f"{U1}:20-30", f"{U1}:1-10"),  # the same uuid, but none of the position's transactions
    ],
)
def test_mysql_a_server_of_another_topology_is_refused_naming_both_sets(executed: str, position: str) -> None:
    with pytest.raises(SourceHistoryError) as info:
        _check_mysql(WHERE, my(executed), my(position), 1)
    message = str(info.value)
    _says(message, "not a server of the same replication topology", f"[{executed}]", f"[{position}]", "new snapshot")


# ------------------------------------------------------------------------------------------------------------
# MariaDB: gtid_binlog_state, domain by domain


def test_mariadb_state_keeps_the_last_sequence_number_of_each_domain_and_server() -> None:
    assert _mariadb_state("") == {}
    assert _mariadb_state(" ") == {}
    assert _mariadb_state("0-1-5") == {(0, 1): 5}
    assert _mariadb_state("0-1-5,0-2-7,1-1-3") == {(0, 1): 5, (0, 2): 7, (1, 1): 3}
    assert _mariadb_state(" 0-1-5 ,\n0-2-7, ") == {(0, 1): 5, (0, 2): 7}
    assert _mariadb_state("0-1-5,0-1-3") == {(0, 1): 5}
    assert _mariadb_state("0-1-3,0-1-5") == {(0, 1): 5}
    assert _mariadb_state("4294967295-4294967295-18446744073709551615") == {
        (4294967295, 4294967295): 18446744073709551615
    }


@pytest.mark.parametrize(
    ("state", "position"),
    [
        ("0-1-10", "0-1-10"),
        ("0-1-12", "0-1-10"),
        ("0-1-10,0-2-11", "0-1-10"),  # the promoted replica's own writes come after the position
        ("0-1-10,0-2-12,0-3-13", "0-2-12"),  # a second failover: the position was read from server 2
        ("0-1-10,1-1-5", "0-1-10,1-1-4"),
        ("0-1-10,0-2-3", "0-1-10"),  # an older primary's transactions, below the position
    ],
)
def test_mariadb_a_server_that_holds_the_position_may_be_read(state: str, position: str) -> None:
    _check_mariadb(WHERE, _mariadb_state(state), maria(position), 1)


@pytest.mark.parametrize(
    ("state", "position", "behind"),
    [
        ("0-1-5", "0-1-8", ["0-1-8 (it has 0-1-5)"]),
        ("0-1-5,0-2-3", "0-1-8", ["0-1-8 (it has 0-1-5)"]),  # another server's, below the position: not errant
        ("0-1-8,1-1-2", "0-1-8,1-1-3", ["1-1-3 (it has 1-1-2)"]),
        ("0-1-7,1-1-2", "0-1-8,1-1-3", ["0-1-8 (it has 0-1-7)", "1-1-3 (it has 1-1-2)"]),
    ],
)
def test_mariadb_a_lagging_server_is_waited_for_naming_each_domain_behind(
    state: str, position: str, behind: list[str]
) -> None:
    with pytest.raises(SourceLaggingError) as info:
        _check_mariadb(WHERE, _mariadb_state(state), maria(position), 1)
    message = str(info.value)
    assert message.startswith(WHERE), message
    _says(message, "lags behind")
    assert f"not yet reached {', '.join(behind)} of" in message, message
    for domain in {"0", "1"} - {b[0] for b in behind}:  # a domain that is not behind is not named
        assert f" {domain}-1-" not in message.split(" of this stream")[0], message


@pytest.mark.parametrize(
    ("state", "position"),
    [
        ("0-3-20", "0-1-8"),  # another server_id, a higher sequence number
        ("0-3-2", "0-1-8"),  # another server_id, a lower one
        ("", "0-1-8"),  # a server that logged nothing
        ("0-1-8", "0-1-8,1-1-1"),  # the position's domain 1 is unknown there
    ],
)
def test_mariadb_a_server_of_another_topology_is_refused_naming_both(state: str, position: str) -> None:
    with pytest.raises(SourceHistoryError) as info:
        _check_mariadb(WHERE, _mariadb_state(state), maria(position), 1)
    message = str(info.value)
    _says(message, "not a server of the same replication topology", f"[{state or 'nothing'}]", f"[{position}]")


def test_mariadb_strict_mode_a_server_past_the_position_by_another_history_is_errant() -> None:
    # the server reached 0-1-3 from the old primary, then wrote 0-2-4 itself: in strict mode it can never replicate
    # the position's 0-1-4 (sequence numbers only grow in a domain), so it is not waited for
    with pytest.raises(SourceHistoryError) as info:
        _check_mariadb(WHERE, _mariadb_state("0-1-3,0-2-4"), maria("0-1-4"), 1)
    message = str(info.value)
    _says(message, "errant transaction(s) 0-2-4 in domain 0", "0-1-4", "reached only 0-1-3", "server_id 1")
    _says(message.lower(), "gtid_strict_mode", "new snapshot")


def test_mariadb_strict_mode_names_every_errant_transaction_of_the_domain_in_order() -> None:
    with pytest.raises(SourceHistoryError) as info:
        _check_mariadb(WHERE, _mariadb_state("0-1-3,0-2-9,0-3-5,1-4-50"), maria("0-1-5"), 1)
    message = str(info.value)
    assert "errant transaction(s) 0-3-5, 0-2-9 in domain 0" in message, message
    assert "1-4-50" not in message, message


# ------------------------------------------------------------------------------------------------------------
# MySQLGtidSet.difference against a brute-force model (a Python set of (uuid, tag, gno))

UUIDS = [U1, U2, U3]
TAGS = ["", "a"]
Model = frozenset[tuple[str, str, int]]

models = st.frozensets(st.tuples(st.sampled_from(UUIDS), st.sampled_from(TAGS), st.integers(1, 40)), max_size=40)
# runs of consecutive numbers, so that intervals overlap, touch and nest
runs = st.lists(
    st.tuples(st.sampled_from(UUIDS), st.sampled_from(TAGS), st.integers(1, 60), st.integers(0, 20)), max_size=6
).map(lambda rows: frozenset((sid, tag, gno) for sid, tag, start, width in rows for gno in range(start, start + width)))
any_models = st.one_of(models, runs)


def build(model: Model) -> MySQLGtidSet:
    mapping: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for sid, tag, gno in model:
        mapping.setdefault((sid, tag), []).append((gno, gno))
    return MySQLGtidSet.from_intervals(mapping)


@given(any_models, any_models)
def test_difference_agrees_with_the_model(a: Model, b: Model) -> None:
    sa, sb = build(a), build(b)
    diff = sa.difference(sb)
    assert diff == build(a - b)
    assert sa - sb == diff
    assert {(g.sid, g.tag, g.gno) for g in diff} == a - b
    assert str(diff) == str(build(a - b))  # normalized intervals
    assert sa.contains(diff)
    assert not (diff - sa)
    assert (diff | sb).contains(sa)


@given(any_models)
def test_difference_with_itself_and_the_empty_set(a: Model) -> None:
    s = build(a)
    assert not (s - s)
    assert s - MySQLGtidSet() == s
    assert not (MySQLGtidSet() - s)


def test_difference_on_large_intervals() -> None:
    a = MySQLGtidSet.from_intervals({(U1, ""): [(1, MAX_GNO)], (U2, "x"): [(5, 1_000_000)]})
    b = MySQLGtidSet.from_intervals({(U1, ""): [(2, MAX_GNO - 1)], (U2, "x"): [(1, 10), (500, 999_999)]})
    assert str(a - b) == f"{U1}:1:{MAX_GNO},{U2}:x:11-499:1000000"
    assert str(b - a) == f"{U2}:x:1-4"


def test_difference_refuses_a_mariadb_set() -> None:
    with pytest.raises(GtidSetError, match="do not mix"):
        my(f"{U1}:1-3").difference(maria("0-1-3"))  # type: ignore[arg-type]
