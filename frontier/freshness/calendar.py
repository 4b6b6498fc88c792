"""Local days, day types and slots: how the Hash model reads a unix time (digest §2.4).

Posting follows the authors' daily life, so days start at local midnight (Weibo: UTC+8, the
default) and are cut into ``slots`` equal slots (24 hours by default; 96 quarter hours allowed).
Weekends post differently from workdays (1,496 messages on a Tuesday against 874 on a Sunday),
so each day has a *type*, and each type its own table: workday/weekend (the default), one table
for all days, or one per weekday. A holiday counts as a weekend day (a Sunday with one table per
weekday). A fixed offset, not a tz database zone: the paper's site has no daylight saving, and a
fixed offset keeps the arithmetic exact.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable
from typing import Literal

DAY = 86_400.0
DayTypes = Literal["workday-weekend", "one", "weekday"]
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def local_day(iso_date: str) -> int:
    """The day number (days since 1970-01-01) of an ISO date such as ``2013-10-01``."""
    return datetime.date.fromisoformat(iso_date).toordinal() - _EPOCH_ORDINAL


class Calendar:
    """Maps unix seconds to local day numbers, slots and day types. Immutable."""

    __slots__ = ("day_types", "holidays", "offset", "slot_seconds", "slots", "tables")

    def __init__(self, utc_offset_hours: float = 8.0, slots: int = 24, day_types: DayTypes = "workday-weekend",
                 holidays: Iterable[int] = ()) -> None:
        self.offset = utc_offset_hours * 3600.0
        self.slots = slots
        self.slot_seconds = DAY / slots
        self.day_types = day_types
        self.holidays = frozenset(holidays)
        self.tables = {"workday-weekend": 2, "one": 1, "weekday": 7}[day_types]

    def day(self, t: float) -> int:
        """The local day number of the instant ``t``."""
        return math.floor((t + self.offset) / DAY)

    def day_start(self, day: int) -> float:
        """The unix time of local midnight opening ``day``."""
        return day * DAY - self.offset

    def day_type(self, day: int) -> int:
        """The index of the table that predicts ``day``."""
        weekday = 6 if day in self.holidays else (day + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
        if self.day_types == "one":
            return 0
        if self.day_types == "weekday":
            return weekday
        return 1 if weekday >= 5 else 0
