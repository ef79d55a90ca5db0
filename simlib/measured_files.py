"""The measured files the model itself reads (the energy and unit calibrations, the committed runs the
cost model is checked against), checked before a number is taken from them: the bytes against the
sha256 and size their own provenance sidecar (F.provenance.json) records, the CSV's row count against
its `rows`, and every row as long as the header. A damaged file raises `DamagedMeasurement` naming it,
so a calibration cut at a row boundary is refused instead of averaged. measurements.read (the lectures'
readers) builds on the same check; simlib cannot import that package (it sits below it).

>>> import json, os, tempfile
>>> folder = tempfile.mkdtemp(); path = os.path.join(folder, "t.csv")
>>> _ = open(path, "w").write("bench,watts\\nidle,80\\ncopy,400\\n")
>>> _ = open(path + ".provenance.json", "w").write(json.dumps({"rows": 3}))
>>> csv_rows(path)  # doctest: +ELLIPSIS
Traceback (most recent call last):
simlib.measured_files.DamagedMeasurement: .../t.csv: 2 rows, its sidecar says 3
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

SIDECAR = ".provenance.json"


class DamagedMeasurement(ValueError):
    """A measured file that is damaged or does not match its provenance sidecar; the message names it."""


def json_object(path, data: bytes, error: type[ValueError] = DamagedMeasurement) -> dict:
    """The JSON object in `data` (the bytes of `path`); `error` naming the file if it is not UTF-8 JSON
    or not an object (a list, null, a string)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise error(f"{path}: not JSON ({e})") from None
    if not isinstance(value, dict):
        raise error(f"{path}: a JSON {type(value).__name__}, not an object")
    return value


def own_sidecar(path, error: type[ValueError] = DamagedMeasurement) -> dict:
    """The JSON object in F.provenance.json beside `path` ({} if there is none)."""
    side = Path(str(path) + SIDECAR)
    return json_object(side, side.read_bytes(), error) if side.is_file() else {}


def checked_bytes(path, error: type[ValueError] = DamagedMeasurement) -> tuple[bytes, dict]:
    """The file's bytes, checked against its own sidecar's sha256 and size (where it records them)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise error(f"{path}: cannot be read ({e.strerror or e})") from None
    if not data:
        raise error(f"{path}: empty file")
    record = own_sidecar(path, error)
    if "sha256" in record and record["sha256"] != hashlib.sha256(data).hexdigest():
        raise error(
            f"{path}: sha256 differs from its sidecar's ({len(data)} bytes"
            + (f", the sidecar says {record['bytes']}" if "bytes" in record else "")
            + "): changed or cut after its run"
        )
    if "bytes" in record and record["bytes"] != len(data):
        raise error(f"{path}: {len(data)} bytes, its sidecar says {record['bytes']}")
    return data, record


def csv_rows(path) -> list[dict[str, str]]:
    """The rows of a measured CSV as dicts of strings, after `checked_bytes`, with the row count its
    sidecar records and every row as long as the header."""
    data, record = checked_bytes(path)
    try:
        table = [r for r in csv.reader(io.StringIO(data.decode("utf-8"), newline="")) if r]
    except (UnicodeDecodeError, csv.Error) as e:
        raise DamagedMeasurement(f"{path}: not UTF-8 CSV ({e})") from None
    header, body = table[0], table[1:]
    if "rows" in record and record["rows"] != len(body):
        raise DamagedMeasurement(f"{path}: {len(body)} rows, its sidecar says {record['rows']}")
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise DamagedMeasurement(f"{path}, line {line}: {len(row)} fields, the header has {len(header)}")
    return [dict(zip(header, row)) for row in body]


def json_file(path):
    """A measured JSON file's content, after `checked_bytes`."""
    data, _ = checked_bytes(path)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DamagedMeasurement(f"{path}: not JSON ({e})") from None
