"""What every command needs: the stack configuration, the deployment it talks to, clean error reporting."""

from __future__ import annotations

import functools
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from seglog_aws.backend import Backend
from seglog_aws.resources import ENV as RESOURCE_ENV
from seglog_aws.resources import Resources
from seglog_awsmodel.errors import ToolError
from seglog_client import SeglogClientError
from seglog_core.errors import SeglogError
from seglog_plugin.resources import backend_of
from seglog_stack import StackConfig, local


@dataclass
class Settings:
    """Options shared by every command (set on the top-level group)."""

    profile: str | None = None
    localstack_port: int | None = None
    dynamodb_port: int | None = None

    def stack_config(self) -> StackConfig:
        return StackConfig.resolve(profile=self.profile, localstack_port=self.localstack_port,
                                   dynamodb_port=self.dynamodb_port)

    def backend(self) -> Backend:
        """The deployment to use: resource names from the environment (AWS, or `eval $(seglog env)`), else the
        local stack that `seglog up` recorded."""
        if os.environ.get(RESOURCE_ENV["entries_table"]):
            return Backend.connect(Resources.from_env())
        deployment = local.current(self.stack_config())
        if deployment is None:
            raise click.ClickException(
                "the local stack is not up: run `seglog up` first (or set SEGLOG_* resource variables for AWS)")
        return backend_of(deployment)


def parse_log_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a log id (a UUID, as `seglog sheet create` prints)") from None


def reports_errors[**P, R](func: Callable[P, R]) -> Callable[P, R]:
    """Turn seglog's and the tool's errors into a one-line message and a non-zero exit, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (SeglogError, ToolError, SeglogClientError) as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:
            raise click.ClickException(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from exc

    return wrapper


def api_url_option[**P, R](func: Callable[P, R]) -> Callable[P, R]:
    """`--api-url URL` (or SEGLOG_API_URL): the command talks to the HTTP API there instead of the tables,
    signing its requests (SigV4) with the AWS credentials of the environment or of `--profile`."""
    func = click.option(
        "--profile", "aws_profile", metavar="NAME",
        help="With --api-url: sign with this AWS profile's credentials (needs botocore) instead of "
             "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.")(func)
    return click.option(
        "--api-url", envvar="SEGLOG_API_URL", metavar="URL",
        help="Go through the seglog HTTP API at URL (e.g. the emulator's http://127.0.0.1:4599, with the "
             "credentials `seglog env` exports) instead of the tables.")(func)


def settings(ctx: click.Context) -> Settings:
    obj: Any = ctx.find_object(Settings)
    assert isinstance(obj, Settings)
    return obj


def echo_json(value: Any) -> None:
    import json

    sys.stdout.write(json.dumps(value, default=str) + "\n")
