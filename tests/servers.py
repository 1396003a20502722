"""Private MariaDB servers for tests: the implementation lives in :mod:`mybinlog.testing._mariadb` (shared with
``mybinlog demo``)."""

from mybinlog.testing._mariadb import (
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
from mybinlog.testing._mysql import MySQLServer, find_mysql

__all__ = [
    "ADMIN_PASSWORD",
    "ADMIN_USER",
    "DEFAULT_OPTIONS",
    "REPL_PASSWORD",
    "REPL_USER",
    "MariaDBBinaries",
    "MariaDBNotAvailable",
    "MariaDBServer",
    "MariaDBStartError",
    "MySQLServer",
    "find_mariadb",
    "find_mysql",
]
