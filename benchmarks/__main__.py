"""``python -m benchmarks [--quick]``: run every benchmark and write docs/benchmarks.md (see run.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import main

raise SystemExit(main())
