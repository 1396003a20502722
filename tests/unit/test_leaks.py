"""The leak rule of tests/leaks.py, run in a child pytest: our leaks fail a test, a third-party library's do not."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
import pytest

from tests import leaks

leaks.THIRD_PARTY_ROOTS.append({site!r})
leaks.OUR_ROOTS.append({ours!r})


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    config.add_cleanup(leaks.install())
"""

# one helper module per side: a socket, an asyncio transport and an object whose finalizer raises, each left open
HELPER = """
import asyncio
import gc
import socket


class Session:
    def __del__(self):
        raise RuntimeError("lost in a finalizer")


def leak_socket():
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    gc.collect()


async def leak_transport():
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    await asyncio.get_running_loop().create_connection(asyncio.Protocol, "127.0.0.1", port)
    server.close()
    gc.collect()


def leak_session():
    Session()
"""


LOSE = """
import asyncio


async def _fail():
    raise RuntimeError("lost in a task")


async def lose_an_exception():
    task = asyncio.get_running_loop().create_task(_fail())
    await asyncio.wait([task])
    del task
"""


def _run(tmp_path: Path, tests: str, *, library: str = "", ours: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``tests`` in a child pytest with the leak rule; ``library`` is a module ``library_helper`` placed as an
    installed package, ``ours`` a module ``our_helper`` placed as code of ours (each gets HELPER's functions)."""
    site = (tmp_path / "site-packages").resolve()
    home = (tmp_path / "ours").resolve()
    for directory, module, extra in ((site, "library_helper", library), (home, "our_helper", ours)):
        directory.mkdir()
        (directory / f"{module}.py").write_text(textwrap.dedent(HELPER) + textwrap.dedent(extra))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST.format(site=str(site), ours=str(home))))
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    (tmp_path / "test_child.py").write_text(textwrap.dedent(tests))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site), str(home)])}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:asyncio", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_our_leaks_fail_the_test(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        import asyncio
        import gc
        from our_helper import leak_socket, leak_transport

        def test_socket():
            leak_socket()

        def test_transport():
            asyncio.run(leak_transport())
            gc.collect()
        """,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "2 failed" in out, out
    assert "unclosed <socket.socket" in out, out
    assert "unclosed transport" in out, out


def test_a_librarys_own_leaks_are_tolerated(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        import asyncio
        import gc
        from library_helper import leak_socket, leak_transport

        def test_socket():
            leak_socket()

        def test_transport():
            asyncio.run(leak_transport())
            gc.collect()
        """,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "2 passed" in out, out


def test_a_connection_a_library_made_for_us_and_we_left_open_is_ours(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        import asyncio
        import gc
        from our_helper import ask_library

        def test_transport():
            asyncio.run(ask_library())
            gc.collect()
        """,
        ours="""
        import library_helper

        async def ask_library():
            await library_helper.leak_transport()
        """,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "unclosed transport" in out, out


def test_a_library_object_left_open_and_a_coroutine_never_awaited_are_ours(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from library_helper import leak_session, leak_transport

        def test_session():
            leak_session()

        def test_coroutine():
            leak_transport()
        """,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "2 failed" in out, out
    assert "lost in a finalizer" in out, out
    assert "was never awaited" in out, out


def test_an_exception_our_task_lost_fails_the_test_and_a_librarys_is_only_logged(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        import asyncio
        import gc
        import our_helper, library_helper

        def test_ours():
            asyncio.run(our_helper.lose_an_exception())
            gc.collect()

        def test_librarys():
            asyncio.run(library_helper.lose_an_exception())
            gc.collect()
        """,
        ours=LOSE,
        library=LOSE,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "FAILED test_child.py::test_ours" in out, out
    assert "lost in a task" in out, out
