"""The status page's script colours replica states from one table declared beside the page."""

from __future__ import annotations

import json
import re

from mybinlog.replication import REPLICA_STATES
from mybinlog.status._page import STATE_BADGES, STATUS_PAGE


def test_every_replica_state_has_a_badge_colour() -> None:
    assert set(STATE_BADGES) == set(REPLICA_STATES)
    assert set(STATE_BADGES.values()) <= {"ok", "warn", "bad"}


def test_the_page_script_reads_the_declared_table() -> None:
    page = STATUS_PAGE.decode()
    match = re.search(r"const STATE_BADGES = (\{.*?\});", page)
    assert match is not None, "the page no longer declares STATE_BADGES"
    assert json.loads(match.group(1)) == STATE_BADGES
    assert '"streaming"' not in page.replace(match.group(0), ""), "the script spells a state outside the table"
