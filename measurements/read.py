"""Validating readers of measured files: a damaged file raises `MeasurementFileError` naming it, so no
lecture charts a wrong number without a word.

`read_rows(path, schema)` (and `read_frame`, the same as a pandas DataFrame) checks, in this order:
the file exists and is not empty; its bytes match the `sha256` and `bytes` its provenance sidecar
records, and its row count the sidecar's `rows` (measurements.provenance records all three); it is
UTF-8 CSV whose header has every column the schema requires; every row has as many fields as the
header (a file cut mid-row fails here), and there is at least one row; and every time the schema names
(`measurements.schemas`) is a finite number above zero where it is given. `read_json` checks a JSON
measurement's sidecar and that it is an object. Legacy sidecars without a checksum are read without
that check.

>>> import tempfile, os
>>> from measurements.schemas import Schema
>>> folder = tempfile.mkdtemp(); path = os.path.join(folder, "t.csv")
>>> _ = open(path, "w").write("kernel,median_ms\\nfa2_tc,0\\n")
>>> read_rows(path, Schema("a test", ("kernel", "median_ms"), positive=("median_ms",)))  # doctest: +ELLIPSIS
Traceback (most recent call last):
measurements.read.MeasurementFileError: .../t.csv, line 2: median_ms = '0' is not a finite time above 0 (a test)
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pandas as pd

from simlib.measured_files import DamagedMeasurement, checked_bytes

from .manifest import json_object, sidecar_of
from .schemas import Schema


class MeasurementFileError(DamagedMeasurement):
    """A measurement file that is damaged or not its writer's schema; the message names the file."""


def read_provenance(path) -> dict:
    """The sidecar of the measurement file at `path` (F.provenance.json or <stem>.provenance.json)."""
    side = sidecar_of(Path(path))
    if side is None:
        raise FileNotFoundError(f"{path}: no provenance sidecar beside it")
    return json_object(side, side.read_bytes(), MeasurementFileError)


def _checked_bytes(path) -> tuple[bytes, dict]:
    """The file's bytes, checked against its own sidecar's sha256 and size (if it records them)."""
    if hasattr(path, "read"):  # an open file or io.StringIO (a doctest's table): no sidecar to check
        text = path.read()
        return (text.encode() if isinstance(text, str) else text), {}
    return checked_bytes(path, MeasurementFileError)  # the one check, simlib's (simlib.measured_files)


def _bad_time(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return True
    return not (math.isfinite(value) and value > 0)


def read_rows(path, schema: Schema) -> list[dict[str, str]]:
    """The rows of the CSV at `path` as dicts of strings, checked against `schema` (module docstring)."""
    data, record = _checked_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MeasurementFileError(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        table = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise MeasurementFileError(f"{path}: not CSV ({e})") from None
    header, body = table[0], [r for r in table[1:] if r]
    missing = [c for c in schema.required if c not in header]
    if missing:
        raise MeasurementFileError(
            f"{path}: missing column(s) {', '.join(missing)} (its writer's columns: {', '.join(schema.required)})"
        )
    for line, fields in enumerate(table[1:], start=2):
        if fields and len(fields) != len(header):
            raise MeasurementFileError(
                f"{path}, line {line}: {len(fields)} fields, the header has {len(header)}: cut off or damaged"
            )
    if not body:
        raise MeasurementFileError(f"{path}: a header and no rows ({schema.name})")
    if "rows" in record and record["rows"] != len(body):
        raise MeasurementFileError(f"{path}: {len(body)} rows, its sidecar says {record['rows']}: cut off?")
    rows = [dict(zip(header, fields)) for fields in body]
    for line, row in enumerate(rows, start=2):
        checks = [c for c in schema.positive if c in row]
        if schema.positive_metrics and row.get("metric") in schema.positive_metrics:
            checks.append("value")
        for column in checks:
            if row[column].strip() and _bad_time(row[column]):
                raise MeasurementFileError(
                    f"{path}, line {line}: {column} = {row[column]!r} is not a finite time above 0 ({schema.name})"
                    if column != "value"
                    else f"{path}, line {line}: {row['metric']} = {row[column]!r} is not a finite number "
                    f"above 0 ({schema.name})"
                )
    return rows


def read_frame(path, schema: Schema) -> pd.DataFrame:
    """`read_rows`'s checks, then the file as pandas reads it (its own type inference)."""
    if hasattr(path, "read"):
        path = io.BytesIO(_checked_bytes(path)[0])
        read_rows(path, schema)
        path.seek(0)
        return pd.read_csv(path)
    read_rows(path, schema)
    return pd.read_csv(path)


def read_json(path) -> dict:
    """A JSON measurement (ceilings, CUDA context), checked against its sidecar; an object."""
    return json_object(path, _checked_bytes(path)[0], MeasurementFileError)


def keys_of(value: dict, path, *keys: str):
    """value[k1][k2]...; MeasurementFileError naming the file and the missing key otherwise."""
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            raise MeasurementFileError(f"{path}: no {'.'.join(keys[: depth + 1])!r} in it")
        value = value[key]
    return value
