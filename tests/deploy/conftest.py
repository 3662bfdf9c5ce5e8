"""The local deploy target for the deploy tests: LocalStack in host mode with CloudFormation, IAM and Lambda
(our runtime executor, no Docker), on ports of its own, started once per session and stopped at the end.

Like every stack test, these fail (never skip) when the target cannot start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from seglog_deploy.build import Builder
from seglog_deploy.manifest import Manifest
from seglog_deploy.target import Target
from seglog_stack import Profile, StackConfig, StackManager

#: Beside the test profiles' ports (base, base+10) and the Docker path's (base+20, base+30).
_BASE = int(os.environ.get("SEGLOG_TEST_PORT_BASE", "4640"))
DEPLOY_PORT = _BASE + 40


@pytest.fixture(scope="session")
def deploy_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A running deploy target and a Target pointing at it."""
    config = StackConfig.resolve(Profile.DEPLOY, localstack_port=DEPLOY_PORT, dynamodb_port=DEPLOY_PORT + 3400,
                                 run_dir=tmp_path_factory.mktemp("deploy-target"))
    manager = StackManager(config)
    try:
        manager.up()
        yield Target.resolve(region=config.region, endpoint_url=config.url(DEPLOY_PORT), env={})
    finally:
        manager.down()


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    """The template's artifacts, built by `seglog build` (or reused from the clone's .seglog/build): what the
    deploy command uploads, since it builds the same way."""
    return Builder().build()
