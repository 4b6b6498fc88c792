"""A revisit's validators travel with it: through memory, a spill to disk, a checkpoint and resume,
a host's queue of due revisits, a retry and a 429, and come out as the conditional request's headers."""

from __future__ import annotations

import gc
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import given

from frontier import validators
from frontier.frontier import Frontier
from frontier.page import FetchedPage
from frontier.settings import FrontierSettings
from tests.test_frontier import url
from tests.test_revisits import Revisiting

# header values: visible ASCII and spaces, as a server sends them (RFC 9110 §5.5)
values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@given(path=st.binary(max_size=60).filter(lambda b: b"\x00" not in b), etag=values, modified=values)
def test_validators_round_trip_through_an_item_and_become_request_headers(path: bytes, etag: str, modified: str) -> None:
    encoded = validators.encode(etag, modified)
    assert validators.detach(validators.attach(path, encoded)) == (path, encoded)
    expected = ([("If-None-Match", etag)] if etag else []) + ([("If-Modified-Since", modified)] if modified else [])
    assert validators.request_headers(encoded) == expected


def test_a_304_keeps_the_validators_it_does_not_repeat() -> None:
    sent = validators.encode('"v1"', "Tue, 14 Nov 2023 22:00:07 GMT")
    assert validators.of_response({}, sent) == sent
    assert validators.of_response({"etag": '"v2"'}, sent) == validators.encode('"v2"', "Tue, 14 Nov 2023 22:00:07 GMT")
    assert validators.of_response({}) == b""


def _frontier(directory: Path) -> Frontier:
    settings = FrontierSettings(fsync=False, revisits_in_memory=2, host_delay=0.0, ip_delay=0.0, sieve_flush_interval=0.0)
    return Frontier(directory, settings, policy=Revisiting(after=600.0))


def _page(u: str) -> FetchedPage:
    return FetchedPage(u, 200, {}, b"", fetched_at=1.7e9)


def _fetch_due(f: Frontier, now: float) -> dict[str, bytes]:
    """Every due revisit, fetched at ``now``: URL → the validators its request would send."""
    for vs in f.distribute(now, budget=100):
        f.resolved(vs, "10.0.0.1")
    sent = {}
    while (ready := f.acquire(now)) is not None:
        while ready.has_work:
            u = f.next_url(ready)
            sent[u] = ready.validators
        f.release(ready, now)
    return sent


def tags(n: int) -> bytes:
    return validators.encode(f'"etag-{n}"', f"Tue, 14 Nov 2023 22:00:{n:02d} GMT")


def test_validators_survive_a_spill_to_disk_and_a_checkpoint_and_resume(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    pages = [url(h, p) for h in range(3) for p in range(4)]
    for n, u in enumerate(pages):
        f.fetched(_page(u), 100.0 + n, tags(n) if n % 3 else b"")  # every third page gave no validators
    assert f.revisits.on_disk == len(pages) - 2, "all but two wait on disk"
    f.checkpoint(150.0, {})
    f.close()
    gc.collect()

    g = _frontier(tmp_path)
    g.restore(10.0)  # another clock: 550 s left for the first
    assert _fetch_due(g, 10.0 + 549.0) == {}
    sent = _fetch_due(g, 10.0 + 600.0)
    assert sent == {u: tags(n) if n % 3 else b"" for n, u in enumerate(pages)}
    assert validators.request_headers(sent[pages[1]]) == [
        ("If-None-Match", '"etag-1"'), ("If-Modified-Since", "Tue, 14 Nov 2023 22:00:01 GMT")]
    g.close()


def test_due_revisits_keep_their_validators_in_a_checkpoint_of_their_hosts_queue(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    f.fetched(_page(url(1, 0)), 0.0, tags(1))
    f.fetched(_page(url(1, 1)), 0.0)
    for vs in f.distribute(600.0):  # due: now in the host's queue of due revisits, not the schedule
        f.resolved(vs, "10.0.0.1")
    assert f.statistics().revisits == 0
    f.checkpoint(600.0, {})
    f.close()
    gc.collect()

    g = _frontier(tmp_path)
    for vs in g.restore(0.0)[0]:
        g.resolved(vs, "10.0.0.1")
    assert _fetch_due(g, 1.0) == {url(1, 0): tags(1), url(1, 1): b""}
    g.close()


def test_a_retry_and_a_429_send_the_validators_again_and_a_429_is_no_failure(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    f.fetched(_page(url(1, 0)), 0.0, tags(7))
    for new in f.distribute(600.0):
        f.resolved(new, "10.0.0.1")
    first = f.acquire(600.0)
    assert first is not None and f.next_url(first) == url(1, 0) and first.validators == tags(7)
    f.failed(first, url(1, 0), 600.5, backoff=1.0, breaks_host=False, error="timeout")
    again = f.acquire(601.5)
    assert again is not None and f.next_url(again) == url(1, 0) and again.validators == tags(7) and again.retries == 1
    f.deferred(again, 602.0, 30.0)  # Retry-After: 30
    assert f.acquire(631.9) is None, "the host waits the Retry-After"
    last = f.acquire(632.0)
    assert last is not None and f.next_url(last) == url(1, 0) and last.validators == tags(7)
    assert last.retries == 1, "a 429 counts no failure"
    f.release(last, 632.1)
    f.close()
