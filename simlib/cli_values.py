"""The value parsers of both CLIs (`python -m simlib` and `python -m gpu_kernels`): exact, bounded
integers, finite floats, sizes, ROWSxCOLS pairs, file-name tags and preset keys.

Each returns an argparse `type` whose error becomes one line, "argument --flag: ...", exit 2. Numbers
are ASCII only: Python's int() and float() also take '1_6' (16), '١٦' (Arabic-Indic digits), ' 16 ',
'nan' and 'inf'; here a digit is 0-9, an integer has at most 20 of them, and a float is finite.

>>> int_type("--seq-len", 2**40, many=True)("256:2048")
[256, 512, 1024, 2048]
>>> pair_type("--threads", many=False)("32x8"), size_type("--sram", many=False)("192KiB")
((32, 8), 196608)
>>> float_type("--time-s", minimum=0)("1.5e-3"), nonnegative_int("0")
(0.0015, 0)
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from . import presets
from .units import parse_size

_INT_RE = re.compile(r"[0-9]{1,20}", re.ASCII)
_FLOAT_RE = re.compile(
    r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?", re.ASCII
)
_TAG_RE = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)


class NoLoneDashValue(argparse.ArgumentParser):
    """A parser base that refuses "--" as an option's value: argparse drops a lone "--" there
    ("--reserve=--") and would hand the command an empty list, neither converted nor checked
    against the choices. It becomes the usual one-line error naming the flag."""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            raise argparse.ArgumentError(action, "expected a value, got '--'")
        return super()._get_values(action, arg_strings)  # type: ignore[misc]


def positive_int(text: str, name: str = "value", maximum: int | None = None) -> int:
    """An integer ≥ 1 written in ASCII digits (at most 20), at most `maximum`."""
    if not _INT_RE.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    value = int(text.strip())
    if value < 1 or (maximum is not None and value > maximum):
        limit = f"from 1 to {maximum:,}" if maximum is not None else "≥ 1"
        raise argparse.ArgumentTypeError(f"must be an integer {limit}, got {text!r}")
    return value


def nonnegative_int(text: str, name: str = "value", maximum: int | None = None) -> int:
    """An integer ≥ 0 in ASCII digits (a seed, a count of busy processes), at most `maximum`."""
    if not _INT_RE.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a non-negative integer: {text!r}")
    value = int(text.strip())
    if maximum is not None and value > maximum:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {maximum:,}, got {text!r}")
    return value


def parse_float(
    text: str,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> float:
    """A finite decimal number in ASCII ('0.5', '1e-3', '-2'), ≥ `minimum`, > `above`, ≤ `maximum`."""
    if not isinstance(text, str) or not _FLOAT_RE.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    value = float(text.strip())
    if value != value or value in (float("inf"), float("-inf")):  # 1e999 overflows to inf
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    for limit, rule, bad in (
        (minimum, "≥", lambda x, m: x < m),
        (above, ">", lambda x, m: x <= m),
        (maximum, "≤", lambda x, m: x > m),
    ):
        if limit is not None and bad(value, limit):
            raise argparse.ArgumentTypeError(f"must be a number {rule} {limit:g}, got {text!r}")
    return value


def float_type(
    name: str, minimum: float | None = None, maximum: float | None = None, above: float | None = None
) -> Callable[[str], float]:
    """argparse type: a finite float within the bounds (`above`: strictly greater)."""

    def parse(text: str) -> float:
        return parse_float(text, minimum=minimum, maximum=maximum, above=above)

    return parse


def tag_type(name: str) -> Callable[[str], str]:
    """argparse type: a file-name tag, 1-64 of letters, digits, '_' and '-' (no '/', '..' or '')."""

    def parse(text: str) -> str:
        if not _TAG_RE.fullmatch(text):
            raise argparse.ArgumentTypeError(
                f"a file-name tag is 1-64 letters, digits, '_' or '-', got {text!r}"
            )
        return text

    return parse


def int_type(name: str, maximum: int | None, many: bool) -> Callable[[str], Any]:
    """argparse type: one positive int, or (many) '64', '256,1024' or '256:4096' (doubling)."""

    def one(text: str) -> int:
        return positive_int(text, name, maximum)

    def several(text: str) -> list[int]:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 2:
                raise argparse.ArgumentTypeError(f"range {text!r} must be START:STOP")
            start, stop = one(parts[0]), one(parts[1])
            if stop < start:
                raise argparse.ArgumentTypeError(f"range {text!r} needs START ≤ STOP")
            values = []
            while start <= stop:
                values.append(start)
                start *= 2
            return values
        return [one(part) for part in text.split(",")]

    return several if many else one


def size_type(name: str, many: bool) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            if many:
                return [parse_size(part, name) for part in text.split(",")]
            return parse_size(text, name)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def pair_type(name: str, many: bool) -> Callable[[str], Any]:
    def one(text: str) -> tuple[int, int]:
        parts = text.lower().split("x")
        if len(parts) != 2:
            raise argparse.ArgumentTypeError(f"expected ROWSxCOLS such as 32x8, got {text!r}")
        return positive_int(parts[0], name, 1024), positive_int(parts[1], name, 1024)

    return (lambda text: [one(part) for part in text.split(",")]) if many else one


def key_type(folder: str) -> Callable[[str], str]:
    """A preset key of data/<folder>, looked up by key only (no paths): the valid keys are listed otherwise."""

    def parse(text: str) -> str:
        try:
            return presets.checked_key(folder, text, "the preset key")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse
