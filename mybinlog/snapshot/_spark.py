"""Spark for the snapshot job: the session or context it uses, the driver JVM's options and class archive, and
a quick stop (see docs/snapshot.md, "Spark's start-up")."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

logger = logging.getLogger("mybinlog.snapshot")

# JVM options of a local-mode driver (MYBINLOG_SPARK_JAVA_OPTIONS replaces them, empty for none): the snapshot's
# data never passes through the JVM (Python workers read MySQL and write ClickHouse), the JVM only schedules a few
# tasks, so its start-up is what counts. The client compiler alone (no C2) and the serial collector start it
# seconds faster on a small machine.
LOCAL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


# A class-data-sharing archive of the classes the driver JVM loads (Spark's, Scala's, the JDK's), written once by
# the JVM of a snapshot command and mapped by the next ones: their JVM starts about 0.6 s faster and with a third
# less CPU (classes come parsed and verified). See docs/snapshot.md, "Spark's start-up".
# the dump warns about every class it skips; a JVM that crashes (a damaged archive) writes its report to stderr, not
# into the snapshot's JSON result on stdout
_ARCHIVE_OPTIONS = "-Xlog:cds=off -Xlog:cds+dynamic=off -XX:+DisplayVMOutputToStderr"
_ARCHIVE_STALE_SECONDS = 3600.0  # a temporary archive this old was left by a killed command


@dataclass(frozen=True)
class _ClassArchive:
    """The driver JVM's class archive: the complete one to map (``use``), or the temporary file this process's JVM
    writes at its exit (``writing``), published by :func:`_stop_spark_context` as ``<key>.<size>.jsa``."""

    directory: Path
    key: str
    use: Path | None = None
    writing: Path | None = None

    def published(self, size: int) -> Path:
        return self.directory / f"{self.key}.{size}.jsa"


def _complete_archive(directory: Path, key: str) -> Path | None:
    """A published archive whose size is the size it was published with (a JVM mapping a cut archive crashes);
    any other file of this key is deleted."""
    found = None
    for path in directory.glob(f"{key}.*.jsa"):
        size = path.name[len(key) + 1 : -len(".jsa")]
        with contextlib.suppress(OSError):
            if found is None and size.isdigit() and path.stat().st_size == int(size):
                found = path
            else:
                path.unlink()
    return found


_class_archive_pending: _ClassArchive | None = None  # the archive this process's JVM writes at its exit


def _cache_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mybinlog"


def _java_identity() -> str:
    """The java binary Spark's launcher runs, with its size and mtime: an archive is only valid for that JVM."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java:
        return "no-java"
    real = os.path.realpath(java)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def _class_archive() -> _ClassArchive | None:
    """The class archive for a local driver JVM this process starts, or None (``MYBINLOG_SPARK_CLASS_ARCHIVE=0``,
    no cache directory, no java). Keyed by PySpark's version and location and the java binary."""
    if os.environ.get("MYBINLOG_SPARK_CLASS_ARCHIVE", "1").strip() in ("0", "false", "no", "off"):
        return None
    try:
        import hashlib

        import pyspark

        key = hashlib.sha256(
            json.dumps([pyspark.__version__, os.path.realpath(pyspark.__file__), _java_identity()]).encode()
        ).hexdigest()[:20]
        directory = _cache_directory() / "spark-class-archive"
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        now = time.time()
        for old in directory.glob("*.tmp"):
            with contextlib.suppress(OSError):
                if now - old.stat().st_mtime > _ARCHIVE_STALE_SECONDS:
                    old.unlink()
        use = _complete_archive(directory, key)
        if use is not None:
            return _ClassArchive(directory, key, use=use)
        return _ClassArchive(directory, key, writing=directory / f"{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    except (ImportError, OSError, RuntimeError) as exc:  # RuntimeError: Path.home() without a home directory
        logger.debug("no class archive for Spark's JVM: %s", exc)
        return None


def _spark_settings(master: str | None, app_name: str, ui: bool, class_archive: bool = False) -> dict[str, str]:
    """The Spark settings of a session or context the snapshot creates (see :func:`spark_session`).

    ``class_archive``: with a local master and no ``MYBINLOG_SPARK_JAVA_OPTIONS``, the driver JVM maps the class
    archive, or writes it at its exit when there is none yet (only the snapshot's own context, which
    :func:`_stop_spark_context` stops and whose JVM's exit it waits for: the archive is published only once the JVM
    has written all of it and exited cleanly, because a JVM mapping a truncated archive crashes)."""
    global _class_archive_pending
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {"spark.app.name": app_name, "spark.ui.showConsoleProgress": "false"}
    if master is not None:
        settings["spark.master"] = master
    if not ui:
        settings["spark.ui.enabled"] = "false"
    if master is not None and master.startswith("local"):
        chosen = os.environ.get("MYBINLOG_SPARK_JAVA_OPTIONS")
        java_options = (LOCAL_JAVA_OPTIONS if chosen is None else chosen).strip()
        if java_options:
            os.environ.setdefault("SPARK_LAUNCHER_OPTS", java_options)
        archive = _class_archive() if class_archive and chosen is None else None
        if archive is not None:
            if archive.use is not None:
                java_options += f" -XX:SharedArchiveFile={archive.use} {_ARCHIVE_OPTIONS}"
            else:
                java_options += f" -XX:ArchiveClassesAtExit={archive.writing} {_ARCHIVE_OPTIONS}"
                _class_archive_pending = archive
        if java_options:
            settings["spark.driver.extraJavaOptions"] = java_options.strip()
    return settings


def _publish_class_archive(context: Any) -> None:
    """After the snapshot's own context has stopped: when its JVM writes the class archive, end the JVM (its
    standard input closed, as at the exit of this process), wait for it and publish a complete archive (an atomic
    rename); pyspark may then start a new JVM in this process."""
    global _class_archive_pending
    archive, _class_archive_pending = _class_archive_pending, None
    if archive is None or archive.writing is None:
        return
    gateway = getattr(type(context), "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.stdin is None:
        with contextlib.suppress(OSError):
            archive.writing.unlink()
        return
    logger.info("writing Spark's class archive for faster starts (once) in %s", archive.directory)
    try:
        proc.stdin.close()
        code = proc.wait(timeout=120)
    except Exception as exc:  # noqa: BLE001 - a JVM that does not exit: no archive this time
        logger.warning("Spark's JVM did not exit after the snapshot (%s): no class archive written", exc)
        code = None
    type(context)._gateway = None  # the JVM is gone: the next context launches another one
    type(context)._jvm = None
    size = archive.writing.stat().st_size if archive.writing.is_file() else 0
    if code == 0 and size > 0:
        os.replace(archive.writing, archive.published(size))
    else:
        with contextlib.suppress(OSError):
            archive.writing.unlink()


def spark_session(master: str | None = None, *, app_name: str = "mybinlog-snapshot", ui: bool = False) -> Any:
    """A SparkSession for the snapshot (the active one when it exists, e.g. under ``spark-submit``).

    ``master``: e.g. ``local[4]``; None keeps what spark-submit configured (or Spark's default ``local[*]``).
    Python workers run this interpreter (``PYSPARK_PYTHON``, unless set), so they import the same mybinlog.
    With a local master the driver JVM gets :data:`LOCAL_JAVA_OPTIONS` (``MYBINLOG_SPARK_JAVA_OPTIONS`` replaces
    them), and so does the short-lived JVM of Spark's launcher (``SPARK_LAUNCHER_OPTS``, unless set).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ConfigurationError("the snapshot job needs PySpark: pip install 'mybinlog[spark]'") from exc
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder
    for key, value in _spark_settings(master, app_name, ui).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _session(master: str | None) -> tuple[Any, bool]:
    """(the active SparkSession or SparkContext, else a new SparkContext; whether it was created here, so is ours
    to stop). The job needs only a SparkContext: without a SparkSession (Spark SQL's state, about 2 s on a small
    machine) the command starts faster."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return spark_session(master), True  # raises the installation hint
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if SparkContext._active_spark_context is not None:
        return SparkContext._active_spark_context, False
    settings = _spark_settings(master, "mybinlog-snapshot", False, class_archive=True)
    conf = SparkConf()
    for key, value in settings.items():
        conf.set(key, value)
    options = settings.get("spark.driver.extraJavaOptions", "")
    if _ARCHIVE_OPTIONS not in options:
        return SparkContext.getOrCreate(conf), True
    try:
        return SparkContext.getOrCreate(conf), True
    except Exception as exc:  # noqa: BLE001 - pyspark's gateway errors have no common base to import
        # the class archive is an optimisation: a JVM that rejects its options (another JDK) or crashes mapping it
        # (a damaged file) must not fail the snapshot; start without it, and drop a damaged archive
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        logger.warning("Spark's JVM did not start with its class archive (%s); starting it without", first[:300])
        _drop_class_archive(options)
        conf.set("spark.driver.extraJavaOptions", options.split(" -XX:SharedArchiveFile=")[0].split(
            " -XX:ArchiveClassesAtExit=")[0])  # fmt: skip
        return SparkContext.getOrCreate(conf), True


def _drop_class_archive(options: str) -> None:
    """Forget the archive this process's JVM was to write, and delete an archive a JVM failed to start with."""
    global _class_archive_pending
    pending, _class_archive_pending = _class_archive_pending, None
    paths = [pending.writing] if pending is not None and pending.writing is not None else []
    if "-XX:SharedArchiveFile=" in options:
        paths.append(Path(options.split("-XX:SharedArchiveFile=", 1)[1].split(" ", 1)[0]))
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def _ignore_request_error(request: Any, client_address: Any) -> None:
    """socketserver's ``handle_error`` for an accumulator server told to shut down."""


def _stop_spark_context(spark: Any) -> None:
    """Stop a session or context the snapshot created, without pyspark's wait for its accumulator server.

    ``SparkContext.stop()`` stops the JVM's context, then shuts the accumulator server down, which waits for the
    server's request handler to notice, in its own poll of up to a second (about 0.7 s of every snapshot command on
    a small machine). The snapshot uses no accumulators: the JVM's context is stopped here as ``stop()`` does it,
    and the server is told to shut down in a daemon thread of its own (its serving thread is a daemon already).
    When this pyspark version keeps the server elsewhere, ``stop()`` does all of it, as before.
    """
    context = _context(spark)
    server = getattr(context, "_accumulatorServer", None)
    if server is None or not hasattr(server, "server_shutdown"):
        spark.stop()
        _publish_class_archive(context)
        return
    server.server_shutdown = True
    # its request handler may still be in its poll when the JVM hangs up: the EOF it then reads is expected, not
    # an error to print
    server.handle_error = _ignore_request_error
    context._accumulatorServer = None  # stop() skips its wait
    try:
        spark.stop()
    finally:
        threading.Thread(target=server.shutdown, name="mybinlog-spark-accumulator-stop", daemon=True).start()
    _publish_class_archive(context)


def _context(spark: Any) -> Any:
    """The SparkContext of a SparkSession, or the SparkContext itself."""
    return getattr(spark, "sparkContext", spark)
