"""ARNs as the local stack spells them. Imported by the worker wrapper, so the standard library only."""

from __future__ import annotations

from typing import Final

_DDB_LOCAL_REGION: Final = ":dynamodb:ddblocal:"


def local_arn(arn: str, region: str) -> str:
    """``arn`` with DynamoDB Local's region placeholder (``ddblocal``) replaced by ``region``, so a policy naming a
    table's stream matches the requests for it."""
    return arn.replace(_DDB_LOCAL_REGION, f":dynamodb:{region}:", 1) if _DDB_LOCAL_REGION in arn else arn


def function_arn(region: str, account: str, name: str) -> str:
    """A function's unqualified ARN. The emulator runs a function under its logical id, so ``name`` is that (what
    ``!Ref`` and ``!GetAtt .Arn`` of it resolve to here, in the environment and in IAM alike)."""
    return f"arn:aws:lambda:{region}:{account}:function:{name}"
