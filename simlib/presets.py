"""JSON presets under data/: one file per key (hardware in data/hardware, models in data/models).

A preset is looked up by its key only (the file name without .json); anything else, a path
included, is refused with the list of valid keys.

>>> keys("hardware")[:2]
['a100-40gb', 'a100-80gb']
"""

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
#: The one default GPU: the card this project measures on (data/measurements/), the preset every
#: default that needs one uses.
DEFAULT_GPU = "h200"


def keys(folder: str) -> list[str]:
    """The preset keys in data/<folder>, sorted: the file names without .json."""
    return sorted(p.stem for p in (DATA_DIR / folder).glob("*.json"))


def checked_key(folder: str, key: object, parameter: str) -> str:
    """`key` if it is one of data/<folder>'s keys; ValueError naming `parameter` and the keys if not."""
    valid = keys(folder)
    if not isinstance(key, str) or key not in valid:
        raise ValueError(f"{parameter} must be one of {', '.join(valid)}, got {key!r}")
    return key


def read(folder: str, key: object, parameter: str) -> dict[str, Any]:
    """The parsed data/<folder>/<key>.json, for a key `checked_key` accepts."""
    path = DATA_DIR / folder / f"{checked_key(folder, key, parameter)}.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data
