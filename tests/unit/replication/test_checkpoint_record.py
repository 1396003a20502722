"""The checkpoint is every sink's record (mybinlog/_checkpoint.py), not ClickHouse's: a sink of one's own, and the
Kafka sink, use it without loading the ClickHouse layer, and its JSON form gives back every field."""

from __future__ import annotations

import json
import subprocess
import sys

import mybinlog.clickhouse
import mybinlog.replication
from mybinlog import BinlogPosition, MariaDBGtidSet
from mybinlog.replication import Checkpoint, checkpoint_from, checkpoint_json


def test_a_sink_of_ones_own_does_not_load_the_clickhouse_layer() -> None:
    code = (
        "import sys; from mybinlog.replication import Checkpoint, TransactionalSink, checkpoint_json; "
        "import mybinlog.kafka._sink; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('mybinlog.clickhouse'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "", f"a transactional sink loads the ClickHouse layer: {out.strip()}"


def test_one_record_under_both_public_names() -> None:
    assert mybinlog.replication.Checkpoint is mybinlog.clickhouse.Checkpoint
    assert mybinlog.replication.checkpoint_json is mybinlog.clickhouse.checkpoint_json


def test_the_json_form_gives_back_every_field() -> None:
    gtids = MariaDBGtidSet.parse("0-1-42")
    cp = Checkpoint(
        "shop",
        BinlogPosition("mysql-bin.000003", 1234, gtids, 1700000000, 7),
        {"t": "CREATE TABLE t (id int primary key)"},
        source="mysql://repl@db:3306/shop",
        pending=BinlogPosition("mysql-bin.000003", 2000, None, 0, 7),
        stopped={"u": "why"},
        seq=(3 << 32) | 5,
        loading=["t"],
        version_base=2,
        written=["t"],
        xa={"x": {"gtid": "0-1-40"}},
    )
    back = checkpoint_from(json.loads(json.dumps(checkpoint_json(cp))))
    assert back == cp
    assert back.epoch == 3
