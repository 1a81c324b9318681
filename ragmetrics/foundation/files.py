"""Writing a file whole: a temporary file beside the target, replacing it only once written."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path beside ``path`` (same suffixes) to write to; it replaces ``path`` only once written whole,
    so a failure (a full disk) leaves what was there before. A path that is not a regular file (a pipe, a device)
    is written directly."""
    target = Path(path)
    if target.exists() and not target.is_file():
        yield str(path)
        return
    # made by this process alone (O_EXCL, a name no one can guess): a file or link planted beside the target is
    # never written through; the name keeps the target's suffixes, which say the format
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=".partial-", suffix=f"-{target.name}")
    os.close(handle)
    temporary = Path(name)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as a new file would be, not mkstemp's 0600
        yield str(temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
