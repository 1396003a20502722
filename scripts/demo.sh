#!/usr/bin/env bash
# Set everything up (apt packages, .venv) and run the main job on the embedded default:
# a throwaway private MariaDB, a writer, and the decoded change stream. Extra arguments go to `mybinlog demo`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/mybinlog demo "$@"
