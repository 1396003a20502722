"""spark-submit entry point of the snapshot job.

::

    spark-submit --master spark://host:7077 [--py-files mybinlog.zip] mybinlog/snapshot/job.py \\
        --source mysql://repl@db:3306 --target http://default@clickhouse:8123 --database shop

``mybinlog`` (and its dependencies: asyncmy, aiochclient, pymysql...) must be importable by the driver's and the
executors' Python: installed there, or shipped with ``--py-files`` (docs/snapshot.md, "Running on a cluster").
"""

import sys

if __name__ == "__main__":
    # this directory is sys.path[0] when run as a script: drop it so its modules cannot shadow top-level ones
    sys.path = [p for p in sys.path if not p.rstrip("/").endswith("mybinlog/snapshot")]
    from mybinlog.cli._snapshot import main

    sys.exit(main())
