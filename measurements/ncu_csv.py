"""Reading Nsight Compute's CSV output (``ncu --csv``, raw or details page): one parser for the
profiler (gpu_kernels.measure) and for the readers of recorded runs (l2_evidence, model_vs_ncu).

ncu prints '==PROF==' lines around the CSV, thousands separators in numbers, and may scale a value
to a larger unit (Kbyte, usecond): values are normalised to bytes and nanoseconds.
Worked number: "1,234" Kbyte is 1,234,000 bytes:

>>> text = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\\n"0","k","dram__bytes_read.sum","Kbyte","1,234"'
>>> parse_ncu_csv(text)[0]["metrics"]
{'dram__bytes_read.sum': (1234000, 'byte')}
"""

import csv
import io
from pathlib import Path

_SCALE = {
    "byte": 1,
    "kbyte": 1e3,
    "mbyte": 1e6,
    "gbyte": 1e9,
    "tbyte": 1e12,
    "nsecond": 1,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
}
_BASE_UNIT = {
    "byte": "byte",
    "kbyte": "byte",
    "mbyte": "byte",
    "gbyte": "byte",
    "tbyte": "byte",
    "nsecond": "nsecond",
    "usecond": "nsecond",
    "msecond": "nsecond",
    "second": "nsecond",
}


def to_number(text):
    """int or float of an ncu value ("1,234", "5.5"), None for empty, n/a or text."""
    t = (text or "").strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return int(t)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return None


def parse_ncu_csv(text: str) -> list[dict]:
    """ncu --csv output → [{"id", "name", "metrics": {metric: (value, unit)}}] in launch-ID order."""
    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    launches: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        try:
            lid = int(row["ID"])
        except (KeyError, TypeError, ValueError):
            continue
        entry = launches.setdefault(lid, {"id": lid, "name": row.get("Kernel Name", ""), "metrics": {}})
        metric = row.get("Metric Name", "")
        value = to_number(row.get("Metric Value"))
        unit = (row.get("Metric Unit") or "").strip()
        if unit.lower() in _SCALE and value is not None:
            value = value * _SCALE[unit.lower()]
            value = int(round(value)) if float(value).is_integer() else value
            unit = _BASE_UNIT[unit.lower()]
        if metric:
            entry["metrics"][metric] = (value, unit)
    return [launches[k] for k in sorted(launches)]


def ncu_table(path):
    """A recorded ncu CSV as a DataFrame: one row per launch ID, one column per metric (base units)."""
    import pandas as pd

    launches = parse_ncu_csv(Path(path).read_text())
    frame = pd.DataFrame(
        [{name: value for name, (value, _) in launch["metrics"].items()} for launch in launches],
        index=pd.Index([launch["id"] for launch in launches], name="ID"),
    )
    return frame.apply(pd.to_numeric, errors="coerce")
