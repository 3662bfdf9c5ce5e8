"""The deployed code as bytes on this machine: a function's zip fetched from Lambda (GetFunction's Code.Location)
and unpacked, ready to run here with an isolated path.

The artifact is built for the function's architecture (arm64): its native extensions are for aarch64. On a host
of another machine those few files cannot load, so the packages holding them are left out of the unpacked copy
and the host's install of the same pinned versions fills in (the project's own code and every pure-Python
dependency still come from the deployed bytes).
"""

from __future__ import annotations

import io
import platform
import shutil
import urllib.request
import zipfile
from pathlib import Path

#: ELF e_machine values (System V ABI): what a shared object was compiled for.
ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64"}


def elf_machine(path: Path) -> str | None:
    """The machine an ELF file is for, or None when ``path`` is not an ELF file."""
    with open(path, "rb") as handle:
        header = handle.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    return ELF_MACHINES.get(int.from_bytes(header[18:20], "little"), "other")


def fetch_deployed_code(lambda_client: object, function_name: str, into: Path) -> tuple[Path, list[str]]:
    """Download the function's deployed zip and unpack it into ``into``; leave out the top-level packages with
    binaries for another machine than this one. Returns the tree and the packages left out."""
    location = lambda_client.get_function(FunctionName=function_name)["Code"]["Location"]  # type: ignore[attr-defined]
    with urllib.request.urlopen(location, timeout=60) as response:
        data = response.read()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(into)
    host = "aarch64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"
    foreign = {path.relative_to(into).parts[0] for path in into.rglob("*.so*")
               if path.is_file() and elf_machine(path) not in (None, host)}
    for top in foreign:
        shutil.rmtree(into / top)
        for info in into.glob(f"{top}-*.dist-info"):
            shutil.rmtree(info)
    return into, sorted(foreign)
