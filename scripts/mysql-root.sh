#!/usr/bin/env bash
# Build (once) a minimal Debian unstable root holding Oracle MySQL 9.x for the tests' MySQLServer fixture.
#
#   bash scripts/mysql-root.sh            # builds $MYBINLOG_MYSQL_ROOT (default /var/lib/mybinlog/mysql-root)
#
# Debian 12 has no Oracle MySQL package, and the mysqld of Debian unstable (mysql-server-core 9.x) needs a newer
# libc than Debian 12's, so it runs chrooted in a minimal sid root made by debootstrap. Idempotent: a finished root
# carries a stamp and is left alone; an interrupted build is thrown away and made again. Needs root (chroot,
# debootstrap). About 2 minutes and 800 MB. The fixture (mybinlog.testing.MySQLServer) finds mysqld there, on PATH,
# or where MYBINLOG_MYSQLD says.
set -euo pipefail

ROOT="${MYBINLOG_MYSQL_ROOT:-/var/lib/mybinlog/mysql-root}"
STAMP="$ROOT/.mybinlog-mysql-ready"
say() { echo "setup: mysql root: $*"; }

if [ -f "$STAMP" ] && [ -x "$ROOT/usr/sbin/mysqld" ]; then
    say "$ROOT ready ($(cat "$STAMP"))"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "setup: building the MySQL root $ROOT needs root (debootstrap and chroot); run" \
        "'sudo bash scripts/mysql-root.sh', or point MYBINLOG_MYSQLD at a mysqld of your own" >&2
    exit 1
fi

# the archive the machine's apt sources name (deb822 or one-line form)
MIRROR="${MYBINLOG_DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ]; then
    MIRROR="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -v -- '-security' | head -n1 || true)"
fi
if [ -z "$MIRROR" ]; then
    MIRROR="$(grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{for (i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}' | grep -v -- '-security' | head -n1 || true)"
fi
if [ -z "$MIRROR" ]; then
    echo "setup: cannot tell the Debian archive from /etc/apt/sources*; set MYBINLOG_DEBIAN_MIRROR" >&2
    exit 1
fi

if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
    say "apt-get install debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
fi

BUILD="$ROOT.building"
rm -rf "$BUILD"
mkdir -p "$(dirname "$ROOT")"
say "debootstrap --variant=minbase sid from $MIRROR (about 2 minutes)"
if ! /usr/sbin/debootstrap --variant=minbase sid "$BUILD" "$MIRROR" >"$BUILD.log" 2>&1; then
    echo "setup: debootstrap of Debian sid failed (log: $BUILD.log); the tests on Oracle MySQL cannot run." \
        "Check that $MIRROR serves the sid suite, or set MYBINLOG_MYSQLD to a mysqld of your own" >&2
    tail -n 20 "$BUILD.log" >&2 || true
    exit 1
fi
# no service starts inside the root
printf '#!/bin/sh\nexit 101\n' > "$BUILD/usr/sbin/policy-rc.d"
chmod 755 "$BUILD/usr/sbin/policy-rc.d"
say "apt-get install mysql-server-core mysql-client-core in the root"
chroot "$BUILD" env DEBIAN_FRONTEND=noninteractive apt-get -q -o Acquire::Check-Valid-Until=false update >>"$BUILD.log" 2>&1 || true
if ! chroot "$BUILD" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Acquire::Check-Valid-Until=false \
        install --no-install-recommends mysql-server-core mysql-client-core >>"$BUILD.log" 2>&1; then
    echo "setup: installing mysql-server-core in the sid root failed (log: $BUILD.log)" >&2
    tail -n 20 "$BUILD.log" >&2 || true
    exit 1
fi
chroot "$BUILD" apt-get clean >/dev/null 2>&1 || true
VERSION="$(chroot "$BUILD" /usr/sbin/mysqld --version 2>/dev/null | head -n1 || true)"
if [ -z "$VERSION" ]; then
    echo "setup: mysqld in $BUILD does not run (log: $BUILD.log)" >&2
    exit 1
fi
echo "$VERSION" > "$BUILD/.mybinlog-mysql-ready"
rm -rf "$ROOT"
mv "$BUILD" "$ROOT"
rm -f "$BUILD.log"
say "$ROOT ready ($VERSION)"
