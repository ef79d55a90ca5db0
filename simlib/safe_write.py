"""Writing output files safely: check the destination before any work, then write atomically.

`check_destination` refuses, in one line naming the parameter, a path that is empty, a directory,
under a missing folder or under a file, or in a folder that cannot be written. `write_atomic`
writes a temporary file beside the destination, gives it mode 0644, and renames it over the
destination; on any failure (or Ctrl-C) the temporary file is removed and the destination is left
as it was.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "out.csv")
>>> write_atomic(path, "a,b\\n1,2\\n")
>>> open(path).read(), oct(os.stat(path).st_mode & 0o777), sorted(os.listdir(folder))
('a,b\\n1,2\\n', '0o644', ['out.csv'])
"""

from __future__ import annotations

import os
import sys
import tempfile

FILE_MODE = 0o644


def check_destination(path: str, name: str = "csv") -> None:
    """ValueError naming `name` unless `path` can be created or replaced as a regular file."""
    if not path:
        raise ValueError(f"{name}: the output path is empty")
    if os.path.isdir(path):
        raise ValueError(f"{name}: {path!r} is a directory, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(folder):
        raise ValueError(f"{name}: the folder of {path!r} does not exist")
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: {path!r} lies under a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: the folder of {path!r} is not writable")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{name}: {path!r} exists and is not a regular file")


def stdout_closed_message() -> str | None:
    """The one line a CLI prints (on stderr, exit 1) when it was started with stdout closed (`>&-`):
    Python then sets sys.stdout to None, print() drops every line silently and a flush raises."""
    if sys.stdout is None:
        return "error: standard output is closed (redirect it to a file or /dev/null instead)"
    return None


def write_atomic(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder (mode 0644, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
