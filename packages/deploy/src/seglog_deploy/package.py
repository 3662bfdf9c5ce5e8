"""The template as deployed: each function's CodeUri rewritten to its uploaded artifact, as JSON.

template.yaml's ``CodeUri: services/src`` names a local folder (what ``sam build`` and the emulator read); what
CloudFormation gets instead names the exact S3 object version of each function's built artifact. The SAM
transform itself stays in the template and runs in CloudFormation (CAPABILITY_AUTO_EXPAND), so the deployed
resources are AWS's expansion, not a local one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from seglog_deploy.artifacts import S3Location
from seglog_deploy.errors import DeployError

SERVERLESS_FUNCTION = "AWS::Serverless::Function"
#: The largest TemplateBody CloudFormation takes in a request; larger ones go by TemplateURL from S3, up to
#: 1 MB (AWS CloudFormation User Guide, "CloudFormation quotas").
INLINE_TEMPLATE_LIMIT = 51_200


def function_ids(body: Mapping[str, Any]) -> list[str]:
    """The logical ids of the template's functions whose code is uploaded (not InlineCode, which CloudFormation
    takes as written), in template order."""
    return [lid for lid, r in body.get("Resources", {}).items()
            if r.get("Type") == SERVERLESS_FUNCTION and "InlineCode" not in (r.get("Properties") or {})]


def package_template(body: Mapping[str, Any], code: Mapping[str, S3Location]) -> dict[str, Any]:
    """A copy of ``body`` whose functions run the uploaded ``code`` (logical id -> location).

    Raises:
        DeployError: a function of the template has no artifact (the build and the template disagree).
    """
    packaged = copy.deepcopy(dict(body))
    functions = function_ids(packaged)
    missing = [lid for lid in functions if lid not in code]
    if missing:
        raise DeployError(f"no built artifact for {', '.join(missing)}: build from the same template you deploy "
                          "(seglog deploy --template PATH builds it too)")
    for lid in functions:
        packaged["Resources"][lid].setdefault("Properties", {})["CodeUri"] = code[lid].code_uri()
    # The local folder means nothing to CloudFormation once every function names its own artifact.
    packaged.get("Globals", {}).get("Function", {}).pop("CodeUri", None)
    return packaged


def template_json(body: Mapping[str, Any]) -> str:
    """The template as compact JSON (CloudFormation reads JSON and YAML alike; JSON needs no intrinsic tags)."""
    return json.dumps(body, separators=(",", ":"))
