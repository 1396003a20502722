"""Build the optional compiled core (mybinlog/protocol/_speedups.c); everything else is in pyproject.toml.

The extension is optional: without a C compiler (or Python headers) the build prints a warning and installs the
pure-Python package, which gives the same results (docs/compiled-core.md). MYBINLOG_BUILD_EXTENSIONS=0 skips it.
"""

import os

from setuptools import Extension, setup

extensions = []
if os.environ.get("MYBINLOG_BUILD_EXTENSIONS", "1").strip() not in ("0", "false", "no"):
    extensions.append(
        Extension(
            "mybinlog.protocol._speedups",
            ["mybinlog/protocol/_speedups.c", "mybinlog/protocol/_jsonb.c"],  # _jsonb.c: MySQL binary JSON
            depends=["mybinlog/protocol/_jsonbuf.h"],  # shared with _jsonl.c: rebuilt when it changes, in the sdist
            optional=True,  # a failed compile is a warning, not a failed install
            extra_compile_args=["-O2", "-std=c11"],
        )
    )
    extensions.append(
        Extension(
            "mybinlog.protocol._jsonl_speedups",  # the JSON Lines renderer's hot path (mybinlog/protocol/_format.py)
            ["mybinlog/protocol/_jsonl.c"],
            depends=["mybinlog/protocol/_jsonbuf.h"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11"],
        )
    )

setup(ext_modules=extensions)
