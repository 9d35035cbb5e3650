"""The state folder holds people's memories, their conversations and the signing secret:
only the account that runs chatmemory may read it.

Every command that opens the folder checks it first: the folder is made 0700 and every file
in it 0600 (what was looser is fixed, and said), and the process creates what it writes
later (the database's journal, the change events) private from the start. A folder that
cannot be made private — another account owns it — is refused, never used as it is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

FOLDER_MODE: Final = 0o700
FILE_MODE: Final = 0o600
#: what a new file or folder of this process may never grant anyone but its owner
PRIVATE_UMASK: Final = 0o077


class StateFolderExposed(Exception):
    """The state folder, or a file in it, cannot be made private."""


def make_private(state_dir: Path) -> list[str]:
    """Make the folder 0700 and everything in it 0600 (folders 0700), creating the folder
    if it is missing; what was looser, as "path (was 0644)". StateFolderExposed when one
    of them belongs to another account or cannot be changed."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    fixed: list[str] = []
    for path in [state_dir, *sorted(state_dir.rglob("*"))]:
        if path.is_symlink():
            continue  # a link's own mode means nothing; what it points at is not ours to change
        info = path.stat()
        wanted = FOLDER_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE
        mode = stat.S_IMODE(info.st_mode)
        if mode & ~wanted == 0:
            continue
        if info.st_uid != os.getuid():
            raise StateFolderExposed(
                f"{path} belongs to another account and others may read it "
                f"({mode:04o}); use a state folder of your own (--state-dir)"
            )
        try:
            path.chmod(mode & wanted)
        except OSError as exc:
            raise StateFolderExposed(
                f"{path} is readable by others ({mode:04o}) and cannot be made private: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None
        fixed.append(f"{path} (was {mode:04o})")
    return fixed


def born_private() -> None:
    """From now on, what this process creates is its owner's alone."""
    os.umask(PRIVATE_UMASK)
