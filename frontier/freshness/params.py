"""The planners' parameters, with the digest's defaults, and ``section.key=value`` overrides.

Every field is documented where it is declared; :func:`with_settings` applies ``--set``
assignments (``hash.weight=0.7``, ``learn=false``) and names the key in every error.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from frontier.freshness.calendar import DayTypes, local_day
from frontier.freshness.hashmodel import WeightForm
from frontier.freshness.routing import RoutingParams


@dataclass(frozen=True, slots=True)
class CalendarParams:
    utc_offset_hours: float = 8.0
    """The users' local time zone as an offset from UTC (Sina Weibo: +8)."""
    slots: int = 24
    """Slots per day of the Hash tables (the paper's K: 24 hours; 96 quarter hours allowed)."""
    day_types: DayTypes = "workday-weekend"
    """Which days share a table: workday-weekend, one (all days), weekday (seven tables)."""
    holidays: tuple[str, ...] = ()
    """ISO dates predicted like a weekend day."""

    def __post_init__(self) -> None:
        if not -14 <= self.utc_offset_hours <= 14:
            raise ValueError(f"calendar.utc_offset_hours: must be between -14 and 14, not {self.utc_offset_hours!r}")
        if self.slots < 1 or 86_400 % self.slots:
            raise ValueError(f"calendar.slots: must divide a day into whole seconds, not {self.slots!r}")
        if self.day_types not in ("workday-weekend", "one", "weekday"):
            raise ValueError(f"calendar.day_types: must be workday-weekend, one or weekday, not {self.day_types!r}")
        for day in self.holidays:
            try:
                local_day(day)
            except ValueError:
                raise ValueError(f"calendar.holidays: {day!r} is not an ISO date (2013-10-01)") from None


@dataclass(frozen=True, slots=True)
class PoissonParams:
    period_days: float = 30.0
    """T_P: each Poisson user is crawled once per period; 0 makes [start, end) one period (§6.1)."""
    prior_days: float = 1.0
    """β of the Gamma prior: how many days of history the population's mean rate weighs. Small: the
    mean of a heavy-tailed population is far above most users' rates, so it should only decide for
    users with little history."""
    default_rate: float = 1.0
    """The prior's mean rate (posts/day) when the history holds no post at all."""

    def __post_init__(self) -> None:
        if not (self.period_days >= 0 and math.isfinite(self.period_days)):
            raise ValueError(f"poisson.period_days: must be 0 or more, not {self.period_days!r}")
        if not self.prior_days > 0:
            raise ValueError(f"poisson.prior_days: must be above 0, not {self.prior_days!r}")
        if not self.default_rate > 0:
            raise ValueError(f"poisson.default_rate: must be above 0, not {self.default_rate!r}")


@dataclass(frozen=True, slots=True)
class HashParams:
    threshold: float = 0.0
    """c: a crawl is due once more than c posts are expected since the last; 0 means per_crawl (c = C)."""
    span_days: float = 30.0
    """s: the longest time between two crawls of a user, in days (the decay guard)."""
    weight: float = 0.5
    """w: the weight of the last day in the table update."""
    weight_form: WeightForm = "L"
    """L: a' = w·(a + n), the digest's default; E: a' = (1 − w)·a + w·n."""

    def __post_init__(self) -> None:
        if not self.threshold >= 0:
            raise ValueError(f"hash.threshold: must be 0 or more, not {self.threshold!r}")
        if not (0 < self.span_days and math.isfinite(self.span_days)):
            raise ValueError(f"hash.span_days: must be a finite number of days above 0, not {self.span_days!r}")
        if not 0 < self.weight < 1:
            raise ValueError(f"hash.weight: must be strictly between 0 and 1, not {self.weight!r}")
        if self.weight_form not in ("L", "E"):
            raise ValueError(f"hash.weight_form: must be L or E, not {self.weight_form!r}")


