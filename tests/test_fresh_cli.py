"""``crawl fresh schedule``: the schedule's properties read back from its CSV, and bad input's errors."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from engine.cli import main

T0 = 1_375_315_200  # 2013-08-01 00:00 UTC
START = T0 + 31 * 86_400  # 2013-09-01
END = START + 14 * 86_400
PER_HOUR = 3


def write_inputs(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(5)
    lines = ["user_id,unix_ts"]
    for user, per_day in (("busy", 40), ("steady", 6), ("rare", 0.2)):
        times = np.sort(rng.uniform(T0, START, rng.poisson(per_day * 31)))
        lines += [f"{user},{t:.0f}" for t in times]
    history = folder / "history.csv"
    history.write_text("\n".join(lines) + "\n")
    users = folder / "users.csv"
    users.write_text("user_id,name\nbusy,B\nsteady,S\nrare,R\nsilent,Q\n" + "".join(f"extra{i},X\n" for i in range(40)))
    return history, users


def schedule(folder: Path, *extra: str, history: Path | None = None, users: Path | None = None) -> int:
    default_history, default_users = write_inputs(folder)
    return main(["fresh", "schedule", "--history", str(history or default_history), "--users",
                 str(users or default_users), "--history-start", "2013-08-01T00:00:00", "--start", str(START),
                 "--end", "2013-09-15T00:00:00+00:00", "--per-crawl", "100", "--per-hour", str(PER_HOUR),
                 "--out", str(folder / "schedule.csv"), *extra])


def read_schedule(path: Path) -> list[tuple[str, float]]:
    with path.open(newline="") as stream:
        reader = csv.reader(stream)
        assert next(reader) == ["user_id", "crawl_ts"]
        return [(user, float(ts)) for user, ts in reader]


@pytest.mark.parametrize(("planner", "setting"), [("paper", "hash.weight=0.7"), ("hash", "hash.weight=0.7"),
                                                  ("allocation", "calls_per_day=3")])
def test_schedule_respects_the_window_and_the_rate_limit(tmp_path: Path, planner: str, setting: str) -> None:
    assert schedule(tmp_path, "--planner", planner, "--set", setting) == 0
    crawls = read_schedule(tmp_path / "schedule.csv")
    times = [t for _, t in crawls]
    assert times == sorted(times) and crawls
    assert all(START <= t < END for t in times)
    assert max(Counter(int((t - START) // 3600) for t in times).values()) <= PER_HOUR
    per_user = Counter(user for user, _ in crawls)
    assert set(per_user) <= {"busy", "steady", "rare", "silent", *(f"extra{i}" for i in range(40))}
    assert per_user["busy"] > per_user["silent"]
    if planner == "allocation":  # its budget, calls_per_day × 14 days; a full page of busy's is not missed
        assert len(crawls) <= 3 * 14 and per_user["busy"] >= 40 * 14 // 100
    else:
        assert per_user["busy"] >= per_user["steady"] >= per_user["rare"]


def test_poisson_schedule_visits_everyone_once_a_period(tmp_path: Path) -> None:
    assert schedule(tmp_path, "--planner", "poisson", "--set", "poisson.period_days=7") == 0
    crawls = read_schedule(tmp_path / "schedule.csv")
    assert Counter(user for user, _ in crawls) == Counter({user: 2 for user in {u for u, _ in crawls}})
    assert len(crawls) == 2 * 44 and all(START <= t < END for _, t in crawls)


@pytest.mark.parametrize(("history_text", "message"), [
    ("user_id,unix_ts\nbusy,1375315300\nbusy,soon\n", "history.csv line 3: unix_ts 'soon' is not a number"),
    ("user,ts\nbusy,1375315300\n", "history.csv line 1: the header needs the column(s) user_id, unix_ts"),
    (f"user_id,unix_ts\nbusy,{START + 10}\n", "history.csv line 2: the post at"),
    ("user_id,unix_ts\n,1375315300\n", "history.csv line 2: user_id is empty"),
])
def test_bad_history_is_named_by_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               history_text: str, message: str) -> None:
    bad = tmp_path / "bad" / "history.csv"
    bad.parent.mkdir()
    bad.write_text(history_text)
    assert schedule(tmp_path, history=bad) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "schedule.csv").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "hash.weight=2"], "--set hash.weight: must be strictly between 0 and 1"),
    (["--set", "learn=true"], "--set learn: an offline schedule learns nothing"),
    (["--planner", "allocation"], "--set calls_per_day: the allocation planner spends a budget"),
    (["--planner", "allocation", "--set", "allocation.fresh_share=2"], "--set allocation.fresh_share: must be between"),
    (["--per-hour", "0"], "argument --per-hour: must be a whole number, 1 or more, not '0'"),
    (["--start", "yesterday"], "argument --start: must be unix seconds or an ISO 8601 time"),
    (["--start", str(END)], "--history-start <= --start < --end"),
])
def test_bad_arguments_exit_2_naming_them(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          args: list[str], message: str) -> None:
    try:
        status = schedule(tmp_path, *args)
    except SystemExit as e:
        status = int(str(e.code))
    assert status == 2
    assert message in capsys.readouterr().err


def test_users_file_without_the_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    users = tmp_path / "people.csv"
    users.write_text("name\nbusy\n")
    assert schedule(tmp_path, users=users) == 2
    assert "people.csv line 1: the header needs the column(s) user_id" in capsys.readouterr().err


def test_a_short_row_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "short.csv"
    bad.write_text("user_id,unix_ts\nbusy,1375315300\nbusy\n")
    assert schedule(tmp_path, history=bad) == 2
    assert "short.csv line 3: 1 fields where the header has 2" in capsys.readouterr().err
