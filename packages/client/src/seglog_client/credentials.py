"""Where the client's AWS credentials and signing region come from.

Credentials, in order (the AWS SDKs' own order for the first two: AWS SDKs and Tools Reference Guide, "Understand
the credential provider chain", https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html):

1. given to the client (a :class:`~seglog_client.sigv4.Credentials`, or a callable returning one per request);
2. the standard environment variables ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN``
   (for the local emulator, ``eval "$(seglog env)"`` exports the pair it accepts);
3. botocore's chain, only if botocore happens to be installed (imported lazily, never required): a named profile,
   SSO, assumed roles, the container or instance role. Its credentials are read afresh for every request, so
   temporary ones are refreshed before they expire.

The region is the API's own when its URL says it (``<api-id>.execute-api.<region>.amazonaws.com``), else the one
given, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else ``us-east-1`` (what the local stack uses).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import urlsplit

from seglog_client.errors import SeglogClientError
from seglog_client.sigv4 import Credentials

type CredentialsProvider = Callable[[], Credentials]

DEFAULT_REGION: Final = "us-east-1"
#: An API Gateway default endpoint: "https://{api-id}.execute-api.{region}.amazonaws.com" (API Gateway Developer
#: Guide, "Invoke an API", http-api-call; amazonaws.com.cn in the China regions).
_EXECUTE_API_HOST: Final = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")


class NoCredentialsError(SeglogClientError):
    """No AWS credentials were found to sign requests with; the message says where the client looked."""


def region_for(url: str, region: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The region to sign requests to ``url`` for (see the module docstring)."""
    env = os.environ if environ is None else environ
    found = _EXECUTE_API_HOST.match((urlsplit(url).hostname or "").lower())
    if found:
        return found.group(1)
    return region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


def from_environment(environ: Mapping[str, str] | None = None) -> Credentials | None:
    """The credentials in ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``), if both set."""
    env = os.environ if environ is None else environ
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    return Credentials(key, secret, env.get("AWS_SESSION_TOKEN") or None)


def resolve(credentials: Credentials | CredentialsProvider | None = None, *, profile: str | None = None,
            environ: Mapping[str, str] | None = None) -> CredentialsProvider:
    """A provider of the credentials to sign with, looked up once in the order of the module docstring.

    Args:
        credentials: explicit credentials (or a provider), used as they are.
        profile: a named profile of the shared AWS config files; needs botocore, and skips the environment.

    Raises:
        NoCredentialsError: none found, or a profile was asked for without botocore installed.
    """
    if isinstance(credentials, Credentials):
        given = credentials
        return lambda: given
    if credentials is not None:
        return credentials
    if profile is None:
        found = from_environment(environ)
        if found is not None:
            return lambda: found
    provider = _botocore_provider(profile)
    if provider is not None:
        return provider
    if profile is not None:
        raise NoCredentialsError(f"profile {profile!r} needs botocore to be read (pip install botocore), or set "
                                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead")
    raise NoCredentialsError(
        "no AWS credentials to sign API requests with: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (for the "
        "local emulator, eval \"$(seglog env)\" sets the pair it accepts), name a profile, or pass credentials")


def _botocore_provider(profile: str | None) -> CredentialsProvider | None:
    """botocore's credential chain, if botocore is importable and the chain finds something; else None."""
    try:
        import botocore.exceptions
        import botocore.session  # optional, and slow to import: only when no cheaper source had credentials
    except ImportError:
        return None
    try:
        chain = botocore.session.Session(profile=profile).get_credentials()
    except botocore.exceptions.BotoCoreError as exc:  # an unknown profile, a broken config file, an SSO token gone
        raise NoCredentialsError(f"AWS credentials could not be read: {exc}") from exc
    if chain is None:
        if profile is not None:
            raise NoCredentialsError(f"profile {profile!r} gave no credentials (is it in ~/.aws/config, and "
                                     "logged in if it uses SSO?)")
        return None

    def provide() -> Credentials:
        frozen = chain.get_frozen_credentials()  # refreshes temporary credentials close to their expiry
        if not frozen.access_key or not frozen.secret_key:
            raise NoCredentialsError("botocore's credential chain returned an incomplete key pair")
        return Credentials(frozen.access_key, frozen.secret_key, frozen.token or None)

    return provide
