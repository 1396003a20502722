"""The ``mybinlog`` command line: one module per command, and one shared helper for DSNs, passwords and exit codes.

Layer: the top. It may import every other layer; nothing imports it (except ``mybinlog/__main__.py`` and the
spark-submit entry ``mybinlog/snapshot/job.py``). ``mybinlog dump`` and ``mybinlog demo`` import neither the
replication nor the Spark modules, so they start fast.

============================  =====================================================================
module                        command
============================  =====================================================================
``_main``                     the parser, ``dump`` (files and live servers) and dispatch
``_common``                   source DSNs and passwords (URL, file, environment), ClickHouse URLs
``_demo``                     ``demo``
``_status``                   ``status``
``_replicate``                ``replicate`` (and its exit codes)
``_config``                   ``replicate --config FILE``: the TOML file of sources, targets and replicas
``_verify``                   ``verify``
``_snapshot``                 ``snapshot`` (also the spark-submit job's command line)
============================  =====================================================================
"""

from ._main import main

__all__ = ["main"]
