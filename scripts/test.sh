#!/usr/bin/env bash
# Run the checks and the test suite in .venv (created/updated by scripts/setup.sh --test).
#
#   bash scripts/test.sh                      # ruff + mypy --strict on mybinlog, then all tests
#   bash scripts/test.sh tests/unit -k gtid   # arguments go to pytest
#
# With CI=true a test that cannot find MariaDB or the binlog corpus fails instead of being skipped.
#
# The suite runs twice: with the compiled core (mybinlog/protocol/_speedups.c, built by the setup when a C compiler
# is there) and then as pure Python (MYBINLOG_NO_EXTENSIONS=1), with the same arguments (without arguments the
# second pass leaves out the suites marked `orchestration`: MYBINLOG_TEST_PURE_ALL=1 runs them too); the exit
# status fails when either run fails. With CI=true the compiled core must be importable (else the two runs would both test
# pure Python): the script stops before the tests when it is not.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh --test

PY=.venv/bin/python
echo "test: ruff check mybinlog tests benchmarks"
"$PY" -m ruff check mybinlog tests benchmarks
echo "test: mypy --strict mybinlog"
"$PY" -m mypy --strict mybinlog

# which implementation the first run tests (MYBINLOG_NO_EXTENSIONS from the caller's environment is ignored)
IMPL="$(env -u MYBINLOG_NO_EXTENSIONS "$PY" -c 'import mybinlog.protocol._accel as a; print(a.describe())')"
echo "test: decoder: $IMPL"
if [ "${CI:-}" = "true" ] && ! env -u MYBINLOG_NO_EXTENSIONS "$PY" -c 'import mybinlog.protocol._speedups'; then
    echo "test: CI=true but the compiled core is not importable ($IMPL): the build of" \
        "mybinlog/protocol/_speedups.c failed or was skipped (a C compiler and the Python headers are needed:" \
        "bash scripts/setup.sh installs gcc and python3-dev); see the output of" \
        "'.venv/bin/python -m pip install -v --no-deps -e .'" >&2
    exit 1
fi

run_pytest() {  # run_pytest LABEL [ENV=VALUE...] -- pytest arguments; prints nothing but pytest's output
    local label="$1" rc=0
    shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    echo "test: pytest -q $* ($label)"
    env -u MYBINLOG_NO_EXTENSIONS "${envs[@]}" "$PY" -m pytest -q "$@" || rc=$?
    if [ "$rc" -eq 5 ]; then
        echo "test: pytest collected no tests: check the arguments ($*)" >&2
        rc=1
    fi
    return "$rc"
}

rc=0
run_pytest "$IMPL" -- "$@" || rc=$?
rc_python=0
# The whole suite's second pass leaves out the orchestration suites (process kills, restarts, HA, Spark, exit codes:
# the code around the decoder, the same in both passes; docs/testing.md) unless MYBINLOG_TEST_PURE_ALL=1; with
# arguments, the second pass runs exactly what they name.
PURE_ARGS=("$@")
if [ "$#" -eq 0 ] && [ "${MYBINLOG_TEST_PURE_ALL:-0}" != "1" ]; then
    PURE_ARGS=(-m "not orchestration")
fi
run_pytest "pure Python: MYBINLOG_NO_EXTENSIONS=1" MYBINLOG_NO_EXTENSIONS=1 -- "${PURE_ARGS[@]}" || rc_python=$?
if [ "$rc" -ne 0 ] || [ "$rc_python" -ne 0 ]; then
    echo "test: FAILED: exit status $rc with $IMPL, $rc_python with pure Python" >&2
    if [ "$rc" -ne 0 ]; then exit "$rc"; fi
    exit "$rc_python"
fi
echo "test: passed with $IMPL and with pure Python"
