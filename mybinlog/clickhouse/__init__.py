"""The replica's format in ClickHouse: one layer that every writer of a replica uses.

What a replica *is* in ClickHouse lives here, below the code that writes it (``mybinlog.replication``, the
``mybinlog.snapshot`` job) and the code that reads it back (``mybinlog.verification``); they use it through the
names below only:

* connections to ClickHouse: :func:`open_target` gives a :class:`Target` (a server over HTTP, or embedded chdb),
  with its :class:`Capabilities`; :func:`target_identity` says which ClickHouse it is (the replica lock is named
  after it);
* the type mapping and the row encoders: :mod:`mybinlog.clickhouse.types`;
* the table layout: :func:`create_table_sql`, :func:`alter_sql`, the meta columns (``_sign``, ``_version``,
  ``_is_deleted``) and the three :data:`ENGINES`;
* row versions from binlog positions (:func:`transaction_version`, :func:`snapshot_version`);
* checkpoints and leader epochs in ClickHouse (:func:`load_checkpoint`, :func:`save_checkpoint`; the
  :class:`Checkpoint` record itself is every sink's, ``mybinlog/_checkpoint.py``, re-exported here).

The MySQL side (the DDL model, ``mybinlog.ddl``; queries and the replica lock, ``mybinlog.source``) is below it.

Targets
-------

:func:`open_target` returns a :class:`Target`, one connection to one ClickHouse::

    target = await open_target("http://default:secret@127.0.0.1:8123")   # a server, over HTTP
    target = await open_target("chdb:///var/lib/mybinlog/ch")             # embedded, data in that directory
    target = await open_target(":memory:")                                 # embedded, in memory

Both kinds speak the same small interface: ``execute`` (DDL and commands), ``query`` (rows of strings) and
``insert_tsv`` (TabSeparated bytes), plus the server's :class:`Capabilities`, decided from ``SELECT version()``.

Values cross the boundary as TabSeparated text in both directions, because it is the one format every ClickHouse
version reads and writes the same way (18.16 to today) and it carries every type as text:

* writing: :func:`tsv_escape` / :func:`tsv_escape_bytes` escape one field; ``\\N`` is NULL; rows end with ``\\n``.
* reading: :meth:`Target.query` unescapes each field and returns ``str`` (``None`` for NULL). Bytes that are not
  UTF-8 (a ``String`` column holding binary data) are decoded with ``surrogateescape``, so
  ``value.encode("utf-8", "surrogateescape")`` gives back the exact bytes.

Errors are :class:`~mybinlog.TargetError` (the server's message, its error code and the SQL, truncated); a server
that cannot be reached raises :class:`~mybinlog.TargetConnectionError` (``retriable``). Passwords never appear in
descriptions, reprs or messages.

Embedded ClickHouse allows one data directory per process at a time (chdb's ``EmbeddedServer``): opening the same
directory again shares it (each target gets its own chdb connection), opening a different directory while one is
open raises :class:`~mybinlog.ConfigurationError`. All calls into chdb of one directory run in one worker thread,
so the event loop never blocks on chdb.

Modules
-------
Each imports only modules above it in this table.

==================  ============================================================================================
``_capabilities``   :class:`Capabilities` from the server version, :data:`FEATURE_VERSIONS`
``_tsv``            ClickHouse SQL quoting (:func:`quote_ident`, :func:`quote_string`...) and TabSeparated text
``_target``         the :class:`Target` protocol, ``PASSWORD_ENV``, ClickHouse error messages
``_http``           :class:`HttpTarget`: a server over HTTP (aiochclient, aiohttp)
``_chdb``           :class:`ChdbTarget`: embedded ClickHouse, one worker thread per data directory
``_open``           :func:`open_target`: a URL -> a target
``_identity``       :func:`target_identity` (which ClickHouse a target is), :func:`check_standby_target`
``types/``          the type mapping and the encoders (its own docstring)
``_tables``         the table layout: CREATE/ALTER from the ``mybinlog.ddl`` model, meta columns, engines
``_version``        row versions from binlog positions
``_checkpoint``     checkpoint rows, their schemas table (the record: ``mybinlog/_checkpoint.py``)
==================  ============================================================================================

Layer rules: imports :mod:`mybinlog.ddl` (the MySQL table model), :mod:`mybinlog.protocol` (positions, JSON
rendering), ``mybinlog._checkpoint`` (the checkpoint record), :mod:`mybinlog.errors` and the standard library;
aiochclient, aiohttp and chdb only inside the functions that open a target (``import mybinlog.clickhouse`` needs
neither extra). It never talks to MySQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # for type checkers only (`X as X`: exported); at run time the names below are lazy
    from ._capabilities import FEATURE_VERSIONS as FEATURE_VERSIONS, Capabilities as Capabilities  # noqa: I001
    from ._chdb import ChdbTarget as ChdbTarget
    from .._checkpoint import (
        Checkpoint as Checkpoint,
        checkpoint_from as checkpoint_from,
        checkpoint_json as checkpoint_json,
        make_seq as make_seq,
        seq_epoch as seq_epoch,
    )
    from ._checkpoint import (
        DEFAULT_META_DATABASE as DEFAULT_META_DATABASE,
        latest_seq as latest_seq,
        load_checkpoint as load_checkpoint,
        save_checkpoint as save_checkpoint,
    )
    from ._http import HttpTarget as HttpTarget
    from ._identity import check_standby_target as check_standby_target, target_identity as target_identity
    from ._open import open_target as open_target
    from ._tables import (
        ENGINES as ENGINES,
        META_COLUMNS as META_COLUMNS,
        alive_predicate as alive_predicate,
        alter_sql as alter_sql,
        create_table_sql as create_table_sql,
        meta_columns as meta_columns,
        sorting_key as sorting_key,
        truncate_sql as truncate_sql,
    )
    from ._target import PASSWORD_ENV as PASSWORD_ENV, Target as Target
    from ._tsv import (
        parse_tsv as parse_tsv,
        quote_bytes as quote_bytes,
        quote_ident as quote_ident,
        quote_string as quote_string,
        quote_table as quote_table,
        tsv_escape as tsv_escape,
        tsv_escape_bytes as tsv_escape_bytes,
        tsv_unescape as tsv_unescape,
    )
    from ._version import (
        binlog_file_number as binlog_file_number,
        snapshot_version as snapshot_version,
        transaction_version as transaction_version,
        version_file as version_file,
        version_position as version_position,
    )

# Imported on first use: the snapshot's Spark workers import this package for the versions and the encoders and
# should not pay for the rest at every worker start; chdb and aiochclient are imported only when a target opens.
__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "._capabilities": ("FEATURE_VERSIONS", "Capabilities"),
        "._chdb": ("ChdbTarget",),
        # the record every sink keeps (mybinlog/_checkpoint.py), re-exported: what load_checkpoint returns
        ".._checkpoint": ("Checkpoint", "checkpoint_from", "checkpoint_json", "make_seq", "seq_epoch"),
        "._checkpoint": ("DEFAULT_META_DATABASE", "latest_seq", "load_checkpoint", "save_checkpoint"),
        "._http": ("HttpTarget",),
        "._identity": ("check_standby_target", "target_identity"),
        "._open": ("open_target",),
        "._tables": (
            "ENGINES",
            "META_COLUMNS",
            "alive_predicate",
            "alter_sql",
            "create_table_sql",
            "meta_columns",
            "sorting_key",
            "truncate_sql",
        ),
        "._target": ("PASSWORD_ENV", "Target"),
        "._tsv": (
            "parse_tsv",
            "quote_bytes",
            "quote_ident",
            "quote_string",
            "quote_table",
            "tsv_escape",
            "tsv_escape_bytes",
            "tsv_unescape",
        ),
        "._version": (
            "binlog_file_number",
            "snapshot_version",
            "transaction_version",
            "version_file",
            "version_position",
        ),
    },
)
