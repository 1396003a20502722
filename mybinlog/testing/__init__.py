"""Private, throwaway servers for tests (and the demo): a MariaDB or an Oracle MySQL in a temporary data directory,
a ClickHouse server with a generated config and a Kafka-compatible broker (Tansu), on free ports, never outliving the
Python process.

Importable by users for their own tests, as asyncpg ships its cluster helper::

    from mybinlog.testing import MariaDBServer

    with MariaDBServer(tmp_path) as server:
        server.execute("CREATE DATABASE shop")
        ...  # server.repl_dsn is a DSN for a replication user

Layer rules: imports nothing from the rest of mybinlog (standard library and pymysql only).
"""

from ._clickhouse import ClickHouseNotAvailable, ClickHouseServer, ClickHouseStartError, find_clickhouse
from ._kafka import KafkaNotAvailable, KafkaServer, KafkaStartError, find_tansu
from ._mariadb import (
    ADMIN_PASSWORD,
    ADMIN_USER,
    DEFAULT_OPTIONS,
    REPL_PASSWORD,
    REPL_USER,
    MariaDBBinaries,
    MariaDBNotAvailable,
    MariaDBServer,
    MariaDBStartError,
    find_mariadb,
)
from ._mysql import MYSQL_DEFAULT_OPTIONS, MySQLBinaries, MySQLNotAvailable, MySQLServer, MySQLStartError, find_mysql

__all__ = [
    "ADMIN_PASSWORD",
    "ADMIN_USER",
    "DEFAULT_OPTIONS",
    "REPL_PASSWORD",
    "REPL_USER",
    "ClickHouseNotAvailable",
    "ClickHouseServer",
    "ClickHouseStartError",
    "KafkaNotAvailable",
    "KafkaServer",
    "KafkaStartError",
    "MariaDBBinaries",
    "MariaDBNotAvailable",
    "MariaDBServer",
    "MariaDBStartError",
    "MYSQL_DEFAULT_OPTIONS",
    "MySQLBinaries",
    "MySQLNotAvailable",
    "MySQLServer",
    "MySQLStartError",
    "find_clickhouse",
    "find_tansu",
    "find_mariadb",
    "find_mysql",
]
