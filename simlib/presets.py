"""JSON presets under data/: one file per key (hardware in data/hardware, models in data/models)."""
import json
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def keys(folder):
    """The preset keys in data/<folder>, sorted: the file names without .json."""
    return sorted(p.stem for p in (DATA_DIR / folder).glob("*.json"))


def read(folder, key, parameter):
    """The parsed data/<folder>/<key>.json; ValueError naming `parameter` and the valid keys if absent."""
    path = DATA_DIR / folder / f"{key}.json"
    if not path.is_file():
        raise ValueError(f"{parameter} must be one of {', '.join(keys(folder))}, got {key!r}")
    return json.loads(path.read_text())
