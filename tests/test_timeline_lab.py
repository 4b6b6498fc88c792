"""The posting lab's API (``bench/invitro/timeline.py``) answered directly, its clock passed in:
the newest posts by lab time, validators and 304, per-token hourly windows with 429 and
Retry-After; and ``python -m bench.invitro --posting`` refusing a bad combination."""

from __future__ import annotations

import subprocess
import sys

import orjson

from bench.invitro.timeline import HOST, TimelineParams, TimelineWeb
from tests.posting_source import RegularPosters

T0 = 600.0 * 2_833_333  # a multiple of every poster's period: u0 posts at T0


def lab(limit: int = 3) -> TimelineWeb:
    return TimelineWeb(TimelineParams(RegularPosters(3), t0=T0, scale=3600.0, calls_per_hour=limit), 8080, origin=100.0)


def call(web: TimelineWeb, target: str, now: float, token: str = "A", **headers: str) -> tuple[int, dict[str, str], bytes]:
    head = {b"authorization": f"Bearer {token}".encode(), **{k.replace("_", "-").encode(): v.encode() for k, v in headers.items()}}
    response = web.respond_head(HOST, target, head, now)
    return response.status, dict(response.headers), response.body


def test_a_timeline_lists_the_newest_posts_up_to_lab_now_with_validators_and_304() -> None:
    web = lab(limit=100)
    status, headers, body = call(web, "/timeline?user=u0&count=2", 100.0)  # lab T0: u0 posts every 600 s
    assert status == 200
    assert [p["time"] for p in orjson.loads(body)["posts"]] == [T0 - 600, T0]
    assert call(web, "/timeline?user=u0&count=2", 100.1, if_none_match=headers["ETag"])[0] == 304  # lab T0+360
    assert call(web, "/timeline?user=u0&count=2", 100.15, if_modified_since=headers["Last-Modified"])[0] == 304
    status, fresh, body = call(web, "/timeline?user=u0&count=2", 100.2, if_none_match=headers["ETag"])  # lab T0+720
    assert status == 200 and fresh["ETag"] != headers["ETag"]
    assert [p["time"] for p in orjson.loads(body)["posts"]] == [T0, T0 + 600]
    since = orjson.loads(body)["posts"][0]["id"]
    assert [p["time"] for p in orjson.loads(call(web, f"/timeline?user=u0&count=5&since_id={since}", 100.2)[2])["posts"]] == [T0 + 600]
    assert web.respond(HOST, "/timeline?user=u0&count=2").status == 401, "no token, no timeline"
    assert call(web, "/timeline?user=nobody&count=2", 100.3)[0] == 404
    assert call(web, "/timeline?user=u0&count=0", 100.3)[0] == 400


def test_each_token_has_its_calls_per_lab_hour_then_429_with_retry_after() -> None:
    web = lab(limit=3)
    answers = [call(web, "/timeline?user=u1&count=1", 100.0 + i / 10) for i in range(4)]  # lab T0 … T0+1080
    assert [a[0] for a in answers] == [200, 200, 200, 429]
    assert [a[1]["X-RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    assert answers[3][1]["Retry-After"] == "1" and answers[3][1]["X-RateLimit-Reset"] == str(int(T0 + 3600))
    assert call(web, "/timeline?user=u1&count=1", 100.5, token="B")[0] == 200, "another token, another budget"
    assert call(web, "/timeline?user=u1&count=1", 101.0)[0] == 200, "a new lab hour, a new window"


def test_the_cli_refuses_two_labs_at_once() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.invitro", "--posting", "5", "--social", "blog"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--posting and --social" in done.stderr
