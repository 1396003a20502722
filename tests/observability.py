"""Real observers for the observability tests: a private Prometheus server and a headless Chromium driven over the
DevTools protocol.

:class:`PrometheusServer` runs Debian's ``prometheus`` (``/usr/bin/prometheus``) with a generated configuration
(every target scraped every second, optional rule files) and a temporary storage directory on a free loopback port,
and answers PromQL through its HTTP API (:meth:`PrometheusServer.query`, :meth:`PrometheusServer.wait_for`: the API
polled until a condition holds, with a deadline).

:class:`Chromium` runs Debian's ``chromium`` (``/usr/bin/chromium``) headless with the flags this machine needs (no
sandbox as root, no background networking, a fresh user data directory) and a DevTools port; :meth:`Chromium.page`
opens a page and :meth:`Page.evaluate` runs JavaScript in it (aiohttp's websocket client, no browser driver).

A missing binary fails the test under CI=true (scripts/setup.sh --test installs both) and skips it elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.conftest import skip_or_fail

__all__ = ["Chromium", "Page", "PrometheusServer", "find_binary", "free_port", "http_get"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def find_binary(name: str, package: str) -> str:
    """The path of ``name`` (PATH or /usr/bin), else skip (fail under CI=true) naming the Debian package."""
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        skip_or_fail(f"{name} not found: run `bash scripts/setup.sh --test` to install Debian's {package} package")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, *, headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET, also for error statuses."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def _poll(check: Callable[[], Any], what: str, timeout: float, describe: Callable[[], str] = lambda: "") -> Any:
    """Call ``check`` until it returns something true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s. {describe()}")
        time.sleep(0.2)  # polling an outside server's state until the condition holds (bounded by the deadline)


class PrometheusServer:
    """A private Prometheus scraping ``targets`` (host:port) every second; see the module docstring."""

    def __init__(self, workdir: Path, targets: Sequence[str], *, rule_files: Sequence[Path] = ()) -> None:
        self.binary = find_binary("prometheus", "prometheus")
        self.workdir = workdir
        self.targets = list(targets)
        self.rule_files = [str(p) for p in rule_files]
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> PrometheusServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": self.rule_files,
            "scrape_configs": [{"job_name": "mybinlog", "static_configs": [{"targets": self.targets}]}],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(json.dumps(config, indent=1))  # JSON is YAML
        self.port = free_port()
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={path}",
                    f"--storage.tsdb.path={self.workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                return http_get(f"{self.url}/-/ready", timeout=2)[0] == 200
            except OSError:
                return False

        _poll(ready, "prometheus ready", timeout, self.tail)
        return self

    def tail(self, n: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        status, _, body = http_get(url)
        doc = json.loads(body)
        assert (status, doc.get("status")) == (200, "success"), f"{url}: {status} {body[:500]!r}"
        return doc["data"]

    def query(self, expr: str) -> dict[str, float]:
        """An instant query: {label set as text: value}."""
        result = self.api("query", query=expr)["result"]
        return {json.dumps(r["metric"], sort_keys=True): float(r["value"][1]) for r in result}

    def wait_for(
        self, expr: str, check: Callable[[dict[str, float]], bool] = bool, *, timeout: float = 60
    ) -> dict[str, float]:
        """Query ``expr`` until ``check(result)`` holds; returns that result."""
        last: list[dict[str, float]] = [{}]

        def attempt() -> dict[str, float] | None:
            last[0] = self.query(expr)
            return last[0] if last[0] and check(last[0]) else None

        return dict(_poll(attempt, f"prometheus: {expr}", timeout, lambda: f"last result {last[0]}\n{self.tail(10)}"))


class Page:
    """One browser tab, driven over its DevTools websocket."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> Any:
        msg_id = next(self._ids)
        await self._ws.send_json({"id": msg_id, "method": method, "params": params})
        async with asyncio.timeout(30):
            while True:
                msg = await self._ws.receive_json()
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        raise AssertionError(f"{method}: {msg['error']}")
                    return msg.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, *, within: float = 30) -> Any:
        """Evaluate ``expression`` until it is true-ish (for at most ``within`` seconds); returns its value."""
        deadline = time.monotonic() + within
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                body = await self.evaluate("document.body ? document.body.innerText.slice(0, 2000) : ''")
                raise AssertionError(f"page: {expression} not true within {within:g} s; the page shows:\n{body}")
            await asyncio.sleep(0.2)  # polling the page's DOM until the condition holds (bounded by the deadline)


class Chromium:
    """Headless Chromium with a DevTools port; ``async with Chromium(tmp) as browser: page = await
    browser.page(url)``."""

    def __init__(self, workdir: Path) -> None:
        self.binary = find_binary("chromium", "chromium")
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._session: Any = None
        self._sockets: list[Any] = []

    async def __aenter__(self) -> Chromium:
        import aiohttp

        profile = self.workdir / "profile"
        profile.mkdir(parents=True, exist_ok=True)
        active = profile / "DevToolsActivePort"
        active.unlink(missing_ok=True)  # a profile used before keeps the port of its last browser
        self.proc = await asyncio.to_thread(self._launch, profile)

        def port() -> int:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"chromium exited ({self.proc.returncode}): {self._tail()}")
            with contextlib.suppress(OSError, ValueError, IndexError):
                return int(active.read_text().split()[0])
            return 0

        self.port = await asyncio.to_thread(_poll, port, "chromium's DevTools port", 60, self._tail)
        self._session = aiohttp.ClientSession()
        return self

    def _launch(self, profile: Path) -> subprocess.Popen[bytes]:
        with (self.workdir / "chromium.log").open("wb") as log:
            args = [self.binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0"]
            return subprocess.Popen(
                [*args, "about:blank"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.workdir / "chromium.log").read_text(errors="replace")[-3000:]
        return ""

    async def page(self, url: str) -> Page:
        """A new tab at ``url`` (once its load event fired)."""
        async with self._session.put(f"http://127.0.0.1:{self.port}/json/new?about:blank") as answer:
            target = await answer.json(content_type=None)
        ws = await self._session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        self._sockets.append(ws)
        page = Page(ws)
        await page.call("Page.enable")
        await page.call("Page.navigate", url=url)
        await page.wait_for("document.readyState === 'complete'")
        return page

    async def __aexit__(self, *exc: object) -> None:
        for ws in self._sockets:
            with contextlib.suppress(Exception):
                await ws.close()
        if self._session is not None:
            await self._session.close()
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 30)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 30)
