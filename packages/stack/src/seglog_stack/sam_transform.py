"""template.yaml as plain CloudFormation: what AWS's SAM transform (aws-sam-translator) expands it to.

The functions' roles, permissions, event source mappings and the HTTP API's stage exist only after the transform,
so that is what checkov reads in `./dev lint` (its IAM and API Gateway checks never see them in the SAM form).

Two things differ from a transform run by CloudFormation:

- Local ``CodeUri`` paths become a placeholder S3 URI first, as ``sam package`` would after uploading the code
  (the translator accepts only S3 locations).
- Each SAM resource's ``Metadata`` is copied onto every resource generated from it (the translator's
  passthrough_metadata). SAM itself keeps a function's Metadata on its ``AWS::Lambda::Function`` only; with the
  copy, a ``checkov: skip:`` for a check on the function's role, permission or event source mapping is written
  on the function too, where a reader looks for it.

Development only: this module imports aws-sam-translator, a dev dependency that never ships in a Lambda artifact.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seglog_awsmodel.template import Template, TemplateError, load_template

#: What ``sam package`` would put in CodeUri; only its form matters to the translator.
PACKAGED_CODE_URI = "s3://seglog-artifacts/function.zip"


def as_packaged(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a SAM template body whose local CodeUri paths are S3 URIs, as after ``sam package``."""
    packaged = copy.deepcopy(body)
    holders = [((packaged.get("Globals") or {}).get("Function"))]
    holders += [res.get("Properties") for res in (packaged.get("Resources") or {}).values()
                if isinstance(res, dict) and res.get("Type") == "AWS::Serverless::Function"]
    for props in holders:
        if isinstance(props, dict) and isinstance(props.get("CodeUri"), str) \
                and not props["CodeUri"].startswith("s3://"):
            props["CodeUri"] = PACKAGED_CODE_URI
    return packaged


def transform_template(template: Template, *, region: str = "us-east-1",
                       parameter_values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The CloudFormation template AWS's SAM transform makes of ``template``, with ``parameter_values`` (template
    parameters and pseudo parameters such as ``AWS::AccountId``; the rest at their defaults).

    Raises:
        TemplateError: the translator refused the template; the message lists each of its reasons.
    """
    import boto3  # the translator takes the region (and so the partition of its ARNs) from a boto3 session
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    def no_managed_policy_lookup() -> dict[str, str]:
        # Only a policy named by its bare name (not an ARN) needs IAM's list of managed policies, which is not
        # reachable offline.
        raise TemplateError(f"{template.path}: a function names an AWS managed policy by name; write its ARN "
                            "(arn:${AWS::Partition}:iam::aws:policy/NAME) so the template transforms offline")

    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    try:
        result: dict[str, Any] = translator.translate(as_packaged(template.body),
                                                      parameter_values=dict(parameter_values or {}),
                                                      passthrough_metadata=True,
                                                      get_managed_policy_map=no_managed_policy_lookup)
    except InvalidDocumentException as exc:
        reasons = "; ".join(str(cause) for cause in exc.causes)
        raise TemplateError(f"{template.path}: the SAM transform refused the template: {reasons}") from exc
    finally:
        translator.metrics.publish()  # to its no-op publisher; unpublished metrics log a warning at exit
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m seglog_stack.sam_transform [TEMPLATE] [--output FILE]``: write the transformed template as JSON."""
    parser = argparse.ArgumentParser(prog="python -m seglog_stack.sam_transform",
                                     description="Write template.yaml as plain CloudFormation (JSON).")
    parser.add_argument("template", nargs="?", type=Path, help="the SAM template (default: the repository's)")
    parser.add_argument("--output", type=Path, help="where to write the JSON (default: standard output)")
    args = parser.parse_args(argv)
    try:
        text = json.dumps(transform_template(load_template(args.template)), indent=1, sort_keys=True)
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.output is None:
        print(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
