"""The CSV files a recrawl planner is given: the users CSV and the post history CSV.

Read by ``crawl fresh schedule`` (``engine/fresh_cli.py``) and by ``--policy freshness`` from its
model folder. Every problem is an :class:`InputError` naming the file, the line and what is wrong.
The history's bounds are the command's own flag names (``--history-start``, ``--start``).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path


class InputError(Exception):
    """Bad input, told in one line naming the file (and line) and the problem."""


def rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """The CSV's rows as the values of ``columns`` (which the header must hold), with their line numbers."""
    try:
        with path.open(newline="") as stream:
            reader = csv.reader(stream)
            header = [name.strip() for name in next(reader, [])]
            missing = [c for c in columns if c not in header]
            if missing:
                raise InputError(f"{path} line 1: the header needs the column(s) {', '.join(missing)}, "
                                 f"found {','.join(header) or 'nothing'}")
            where = [header.index(c) for c in columns]
            for row in reader:
                if not row:
                    continue
                if len(row) < len(header):
                    raise InputError(f"{path} line {reader.line_num}: {len(row)} fields where the header has "
                                     f"{len(header)}")
                yield reader.line_num, [row[i].strip() for i in where]
    except OSError as e:
        raise InputError(f"{path}: cannot read it: {e.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a readable CSV file: {e}") from None


def read_users(path: Path) -> list[str]:
    """The users CSV's ``user_id`` column, each user once, in file order."""
    users = []
    for line, (user,) in rows(path, ("user_id",)):
        if not user:
            raise InputError(f"{path} line {line}: user_id is empty")
        users.append(user)
    return list(dict.fromkeys(users))


def read_history(path: Path, history_start: float, start: float) -> dict[str, list[float]]:
    """The history CSV (``user_id,unix_ts``): each user's post times, sorted; every one in [history_start, start)."""
    history: dict[str, list[float]] = defaultdict(list)
    for line, (user, text) in rows(path, ("user_id", "unix_ts")):
        if not user:
            raise InputError(f"{path} line {line}: user_id is empty")
        try:
            stamp = float(text)
        except ValueError:
            raise InputError(f"{path} line {line}: unix_ts {text!r} is not a number of seconds") from None
        if not history_start <= stamp < start:
            raise InputError(f"{path} line {line}: the post at {text} is outside the history "
                             f"[--history-start {history_start:.15g}, --start {start:.15g})")
        history[user].append(stamp)
    return {user: sorted(times) for user, times in history.items()}


def read_listings(path: Path) -> dict[str, str]:
    """The users CSV of a live recrawl (``user_id,url``): each user's newest-posts listing URL."""
    listings: dict[str, str] = {}
    for line, (user, url) in rows(path, ("user_id", "url")):
        if not user or not url:
            raise InputError(f"{path} line {line}: {'user_id' if not user else 'url'} is empty")
        listings.setdefault(user, url)
    return listings
