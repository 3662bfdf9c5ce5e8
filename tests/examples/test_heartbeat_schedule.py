"""examples/heartbeat-schedule runs through the emulator on the real local stack (issue 36, point 5): its
Schedule event fires on the rule's clock (60 times faster: the README's --schedule-scale 60, read from it), the
function gets the rule's constant Input, and the beats climb in the table's counter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from examples.support import client, running, wait_for
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def heartbeat(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("heartbeat-schedule", stacks, tmp_path_factory.mktemp("beat-state")) as supervisor:
        yield supervisor


def test_the_schedule_beats_with_the_rules_input(heartbeat: Supervisor) -> None:
    ddb = client(heartbeat, "dynamodb")
    table = heartbeat.settings.deployment.names["BeatsTable"]

    def beats() -> int:
        item = ddb.get_item(TableName=table, Key={"id": {"S": "heartbeat"}}, ConsistentRead=True).get("Item")
        return int(item["beats"]["N"]) if item else 0

    first = wait_for(beats, 30, "the first beat")
    assert wait_for(lambda: beats() >= first + 2, 30, "two more beats")
    item = ddb.get_item(TableName=table, Key={"id": {"S": "heartbeat"}}, ConsistentRead=True)["Item"]
    assert {"id", "beats", "latest"} == set(item)  # the Input's source named the item; nothing else was written
