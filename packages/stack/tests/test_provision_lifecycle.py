"""The provisioner turns the template's lifecycle rules into PutBucketLifecycleConfiguration's shape (AWS
CloudFormation Template Reference, aws-properties-s3-bucket-rule; Amazon S3 API Reference, LifecycleRule): the
filter moves into ``Filter``, ExpiredObjectDeleteMarker into ``Expiration``, and a property it does not translate
is refused rather than silently dropped (the local bucket would then keep what AWS's removes)."""

from __future__ import annotations

from typing import Any

import pytest

from seglog_awsmodel.template import TemplateError, load_template
from seglog_stack.provision import Provisioner, _lifecycle_rule


def test_every_rule_of_the_template_is_translated_with_its_parameters_resolved() -> None:
    provisioner = Provisioner(load_template(None), stack="t", dynamodb=None, s3=None, sqs=None,
                              parameters={"ArchiveNoncurrentVersionDays": "30"})
    bucket = provisioner.resolve(provisioner.template.resources["SnapshotBucket"]["Properties"])
    rules = {r["ID"]: r for r in map(_lifecycle_rule, bucket["LifecycleConfiguration"]["Rules"])}
    assert {"ID": "KeepArchiveVersions", "Status": "Enabled", "Filter": {"Prefix": "archive/"},
            "Expiration": {"ExpiredObjectDeleteMarker": True},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 30}} == rules["KeepArchiveVersions"]
    assert {"Tag": {"Key": "discardable", "Value": "true"}} == rules["ExpireDiscardable"]["Filter"]


@pytest.mark.parametrize(("rule", "expected"), [
    ({"Id": "r", "Prefix": "a/", "TagFilters": [{"Key": "k", "Value": "v"}]},
     {"And": {"Prefix": "a/", "Tags": [{"Key": "k", "Value": "v"}]}}),
    ({"Id": "r", "TagFilters": [{"Key": "k", "Value": "v"}, {"Key": "l", "Value": "w"}]},
     {"And": {"Tags": [{"Key": "k", "Value": "v"}, {"Key": "l", "Value": "w"}]}}),
    ({"Id": "r"}, {"Prefix": ""}),
])
def test_a_prefix_and_tags_together_become_an_and_filter(rule: dict[str, Any], expected: dict[str, Any]) -> None:
    assert expected == _lifecycle_rule(rule)["Filter"]


def test_a_rule_property_not_translated_is_refused_by_name() -> None:
    rule = {"Id": "Cold", "Prefix": "archive/", "Transitions": [{"StorageClass": "GLACIER", "TransitionInDays": 30}]}
    with pytest.raises(TemplateError, match="lifecycle rule Cold: Transitions not applied by the local provisioner"):
        _lifecycle_rule(rule)
