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


def keys(folder: str) -> list[str]:
    """The preset keys in data/<folder>, sorted: the file names without .json."""
    return sorted(p.stem for p in (DATA_DIR / folder).glob("*.json"))


def read(folder: str, key: object, parameter: str) -> dict[str, Any]:
    """The parsed data/<folder>/<key>.json; ValueError naming `parameter` and the valid keys if
    `key` is not one of them."""
    valid = keys(folder)
    if not isinstance(key, str) or key not in valid:
        raise ValueError(f"{parameter} must be one of {', '.join(valid)}, got {key!r}")
    data: dict[str, Any] = json.loads((DATA_DIR / folder / f"{key}.json").read_text())
    return data
