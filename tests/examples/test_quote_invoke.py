"""examples/quote-invoke runs through the emulator on the real local stack with IAM enforced (issue 36, point 3):
a function's lambda.invoke reaches another function of the template synchronously (its return value, or its error
with FunctionError), and asynchronously (202 at once; the function runs; a failure with no retries left goes to
the OnFailure destination as Lambda's record)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from examples.support import call, client, running, wait_for
from seglog_emulator.supervisor import Supervisor

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def quote(stacks: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running("quote-invoke", stacks, tmp_path_factory.mktemp("quote-state")) as supervisor:
        yield supervisor


def test_a_synchronous_invoke_answers_with_the_functions_value_or_its_error(quote: Supervisor) -> None:
    assert (200, {"item": "tea", "qty": 2, "total_cents": 500}) == call("GET", f"{quote.api_url}/quote/tea?qty=2")
    assert (404, {"message": "'no price for coffee'"}) == call("GET", f"{quote.api_url}/quote/coffee")


def test_an_asynchronous_invoke_runs_later_and_a_failure_reaches_the_on_failure_queue(quote: Supervisor) -> None:
    names = quote.settings.deployment.names
    ddb, sqs = client(quote, "dynamodb"), client(quote, "sqs")
    assert (202, {"audit": "cake"}) == call("POST", f"{quote.api_url}/audit/cake")
    wait_for(lambda: ddb.get_item(TableName=names["AuditTable"], Key={"item": {"S": "cake"}}).get("Item"), 30,
             "the audit of cake")
    assert (202, {"audit": "boom"}) == call("POST", f"{quote.api_url}/audit/boom")

    def failed() -> list[dict[str, object]]:
        return sqs.receive_message(QueueUrl=names["AuditFailures"], WaitTimeSeconds=1).get("Messages", [])

    [message] = wait_for(failed, 30, "the failure record of boom")
    record = json.loads(str(message["Body"]))
    assert {"item": "boom"} == record["requestPayload"]
    assert ("RetriesExhausted", 1) == (record["requestContext"]["condition"],
                                       record["requestContext"]["approximateInvokeCount"])
    assert record["requestContext"]["functionArn"].endswith(":function:AuditFunction:$LATEST")
    assert ("Unhandled", "RuntimeError", "the audit of boom always fails") == (
        record["responseContext"]["functionError"], record["responsePayload"]["errorType"],
        record["responsePayload"]["errorMessage"])
