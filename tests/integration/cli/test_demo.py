"""The README's first command: ``mybinlog demo`` (the main job) runs end to end and verifies equal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.servers import find_mariadb

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def test_demo_replicates_with_a_live_writer_and_verifies_equal(tmp_path: Path) -> None:
    if find_mariadb() is None:
        skip_or_fail("MariaDB binaries not found: run `bash scripts/setup.sh --test`")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "mybinlog", "demo", "--rows", "3000", "--seconds", "2", "--target-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "initial) finished" in out  # the Spark snapshot made the initial load
    assert '"dispatcher_name": "dispatcher-1"' in out  # a status row with ClickHouse's column names
    assert "all 2 tables equal" in out
    assert "verify: EQUAL" in out
