"""Writing output files safely, the one policy of every writer: check the destination before any work,
then write atomically.

`check_destination` refuses, in one line naming the parameter, a path that is empty, ends in a
separator (a folder name), is a directory, lies under a missing folder or under a file, sits in a
folder that cannot be written, or is one of the `inputs` the same command reads. A symlink is written
through: its target is the file that is checked and replaced, and the link stays a link. `write_atomic`
writes a temporary file of a name of its own beside the target, gives it mode 0644, and renames it over
the target; on any failure (or Ctrl-C) the temporary file is removed and the target is left as it was.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "out.csv")
>>> write_atomic(path, "a,b\\n1,2\\n")
>>> open(path).read(), oct(os.stat(path).st_mode & 0o777), sorted(os.listdir(folder))
('a,b\\n1,2\\n', '0o644', ['out.csv'])
>>> os.symlink(path, os.path.join(folder, "link.csv"))
>>> write_atomic(os.path.join(folder, "link.csv"), "a,b\\n3,4\\n")
>>> os.path.islink(os.path.join(folder, "link.csv")), open(path).read()
(True, 'a,b\\n3,4\\n')
>>> check_destination(path, "--out", inputs={"--profile": path})  # doctest: +ELLIPSIS
Traceback (most recent call last):
ValueError: --out: ... is the file that --profile reads; write the output elsewhere
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

FILE_MODE = 0o644


def target_of(path: str) -> str:
    """The file a write to `path` replaces: `path` itself, or the end of its chain of symlinks."""
    return os.path.realpath(path)


def check_destination(path: str, name: str = "csv", inputs: Mapping[str, str | None] | None = None) -> None:
    """ValueError naming `name` unless `path` (or the target of a symlink at `path`) can be created or
    replaced as a regular file and is none of `inputs` ({flag: path} of the files the command reads)."""
    if not path:
        raise ValueError(f"{name}: the output path is empty")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise ValueError(f"{name}: {path!r} ends in {path[-1]!r}: that names a folder, not a file")
    target = target_of(path)
    if os.path.isdir(target):
        raise ValueError(f"{name}: {path!r} is a directory, not a file")
    folder = os.path.dirname(target)
    if not os.path.exists(folder):
        raise ValueError(f"{name}: the folder of {path!r} does not exist")
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: {path!r} lies under a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: the folder of {path!r} is not writable")
    if os.path.exists(target) and not os.path.isfile(target):
        raise ValueError(f"{name}: {path!r} exists and is not a regular file")
    for flag, source in (inputs or {}).items():
        if source and os.path.exists(source) and target_of(source) == target:
            raise ValueError(f"{name}: {path!r} is the file that {flag} reads; write the output elsewhere")


def write_atomic(path: str, data: str | bytes) -> None:
    """Write `data` (text or bytes) to `path` (through a symlink to its target) via a temporary file of
    a unique name in the target's folder (mode 0644, then rename)."""
    target = target_of(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
