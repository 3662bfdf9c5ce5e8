"""`seglog deploy` and `seglog destroy`: the built artifacts and template.yaml to a CloudFormation stack.

A deploy uploads each function's artifact to the artifacts bucket (:mod:`seglog_deploy.artifacts`), rewrites
the template's CodeUri to those exact object versions (:mod:`seglog_deploy.package`), and creates or updates
the stack through a change set (:mod:`seglog_deploy.changeset`), with the SAM transform run by CloudFormation
itself (CAPABILITY_AUTO_EXPAND); the change set is shown, and runs once confirmed. The stack's outputs are
printed and saved (:mod:`seglog_deploy.record`). :mod:`seglog_deploy.deployer_policy` writes the IAM policy a
deploy needs.

Why boto3 change sets rather than SAM CLI underneath:

* The same resources either way: ``sam deploy`` makes the same change set with the same server-side
  transform. What it adds around that (``sam package`` zipping CodeUri folders) is what we must not do: the
  artifact that deploys is the one ``seglog build`` made and the emulator ran, byte for byte.
* No heavy dependency: aws-sam-cli is a large tool with its own pins (it installs into a virtualenv of its
  own), for a few CloudFormation calls boto3 already makes.
* Our own progress and failures: stack events as they arrive, and on a rollback the failed resources with
  their reasons and exit status 1 (``sam deploy`` prints a table and a generic error); the outputs saved for
  ``seglog env`` and ``seglog smoke``.
* One code path for AWS and the local deploy target (AWS_ENDPOINT_URL), which the deploy test exercises.

What ``sam deploy`` has that this does not: ``--guided`` prompts, code signing, a deployment role
(``--role-arn``), notification ARNs and stack tags. Users of SAM CLI can still ``sam build`` (the template's
makefile build method) and ``sam deploy`` the same template.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import structlog

from seglog_awsmodel.parameters import check_parameters
from seglog_awsmodel.template import load_template
from seglog_deploy.artifacts import ArtifactsBucket, S3Location
from seglog_deploy.build import Builder
from seglog_deploy.changeset import ChangeSetDeployer, ChangeSetPlan, StackState
from seglog_deploy.deployer_policy import check_stack_name
from seglog_deploy.errors import DeployError, StackNotFoundError
from seglog_deploy.events import StackEvent
from seglog_deploy.leftovers import Leftover, leftovers
from seglog_deploy.manifest import Manifest
from seglog_deploy.package import INLINE_TEMPLATE_LIMIT, package_template, template_json
from seglog_deploy.record import StackRecord
from seglog_deploy.target import Target

log = structlog.get_logger("seglog.deploy")


def deploy(target: Target, *, stack_name: str, template_path: Path | None, artifacts: Mapping[str, Path],
           parameters: Mapping[str, str] | None = None, artifacts_bucket: str | None = None,
           on_event: Callable[[StackEvent], None] | None = None, inline_limit: int = INLINE_TEMPLATE_LIMIT,
           records: Path | None = None, replace_failed_stack: bool = False,
           on_replaced: Callable[[list[Leftover]], None] | None = None,
           confirm: Callable[[ChangeSetPlan], bool] | None = None) -> tuple[StackState, StackRecord]:
    """Deploy ``artifacts`` (function logical id -> zip) with the template to ``stack_name``; save the record.

    A stack whose first create failed (ROLLBACK_COMPLETE) is refused before anything is uploaded, with what that
    create retained; ``replace_failed_stack`` deletes it first instead, and ``on_replaced`` is told what stays.
    ``confirm`` is shown the change set and says whether it runs (None: it runs).

    Raises:
        FailedCreateError: the stack's first create failed and ``replace_failed_stack`` is false.
        ChangeSetDeclinedError: ``confirm`` did not say yes; nothing changed and no record is written.
        ArtifactsBucketError: the artifacts bucket is another account's, or cannot be created or hardened.
        ParameterValueError: a parameter value the template's constraints refuse (every one, with what to pass).
        DeployError: see :class:`~seglog_deploy.changeset.ChangeSetDeployer`.
    """
    template = load_template(template_path)
    # What CloudFormation would refuse (an unknown name, a value outside the template's constraints, a schedule
    # expression EventBridge cannot read) is refused here, before any call: LocalStack accepts some of it.
    check_parameters(template.body, parameters or {})
    check_stack_name(stack_name)
    declared: dict[str, Any] = dict(template.body.get("Parameters", {}))
    deployer = ChangeSetDeployer(target, on_event=on_event)
    retained = deployer.clear_failed_create(stack_name, replace=replace_failed_stack)
    if retained and on_replaced is not None:
        on_replaced(retained)
    bucket = ArtifactsBucket(target, artifacts_bucket)
    bucket.ensure()
    uploaded: dict[Path, S3Location] = {}
    for path in artifacts.values():
        if path not in uploaded:
            uploaded[path] = bucket.upload(path.read_bytes(), prefix="functions", suffix=".zip")
    body = template_json(package_template(template.body, {fn: uploaded[p] for fn, p in artifacts.items()}))
    spec = {"TemplateBody": body}
    if len(body.encode()) > inline_limit:
        location = bucket.upload(body.encode(), prefix="templates", suffix=".json")
        spec = {"TemplateURL": bucket.url(location)}
    log.info("deploy.start", stack=stack_name, region=target.region, template=str(template.path),
             via="TemplateURL" if "TemplateURL" in spec else "TemplateBody", bucket=bucket.name)
    state = deployer.deploy(stack_name, template=spec, declared=declared, parameters=parameters or {},
                            replace_failed=replace_failed_stack, confirm=confirm)
    record = StackRecord(stack_name=stack_name, stack_id=state.stack_id, region=target.region,
                         outputs=state.outputs, parameters=state.parameters, endpoint_url=target.endpoint_url,
                         status=state.status)
    record.save(records)
    return state, record


def built_artifacts(template_path: Path | None, *, progress: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Build (or reuse) the template's artifacts with ``seglog build``; each function's zip, by logical id."""
    return artifacts_of(Builder(template_path, progress=progress).build())


def artifacts_of(manifest: Manifest) -> dict[str, Path]:
    """Each function's zip in an earlier build, by logical id.

    Raises:
        DeployError: the build is a twin for another architecture (``seglog build --arch``), not what the
            template's Architectures say, or an artifact's zip is gone.
    """
    if manifest.arch is not None:
        raise DeployError(f"that build was made with --arch {manifest.arch} (a twin for running locally): deploy a "
                          "build made without --arch, for each function's own Architectures")
    zips = {name: manifest.artifact_of(name).zip for name in manifest.functions}
    missing = sorted({str(z) for z in zips.values() if not z.is_file()})
    if missing:
        raise DeployError(f"the build's zip {missing[0]} is gone: run `seglog build` again")
    return zips


def destroy(target: Target, *, stack_name: str, on_event: Callable[[StackEvent], None] | None = None,
            records: Path | None = None) -> list[Leftover]:
    """Delete the stack; return what stays (DeletionPolicy Retain resources, Lambda's log groups).

    Raises:
        StackNotFoundError: no such stack in the target's account and region.
        StackFailedError: the delete failed.
    """
    deployer = ChangeSetDeployer(target, on_event=on_event)
    existing = deployer.describe(stack_name)
    if existing is None:
        StackRecord.forget(stack_name, records)
        raise StackNotFoundError(stack_name, f"in region {target.region}")
    kept = leftovers(target, existing["StackId"])
    deployer.delete(stack_name)
    StackRecord.forget(stack_name, records)
    return kept
