"""An artifact's file tree made reproducible, and its zip: what varies between two installs of the same inputs
is removed or fixed (install records naming temporary paths, script shebangs, times, modes, entry order), so an
unchanged workspace rebuilds to the same bytes.

Lambda needs its code world-readable: 644 for files and 755 for directories of an interpreted runtime (AWS
Knowledge Center, lambda-deployment-package-errors), which is what every entry gets here.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

#: 1980-01-01 00:00:00 UTC: the earliest time a zip entry can carry, given to every file and entry.
FIXED_TIME: Final = 315532800
ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)
FILE_MODE: Final = 0o644
DIR_MODE: Final = 0o755
#: Per-install records uv writes into a .dist-info: the wheel's temporary path, the time of the install.
INSTALL_RECORDS: Final = ("direct_url.json", "uv_cache.json")
#: ELF e_machine values (System V ABI, "ELF Header") of the machines Lambda runs, and their neighbours.
ELF_MACHINES: Final = {3: "i386", 40: "arm", 62: "x86_64", 183: "aarch64"}


def strip_install_records(code: Path) -> None:
    """Remove what an install leaves that differs from one install to the next or is never run on Lambda.

    ``bin/`` holds console scripts whose shebang names the build machine's Python; ``direct_url.json`` names
    the temporary wheel path and ``uv_cache.json`` a timestamp. Each dist-info's RECORD loses their lines, so
    the installed-files list stays true. Bytecode caches go too (they are compiled afresh, reproducibly).
    """
    removed: set[str] = set()
    scripts = code / "bin"
    if scripts.is_dir():
        removed |= {path.relative_to(code).as_posix() for path in scripts.rglob("*") if path.is_file()}
        shutil.rmtree(scripts)
    for info in code.glob("*.dist-info"):
        for name in INSTALL_RECORDS:
            record = info / name
            if record.exists():
                removed.add(record.relative_to(code).as_posix())
                record.unlink()
    for info in code.glob("*.dist-info"):
        record = info / "RECORD"
        if record.is_file():
            lines = record.read_text().splitlines()
            # A RECORD line is "path,hash,size"; paths holding commas are quoted (PEP 376), ours never are.
            kept = [line for line in lines if line.split(",", 1)[0] not in removed]
            record.write_text("".join(f"{line}\n" for line in kept))
    for cache in sorted(code.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache)


def normalize(code: Path) -> None:
    """Fixed modes (644 files, 755 directories) and times on every entry of the tree."""
    for path in [*walk(code, directories=True), code]:
        os.chmod(path, DIR_MODE if path.is_dir() else FILE_MODE)
        os.utime(path, (FIXED_TIME, FIXED_TIME), follow_symlinks=False)


def walk(code: Path, *, directories: bool = False) -> Iterator[Path]:
    """Every file (and with ``directories``, every directory) under ``code``, sorted by relative path.

    Raises:
        ValueError: a symbolic link (a zip cannot carry one portably, and Lambda would not follow it out).
    """
    entries = []
    for root, dirs, names in os.walk(code):
        for name in [*names, *dirs]:
            path = Path(root, name)
            if path.is_symlink():
                raise ValueError(f"{path} is a symbolic link: an artifact holds plain files only")
            if directories or path.is_file():
                entries.append(path)
    yield from sorted(entries, key=lambda p: p.relative_to(code).as_posix())


def write_zip(code: Path, destination: Path) -> None:
    """Zip ``code``'s files in sorted order with fixed times and modes: the same tree gives the same bytes."""
    with zipfile.ZipFile(destination, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in walk(code):
            entry = zipfile.ZipInfo(path.relative_to(code).as_posix(), date_time=ZIP_TIME)
            entry.create_system = 3  # Unix, so external_attr's mode bits are read as such
            entry.external_attr = (stat.S_IFREG | FILE_MODE) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as source, archive.open(entry, "w") as target:
                shutil.copyfileobj(source, target, 1 << 20)


def unzipped_size(code: Path) -> int:
    """Bytes of every file: what Lambda counts against the unzipped limit."""
    return sum(path.stat().st_size for path in walk(code))


def machines(code: Path) -> dict[str, list[str]]:
    """The ELF binaries under ``code`` by machine (e_machine read from each file's ELF header)."""
    found: dict[str, list[str]] = {}
    for path in walk(code):
        with path.open("rb") as f:
            header = f.read(20)
        if len(header) < 20 or header[:4] != b"\x7fELF":
            continue
        little = header[5] == 1
        number = int.from_bytes(header[18:20], "little" if little else "big")
        name = ELF_MACHINES.get(number, f"e_machine {number}")
        found.setdefault(name, []).append(path.relative_to(code).as_posix())
    return found


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def code_sha256(hex_digest: str) -> str:
    """Lambda's CodeSha256 of a zip (GetFunction, "CodeSha256": the base64 of its SHA-256), to compare with a
    deployed function's."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode()


def tree_digest(code: Path) -> str:
    """One SHA-256 over every file's relative path and content: two trees are the same file for file when their
    digests are (modes and times are left out: a copy made by another tool keeps neither)."""
    digest = hashlib.sha256()
    for path in walk(code):
        digest.update(path.relative_to(code).as_posix().encode() + b"\0")
        digest.update(sha256(path).encode() + b"\n")
    return digest.hexdigest()
