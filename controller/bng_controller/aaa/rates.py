"""Subscriber rates carried in Filter-Id, the accel-ppp shaper convention.

accel-ppp (`accel-pppd/shaper/shaper.c`, `parse_string_simple`) reads the
rate of a session from Filter-Id (its default `attr=Filter-Id`), in kbit/s:

- `"<rate>"`: the same rate both ways, e.g. `Filter-Id = "10000"`;
- `"<down>/<up>"`: downstream (to the subscriber) first, then upstream;
  `\\` and `:` are accepted as separators too, e.g. `"100000/20000"`;
- each number may carry a unit suffix, case-insensitive: `K` (kbit/s, the
  default), `M` (Mbit/s), `G` (Gbit/s), `B` (bit/s);
- an optional `"<time-range-id>,"` prefix selects one of accel-ppp's
  time-of-day ranges.

We follow that, except that time ranges are not supported: a value with a
non-zero range id is ignored (range 0, or none, is the always-on rate), and
`G` means 10^6 kbit/s (accel-ppp's table says 10^7, which looks like a
slip). Anything else in Filter-Id (a named filter) is not a rate and is
ignored here. The same operators' RADIUS setups then work against both
BNGs, and no vendor dictionary is needed.
"""
from __future__ import annotations

import re

_UNIT_BPS = {"": 1000, "K": 1000, "M": 1_000_000, "G": 1_000_000_000, "B": 1}
_NUMBER = r"(\d+)\s*([KMGB]?)"
_RATE_RE = re.compile(
    rf"^\s*(?:(\d+)\s*,\s*)?{_NUMBER}(?:\s*[/\\:]\s*{_NUMBER})?\s*$", re.IGNORECASE)


def _kbps(number: str, unit: str) -> int:
    """Whole kbit/s, rounded up: a rate under 1 kbit/s ("500B") is 1, not
    0, which would mean no limit at all."""
    return -(-int(number) * _UNIT_BPS[unit.upper()] // 1000)


def parse_filter_id(value: str | bytes) -> tuple[int, int] | None:
    """`(down_kbps, up_kbps)` of an accel-ppp style Filter-Id, or None when
    the value is not a rate (or belongs to a time range we don't run)."""
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    m = _RATE_RE.match(value)
    if not m:
        return None
    time_range, down, down_unit, up, up_unit = m.groups()
    if time_range is not None and int(time_range) != 0:
        return None
    down_kbps = _kbps(down, down_unit)
    up_kbps = _kbps(up, up_unit) if up is not None else down_kbps
    return down_kbps, up_kbps


def format_filter_id(down_kbps: int, up_kbps: int) -> str:
    """The Filter-Id a RADIUS server would send for these rates."""
    return f"{down_kbps}/{up_kbps}"


def rates_from_filter_ids(values: list) -> tuple[int, int] | None:
    """The first Filter-Id that is a rate, as `(down_kbps, up_kbps)`."""
    for value in values:
        rates = parse_filter_id(value)
        if rates is not None:
            return rates
    return None
