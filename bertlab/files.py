"""Files written so that a crash never leaves half of one, and their sha256.

Every file bertlab keeps is written under a temporary name in the same folder, flushed to disk,
then renamed into place (`os.replace`, atomic): a crash leaves a hidden `.tmp-*` file or folder,
never a truncated file under the real name. Folders are built the same way, then `replace_dir`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """The sha256 of a file's bytes, as 64 hex digits."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def fsync_file(path: str | Path) -> None:
    """Flush a written file to disk (before it is renamed into place)."""
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def fsync_dir(path: str | Path) -> None:
    """Flush a folder's entries (a rename into it) to disk, where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path, fsync: bool = True) -> Iterator[Path]:
    """A temporary path beside `path` to write to: renamed to `path` (after an fsync) when the
    block ends without an error, else deleted."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}-{threading.get_ident()}")
    try:
        yield tmp
        if fsync:
            fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        fsync_dir(path.parent)


def write_bytes(path: str | Path, data: bytes, fsync: bool = True) -> None:
    """Write `data` to `path` atomically."""
    with atomic_path(path, fsync) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str, fsync: bool = True) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    write_bytes(path, text.encode("utf-8"), fsync)


def write_json(path: str | Path, obj: Any, indent: int | None = 2, fsync: bool = True) -> None:
    """Write `obj` as JSON (and a final newline) atomically."""
    write_text(path, json.dumps(obj, indent=indent, allow_nan=True) + "\n", fsync)


def replace_dir(tmp: Path, final: Path) -> None:
    """Move a finished temporary folder into place; one already there is moved aside, then deleted."""
    old = None
    if final.exists():
        old = final.with_name(f".old-{final.name}-{os.getpid()}")
        os.replace(final, old)
    os.replace(tmp, final)
    fsync_dir(final.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def remove_dir(path: Path) -> None:
    """Delete a folder so that it leaves listings at once: rename it to a hidden `.del-*` name, then
    delete that, so a crash mid-delete never leaves a half-deleted folder under its own name."""
    trash = path.with_name(f".del-{path.name}-{os.getpid()}")
    shutil.rmtree(trash, ignore_errors=True)
    try:
        os.replace(path, trash)
    except OSError:  # already gone (or cannot be moved): delete in place
        trash = path
    shutil.rmtree(trash, ignore_errors=True)


def remove_debris(parent: Path, name_pattern: str) -> None:
    """Delete the leftovers of other processes' interrupted writes and deletes: `.tmp-`, `.old-` and
    `.del-<name>-<pid>` folders whose name matches `name_pattern` (a regex)."""
    debris = re.compile(rf"^\.(?:tmp|old|del)-{name_pattern}-(\d+)$")
    for p in parent.iterdir() if parent.is_dir() else []:
        m = debris.match(p.name)
        if m and int(m.group(1)) != os.getpid():
            shutil.rmtree(p, ignore_errors=True)
