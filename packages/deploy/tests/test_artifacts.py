"""The artifacts bucket's owner check as AWS answers it, where the local deploy target cannot show it.

S3 refuses a request whose ExpectedBucketOwner is not the bucket's owner with 403 Access Denied (Amazon S3 User
Guide, "Verifying bucket ownership with bucket owner condition"). LocalStack 2026.3 ignores the parameter on
HeadBucket and PutObject (it checks it on the bucket policy calls only, which tests/deploy/test_deploy_failures.py
uses against a real squatted bucket), so the first call's refusal is scripted here with botocore's Stubber: the
documented answer to the documented request, and nothing may follow it.
"""

from __future__ import annotations

import pytest
from botocore.stub import Stubber

from seglog_deploy.artifacts import ArtifactsBucket
from seglog_deploy.errors import ArtifactsBucketError
from seglog_deploy.target import Target

ACCOUNT = "111122223333"


def test_a_bucket_of_another_account_is_refused_at_the_first_call_and_nothing_else_is_sent() -> None:
    target = Target.resolve(region="eu-west-1", endpoint_url="http://127.0.0.1:1", env={})
    name = f"seglog-artifacts-{ACCOUNT}-eu-west-1"
    with Stubber(target.client("sts")) as sts, Stubber(target.client("s3")) as s3:
        sts.add_response("get_caller_identity", {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/u",
                                                 "UserId": "AIDAEXAMPLE"})
        # A HEAD answer has no body: botocore reports the status code as the error code.
        s3.add_client_error("head_bucket", service_error_code="403", http_status_code=403,
                            expected_params={"Bucket": name, "ExpectedBucketOwner": ACCOUNT})
        bucket = ArtifactsBucket(target)
        with pytest.raises(ArtifactsBucketError, match="--artifacts-bucket") as raised:
            bucket.ensure()  # a CreateBucket, a Put... or an upload after the 403 would find no stubbed answer
        s3.assert_no_pending_responses()
    assert (name, ACCOUNT) == (raised.value.bucket, raised.value.expected_owner)
