#!/usr/bin/env bash
# Run the checks and the test suite in .venv (created/updated by scripts/setup.sh --test).
#
#   bash scripts/test.sh                      # ruff + mypy --strict on mybinlog, then all tests
#   bash scripts/test.sh tests/unit -k gtid   # arguments go to pytest
#
# With CI=true a test that cannot find MariaDB or the binlog corpus fails instead of being skipped.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh --test

PY=.venv/bin/python
echo "test: ruff check mybinlog tests benchmarks"
"$PY" -m ruff check mybinlog tests benchmarks
echo "test: mypy --strict mybinlog"
"$PY" -m mypy --strict mybinlog
echo "test: pytest -q $*"
rc=0
"$PY" -m pytest -q "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test: pytest collected no tests: check the arguments ($*)" >&2
    exit 1
fi
exit "$rc"
