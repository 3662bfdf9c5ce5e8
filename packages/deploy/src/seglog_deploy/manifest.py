"""What a build made, for the emulator and the deploy command: each artifact (its zip, unpacked tree, sizes,
hashes, machine) and which function runs which artifact.

``seglog build`` writes it as ``manifest.json`` (or ``manifest.<arch>.json`` for ``--arch``) in the build
directory, and every artifact directory holds its own record as ``artifact.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import msgspec

#: Lambda quotas (AWS Lambda Developer Guide, gettingstarted-limits): "Deployment package (.zip file archive)
#: size: 50 MB (zipped, when uploaded through the Lambda API or SDKs) ... 250 MB (unzipped)". The unzipped limit
#: is 262,144,000 bytes (Lambda's own error message names that figure), so these are MiB.
ZIPPED_LIMIT: Final = 50 * 1024 * 1024
UNZIPPED_LIMIT: Final = 250 * 1024 * 1024
MANIFEST_FORMAT: Final = 1


class ArtifactRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One built artifact."""

    #: The hash of the build's inputs; also the artifact directory's name.
    key: str
    arch: str
    runtime: str
    #: The workspace package the CodeUri is, and the CodeUri as the template writes it.
    package: str
    code_uri: str
    #: The artifact directory (absolute): ``code/`` (the unpacked tree, what Lambda puts in /var/task) and
    #: ``function.zip``.
    path: str
    zip_sha256: str
    #: Lambda's CodeSha256 of the zip (base64 of the SHA-256), as GetFunction reports it once deployed.
    code_sha256: str
    zipped_bytes: int
    unzipped_bytes: int
    files: int
    #: ELF binaries in the tree, counted by machine ({"aarch64": 3}).
    machines: dict[str, int]
    #: Whether precompiled bytecode ships (``__pycache__`` with unchecked-hash .pyc files).
    bytecode: bool

    @property
    def code(self) -> Path:
        return Path(self.path) / "code"

    @property
    def zip(self) -> Path:
        return Path(self.path) / "function.zip"


class FunctionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One function of the template and the artifact it runs."""

    artifact: str
    handler: str
    runtime: str
    arch: str


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    """A build of a template: its artifacts by key and its functions by logical id."""

    template: str
    #: The ``--arch`` the build was asked for (None: each function's own Architectures).
    arch: str | None
    artifacts: dict[str, ArtifactRecord]
    functions: dict[str, FunctionRecord]
    format: int = MANIFEST_FORMAT

    def artifact_of(self, function: str) -> ArtifactRecord:
        """The artifact ``function`` runs.

        Raises:
            KeyError: the build has no such function.
        """
        record = self.functions.get(function)
        if record is None:
            raise KeyError(f"the build of {self.template} has no function {function!r} (it has "
                           f"{sorted(self.functions)}): rebuild with `seglog build`")
        return self.artifacts[record.artifact]

    def encode(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{id(self)}.tmp")  # processes may write it side by side
        tmp.write_bytes(self.encode())
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        return cls.decode(path.read_bytes())

    @classmethod
    def decode(cls, data: bytes) -> Manifest:
        return msgspec.json.decode(data, type=cls)


def read_record(path: Path) -> ArtifactRecord | None:
    """The ``artifact.json`` at ``path``, or None when it is missing or unreadable (then the artifact is rebuilt)."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=ArtifactRecord)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def write_record(record: ArtifactRecord, path: Path) -> None:
    path.write_bytes(msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n")
