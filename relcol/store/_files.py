"""File-system steps that keep published files whole: fsync, atomic writes and swaps,
checksums, staging folders published at the end, and probing that a folder is writable."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

#: The checksum file each committed ingest (and each study's materialised tables) carries.
CHECKSUMS = "_checksums.json"


def os_error(exc: BaseException) -> OSError | None:
    """``exc`` as the OSError behind it: itself, or a Polars/DuckDB error that wraps one
    (``… No space left on device (os error 28)``); None for any other error."""
    if isinstance(exc, OSError):
        return exc
    found = re.search(r"\(os error (\d+)\)", str(exc))
    if found is None:
        return None
    code = int(found.group(1))
    return OSError(code, os.strerror(code))


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make the names in ``path`` (renames, new files) durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot fsync a folder; nothing more to do there
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """fsync every file under ``root``, then every folder, deepest first, so that a power
    loss after a later rename cannot publish an empty or partial file."""
    folders = []
    for folder, _, files in os.walk(root):
        folders.append(Path(folder))
        for name in files:
            fsync_file(Path(folder) / name)
    for folder in reversed(folders):
        fsync_dir(folder)


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` beside ``path``, fsync it, rename it over ``path``: readers see the old
    file or the new one, never part of one; a failure leaves ``path`` as it was."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def write_checksums(folder: Path) -> None:
    """Record the SHA-256 of every file in ``folder`` (not recursive) in ``_checksums.json``."""
    files = {p.name: sha256(p) for p in sorted(folder.iterdir()) if p.is_file()}
    files.pop(CHECKSUMS, None)
    text = json.dumps({"sha256": files}, indent=1, sort_keys=True) + "\n"
    (folder / CHECKSUMS).write_text(text, encoding="utf-8")


def read_checksums(path: Path) -> dict[str, str]:
    """The ``{file name: sha256}`` recorded in a ``_checksums.json``; ValueError if unreadable."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        files = record["sha256"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"unreadable checksum file ({exc})") from None
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise ValueError("unreadable checksum file (not a map of file names to digests)")
    return files


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing folders in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so a
    reader finds one or the other at each name, never neither. False where the system or
    the file system cannot (the caller then falls back to two renames)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a))


def probe_writable(folder: Path) -> None:
    """Raise OSError unless a file can be created in ``folder`` (or, when it does not exist
    yet, in its nearest existing ancestor). Creating one is the only test that also holds
    for root, read-only mounts and immutable folders; the file is removed at once."""
    folder = _existing(Path(folder))
    name = folder / owned_name(".relcol-probe-")
    os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    os.unlink(name)


def owned_name(prefix: str) -> str:
    """``prefix``, a random token, then this host and process id: the name of a staging
    folder or probe file tells who made it, even when a crash left it half removed."""
    return f"{prefix}{secrets.token_hex(6)}@{socket.gethostname()}@{os.getpid()}"


def owner(path: Path) -> tuple[str, int] | None:
    """The host and process id in a name made by ``owned_name``; None for any other name."""
    parts = path.name.rsplit("@", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


def _existing(folder: Path) -> Path:
    """``folder`` or its nearest existing ancestor; NotADirectoryError if that is a file."""
    folder = folder.absolute()
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(folder))
    return folder


def staged_folder(target: Path) -> Path:
    """A new hidden folder to write into before publishing at ``target``: beside it, or in
    its nearest existing ancestor (the same file system; no folder is created on the way,
    so a failure leaves nothing behind). OSError where nothing can be written."""
    target = Path(target).absolute()
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(target))
    staged = _existing(target.parent) / f".{target.name}.{secrets.token_hex(4)}.partial"
    staged.mkdir()
    return staged


def publish_folder(staged: Path, target: Path) -> None:
    """Move every file of ``staged`` to the same place under ``target`` (each file by one
    rename over the old one; other files in ``target`` are kept), then remove ``staged``."""
    fsync_tree(staged)
    target.mkdir(parents=True, exist_ok=True)
    for folder, _, files in os.walk(staged):
        destination = target / Path(folder).relative_to(staged)
        destination.mkdir(exist_ok=True)
        for name in files:
            os.replace(Path(folder) / name, destination / name)
        fsync_dir(destination)
    shutil.rmtree(staged, ignore_errors=True)
