"""Installing mybinlog builds the optional compiled core when it can, and installs pure Python when it cannot.

A copy of the source tree (without any built extension) is installed with pip (``--no-deps --target``: cheap, the
dependencies are not needed to import the decoder) twice: with ``CC=false`` (a compiler that always fails) the
install succeeds and ``mybinlog.implementation()`` is ``"python"``; with the machine's compiler it is
``"compiled"``. The check runs the installed copy with ``python -S`` (no site-packages: the development tree's
editable install cannot shadow it). About 3 seconds per install (pip reuses its cached build requirements).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _source_copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(
        REPO / "mybinlog", src / "mybinlog", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "*.egg-info")
    )
    assert not list(src.rglob("*.so"))
    return src


def _install(src: Path, target: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("MYBINLOG_NO_EXTENSIONS", "MYBINLOG_BUILD_EXTENSIONS")}
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--target", str(target)]
    return subprocess.run(
        [*cmd, str(src)], capture_output=True, text=True, env=environ | env, cwd=src.parent, timeout=600
    )


def _implementation(target: Path) -> tuple[str, str]:
    code = (
        f"import sys; sys.path.insert(0, {str(target)!r}); import mybinlog; "
        "from mybinlog.protocol._accel import describe; print(mybinlog.implementation()); print(mybinlog.__file__); "
        "print(describe())"
    )
    environ = {k: v for k, v in os.environ.items() if k != "MYBINLOG_NO_EXTENSIONS"}  # also in the pure-Python pass
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=target.parent, timeout=60, check=True,
        env=environ,
    )  # fmt: skip
    implementation, path, description = done.stdout.splitlines()
    assert Path(path).is_relative_to(target), path  # the installed copy, not the development tree
    return implementation, description


def test_install_without_a_compiler_is_pure_python(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    done = _install(src, tmp_path / "no-cc", CC="false")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not list((tmp_path / "no-cc").rglob("_speedups*.so"))
    implementation, description = _implementation(tmp_path / "no-cc")
    assert implementation == "python"
    assert description.startswith("pure Python (the extension is not installed"), description


def test_install_with_build_extensions_off_is_pure_python(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    done = _install(src, tmp_path / "off", MYBINLOG_BUILD_EXTENSIONS="0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not list((tmp_path / "off").rglob("_speedups*.so"))
    assert _implementation(tmp_path / "off")[0] == "python"


def test_install_with_a_compiler_is_compiled(tmp_path: Path) -> None:
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        reason = "no C compiler (gcc): run `bash scripts/setup.sh` (installs gcc and python3-dev)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    src = _source_copy(tmp_path)
    done = _install(src, tmp_path / "cc")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert list((tmp_path / "cc").rglob("_speedups*.so"))
    implementation, description = _implementation(tmp_path / "cc")
    assert implementation == "compiled", description
