"""Which code each function runs in the emulator: the unpacked artifact ``seglog build`` made for this machine's
architecture (the x86_64 twin of an arm64 function on an x86_64 host), never the source tree (DESIGN §10.1).

An emulator run names its code with one path (``EmulatorSettings.artifact``, ``--artifact``):

- a build manifest (``.seglog/build/manifest.x86_64.json``): each function runs its own artifact;
- an artifact directory (holding ``code/``) or an unpacked tree (``.aws-sam/build/ApiFunction``): every function
  runs it, as functions sharing a CodeUri share one artifact.

With none, :func:`host_artifact` builds the host twin on first use (cached: an unchanged tree is reused).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import structlog

from seglog_deploy.build import Builder, host_arch
from seglog_deploy.manifest import Manifest
from seglog_emulator.errors import EmulatorError

log = structlog.get_logger("seglog.emulator.artifacts")


def host_artifact(template: Path | None = None, progress: Callable[[str], None] | None = None) -> Path:
    """Build (or reuse) every function's artifact for this machine's architecture; the manifest's path."""
    builder = Builder(template, arch=host_arch(),
                      progress=progress or (lambda line: log.info("build", line=line.strip())))
    builder.build()
    return builder.manifest_path


def code_dirs(artifact: Path, function: str) -> list[Path]:
    """The directories ``function``'s workers import from (see the module docstring for what ``artifact`` may be).

    Raises:
        EmulatorError: the manifest has no such function, or its artifact was built for another architecture
            (its binaries would not load here).
    """
    if artifact.is_file():
        manifest = Manifest.read(artifact)
        try:
            record = manifest.artifact_of(function)
        except KeyError as exc:
            raise EmulatorError(str(exc.args[0])) from None
        if record.arch != host_arch():
            raise EmulatorError(f"{artifact}: {function} was built for {record.arch} and this machine runs "
                                f"{host_arch()}: build its twin with `seglog build --arch {host_arch()}`")
        return [record.code]
    if (artifact / "code").is_dir():
        return [artifact / "code"]
    if not artifact.is_dir():
        raise EmulatorError(f"--artifact {artifact}: no such build manifest or directory; run `seglog build`")
    return [artifact]