@dataclass(frozen=True, slots=True)
class AllocationParams:
    """The allocation planner's (:mod:`frontier.freshness.allocation`); its budget is ``calls_per_day``."""

    fresh_share: float = 0.5
    """The share of the budget spent on freshness calls (Cho's allocation); the rest goes to cap calls."""
    quiet_hours: int = 8
    """The length of the quiet stretch of the day whose start is the light users' crawl hour."""
    spread_hours: float = 4.0
    """Crawl hours are spread over this many hours from that start (the calls of an hour are limited)."""
    theta_min: float = 1.0
    """The fewest expected pages (×C) a cap call waits for, however many calls are left."""
    prior_days: float = 2.0
    """How many days of history the light users' pooled day-to-day chain weighs in each user's."""
    memory_days: float = 7.0
    """A crawl covering d days weighs d/(d + memory_days) in the learned rate."""

    def __post_init__(self) -> None:
        if not 0 <= self.fresh_share <= 1:
            raise ValueError(f"allocation.fresh_share: must be between 0 and 1, not {self.fresh_share!r}")
        if not 1 <= self.quiet_hours <= 24:
            raise ValueError(f"allocation.quiet_hours: must be 1 to 24, not {self.quiet_hours!r}")
        if not 0 <= self.spread_hours <= 24:
            raise ValueError(f"allocation.spread_hours: must be 0 to 24, not {self.spread_hours!r}")
        if not self.theta_min > 0:
            raise ValueError(f"allocation.theta_min: must be above 0, not {self.theta_min!r}")
        if not self.prior_days > 0:
            raise ValueError(f"allocation.prior_days: must be above 0, not {self.prior_days!r}")
        if not self.memory_days > 0:
            raise ValueError(f"allocation.memory_days: must be above 0, not {self.memory_days!r}")


@dataclass(frozen=True, slots=True)
class PlannerParams:
    per_crawl: int = 100
    """C: the most posts one call returns (Weibo experiments: 100; Twitter: 200)."""
    learn: bool = True
    """Update rates and tables from the posts crawls report. Off for an offline schedule, which
    learns nothing after its start: there, no posts reported does not mean the user went silent."""
    calls_per_day: float = 0.0
    """The calls a day may spend (an API quota, or an equal-budget comparison); 0: no target. With a
    target, the Hash threshold c follows the calls spent (§3.4's feedback controller): at each local
    midnight c is multiplied by (calls of the day just ended ÷ calls_per_day), within [½, 2]."""
    history_start: float | None = None
    """Unix time the history starts (rates are posts over [history_start, start]); None: the first post."""
    calendar: CalendarParams = field(default_factory=CalendarParams)
    poisson: PoissonParams = field(default_factory=PoissonParams)
    hash: HashParams = field(default_factory=HashParams)
    routing: RoutingParams = field(default_factory=RoutingParams)
    allocation: AllocationParams = field(default_factory=AllocationParams)

    def __post_init__(self) -> None:
        if self.per_crawl < 1:
            raise ValueError(f"per_crawl: must be 1 or more, not {self.per_crawl!r}")
        if not self.calls_per_day >= 0:
            raise ValueError(f"calls_per_day: must be 0 or more, not {self.calls_per_day!r}")

    @property
    def threshold(self) -> float:
        """c, with 0 meaning C."""
        return self.hash.threshold or float(self.per_crawl)


SECTIONS = ("calendar", "poisson", "hash", "routing", "allocation")


def _coerce(key: str, annotation: str, text: str) -> Any:
    """``text`` read as the type the field declares (annotations are strings here)."""
    if annotation == "bool":
        if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise ValueError(f"{key}: must be true or false, not {text!r}")
        return text.lower() in ("true", "1", "yes")
    if annotation.startswith("tuple"):
        return tuple(part.strip() for part in text.split(",") if part.strip())
    if annotation.endswith("| None") and text.lower() in ("none", ""):
        return None
    number = {"int": int, "float": float, "float | None": float}.get(annotation)
    if number is None:
        return text
    try:
        return number(text)
    except ValueError:
        raise ValueError(f"{key}: must be a number, not {text!r}") from None


def with_settings(params: PlannerParams, assignments: Iterable[str]) -> PlannerParams:
    """``params`` with each ``[section.]key=value`` applied, in order."""
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{assignment}: a setting is KEY=VALUE")
        section, _, name = key.rpartition(".")
        target: Any = getattr(params, section) if section in SECTIONS else None
        if section and target is None or name in SECTIONS:
            raise ValueError(f"{key}: unknown setting")
        holder = target if section else params
        fields = {f.name: f for f in dataclasses.fields(holder)}
        if name not in fields:
            raise ValueError(f"{key}: unknown setting (known: {', '.join(sorted(fields))})")
        try:
            changed: Any = dataclasses.replace(holder, **{name: _coerce(key, str(fields[name].type), text.strip())})
        except ValueError as e:
            raise ValueError(str(e) if str(e).startswith(key) else f"{key}: {e}") from None
        params = dataclasses.replace(params, **{section: changed}) if section else cast(PlannerParams, changed)
    return params
