#!/usr/bin/env bash
# Set everything up (apt packages, .venv) and run the main job on the embedded default:
# a throwaway private MariaDB with a writer running, loaded with the Spark snapshot and replicated from the binlog
# into embedded ClickHouse (chdb), then the status rows and a verify result. Extra arguments go to `mybinlog demo`
# (--rows N, --seconds S, --target-dir DIR; --stream shows the decoded change stream instead).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/mybinlog demo "$@"
