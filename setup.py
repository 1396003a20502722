"""Build the optional compiled core (mybinlog/protocol/_speedups.c and its _sp_*.c files, _jsonl.c); everything else is
in pyproject.toml.

The extension is optional: without a C compiler (or Python headers) the build prints a warning and installs the
pure-Python package, which gives the same results (docs/compiled-core.md). MYBINLOG_BUILD_EXTENSIONS=0 skips it.
"""

import os

from setuptools import Extension, setup

# mybinlog.protocol._speedups: the module and its functions, row programs, their JSON rows, DECIMAL values, UTF-8,
# framing/CRC32/the decoder loop, BinlogStream's awaitables, TsvRows, MySQL's binary JSON
SPEEDUPS_FILES = (
    "_speedups",
    "_sp_rows",
    "_sp_render",
    "_sp_decimal",
    "_sp_utf8",
    "_sp_events",
    "_sp_stream",
    "_sp_tsv",
    "_jsonb",
)

extensions = []
if os.environ.get("MYBINLOG_BUILD_EXTENSIONS", "1").strip() not in ("0", "false", "no"):
    extensions.append(
        Extension(
            "mybinlog.protocol._speedups",
            # one module, one file per role (the map: the top of _speedups.c; docs/compiled-core.md)
            [f"mybinlog/protocol/{name}.c" for name in SPEEDUPS_FILES],
            # headers: rebuilt when they change, and in the sdist (_jsonbuf.h is shared with _jsonl.c)
            depends=["mybinlog/protocol/_speedups.h", "mybinlog/protocol/_jsonbuf.h"],
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
