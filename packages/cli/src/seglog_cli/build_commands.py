"""seglog build: the functions' Lambda artifacts, and the options every command that runs them shares
(``--template``, ``--artifact``)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from seglog_cli.context import reports_errors
from seglog_deploy.build import Builder
from seglog_deploy.manifest import UNZIPPED_LIMIT, ZIPPED_LIMIT, ArtifactRecord, Manifest
from seglog_emulator.artifacts import host_artifact
from seglog_stack.local import DEFAULT_STACK_NAME

MB = 1024 * 1024

#: ``--template PATH``: the SAM template (template.yaml found from the working directory by default).
template_option = click.option(
    "--template", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The SAM template (default: template.yaml of the repository the command runs in).")


#: ``--stack-name NAME``: the local stack name physical names derive from (``NAME-LogicalId``, as CloudFormation).
stack_name_option = click.option(
    "--stack-name", default=DEFAULT_STACK_NAME, show_default=True, metavar="NAME",
    help="The local stack's name: resources the template does not name explicitly are named NAME-LogicalId.")

#: ``--parameter KEY=VALUE``: template parameter overrides, repeatable.
parameter_option = click.option("--parameter", "parameters", multiple=True, metavar="KEY=VALUE",
                                help="Override a template parameter (repeatable).")


def parse_parameters(values: tuple[str, ...]) -> dict[str, Any]:
    """``Key=Value`` template parameter overrides (as ``sam deploy --parameter-overrides``)."""
    parameters: dict[str, Any] = {}
    for value in values:
        key, sep, raw = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r}: expected Key=Value, e.g. SnapshotWorkerTimeout=10",
                                     param_hint="--parameter")
        parameters[key] = int(raw) if raw.lstrip("-").isdigit() else raw
    return parameters


def artifact_option[F: Callable[..., Any]](func: F) -> F:
    """``--artifact PATH``: the code the emulated functions run instead of this machine's fresh build."""
    return click.option(
        "--artifact", type=click.Path(exists=True, path_type=Path),
        help="Run this code: a build manifest, an artifact directory or an unpacked tree (.aws-sam/build/X). "
             "Default: `seglog build --arch <this machine>` (cached).")(func)


def progress_line(line: str) -> None:
    click.echo(f"[build] {line}", err=True)


def emulated_artifact(artifact: Path | None, template: Path | None) -> Path:
    """``artifact`` as given, or this machine's twin of the template's artifacts, built (or reused) now with
    progress on standard error."""
    return artifact if artifact is not None else host_artifact(template, progress=progress_line)


def size_lines(manifest: Manifest) -> list[str]:
    """One line per function: its artifact's sizes against Lambda's limits, machine and hash."""
    width = max(len(name) for name in manifest.functions)
    lines = []
    for name, function in manifest.functions.items():
        record = manifest.artifacts[function.artifact]
        lines.append(f"{name:<{width}}  {record.arch:<6}  {_mb(record.zipped_bytes)} zipped (limit "
                     f"{ZIPPED_LIMIT // MB} MB)  {_mb(record.unzipped_bytes)} unzipped (limit "
                     f"{UNZIPPED_LIMIT // MB} MB)  {_machines(record)}  sha256 {record.zip_sha256[:12]}")
    return lines


def _mb(size: int) -> str:
    return f"{size / MB:5.1f} MB"


def _machines(record: ArtifactRecord) -> str:
    return ", ".join(f"{count} {machine} binar{'y' if count == 1 else 'ies'}"
                     for machine, count in record.machines.items()) or "no binaries"


@click.command()
@click.option("--arch", type=click.Choice(["arm64", "x86_64"]),
              help="Build every function for this architecture (default: each function's Architectures).")
@template_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Build directory (default: .seglog/build beside the template).")
@click.option("--json", "as_json", is_flag=True, help="Print the build manifest as JSON.")
@click.option("--no-bytecode", is_flag=True, help="Ship no precompiled .pyc files (cold starts compile them).")
@click.option("--function", "function", metavar="LOGICAL_ID",
              help="With --into: copy this function's unpacked artifact there (what sam build's Makefile runs).")
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), help="See --function.")
@reports_errors
def build(arch: str | None, template: Path | None, out: Path | None, as_json: bool, no_bytecode: bool,
          function: str | None, into: Path | None) -> None:
    """Build the template's Lambda artifacts: each function's package with its runtime dependencies only, for
    its Runtime and Architectures, reproducibly (an unchanged tree gives the same bytes, and is reused).

    Prints each function's zipped and unzipped size against Lambda's limits and the machine of its binaries.
    """
    if (function is None) != (into is None):
        raise click.UsageError("--function and --into go together")
    builder = Builder(template, out=out, arch=arch, bytecode=not no_bytecode, progress=progress_line)
    manifest = builder.build()
    if function is not None and into is not None:
        try:
            record = manifest.artifact_of(function)
        except KeyError as exc:
            raise click.ClickException(str(exc.args[0])) from None
        shutil.copytree(record.code, into, dirs_exist_ok=True)
        progress_line(f"{function}: copied {record.code} into {into}")
    if as_json:
        sys.stdout.write(manifest.encode().decode())
        return
    for line in size_lines(manifest):
        click.echo(line)
    click.echo(f"manifest: {builder.manifest_path}")
