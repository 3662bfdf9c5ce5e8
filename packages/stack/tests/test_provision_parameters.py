"""The emulator's provisioner refuses a parameter the template does not declare by the same rule, and with the same
message, as the deploy (seglog_awsmodel.parameters owns it); it still takes values the constraints refuse (a chaos
plan's small SnapshotEvery), which only a deploy checks."""

from __future__ import annotations

import pytest

from seglog_awsmodel.errors import ParameterValueError
from seglog_awsmodel.template import load_template
from seglog_stack.provision import Provisioner


def test_an_unknown_parameter_is_refused_with_the_name_it_was_meant_to_be() -> None:
    with pytest.raises(ParameterValueError, match="declares no parameter SnapshotEvry; did you mean SnapshotEvery"):
        Provisioner(load_template(None), stack="t", dynamodb=None, s3=None, sqs=None, parameters={"SnapshotEvry": 8})


def test_a_value_below_the_templates_minimum_is_still_taken_locally() -> None:
    provisioner = Provisioner(load_template(None), stack="t", dynamodb=None, s3=None, sqs=None,
                              parameters={"SnapshotEvery": 8})
    assert provisioner.parameters["SnapshotEvery"] == 8
