"""What a SOUrCe crawl learns about each anchor role as it downloads (frontier/source/yields.py)."""

from __future__ import annotations

import pytest

from engine.parse import extract_links
from frontier.source.yields import MIN_BLOCK, RoleYield, SeenBlocks, text_blocks

LONG = "Users write sentences that run well past a template's labels, names and dates."
OTHER = "Another comment, long enough to count as what a user wrote on the page here."


def blocks(html: str) -> frozenset[bytes]:
    document = extract_links(html.encode(), "http://blog.test/", want_document=True).document
    return text_blocks(document)


def test_text_blocks_are_the_long_segments_of_the_body() -> None:
    assert len(LONG) >= MIN_BLOCK
    page = f"<html><head><title>{LONG}</title></head><body><h1>2018-04-30</h1><p>{LONG}</p><!-- {OTHER} --></body></html>"
    assert len(blocks(page)) == 1  # the title is in the head, the date is short, a comment is no text
    spaced = f"<html><body><div><p>  {LONG.replace(' ', chr(10) + '  ')} </p></div></body></html>"
    assert blocks(spaced) == blocks(page)  # whitespace collapsed: the same segment on another template
    tails = f"<html><body><p>{LONG}<br/>{OTHER}</p><nav><a href='/x'>Recent entries</a> · <a href='/y'>Tags</a></nav></body></html>"
    assert len(blocks(tails)) == 2  # a tail counts as text; menus are short
    assert blocks("<html><body><form><input/><button>Reply</button></form></body></html>") == frozenset()
    assert blocks("<html><head><title>x</title></head></html>") == frozenset()


def test_seen_blocks_say_what_is_new_and_go_on_past_a_full_filter() -> None:
    seen = SeenBlocks(blocks_per_filter=100)
    blocks = [i.to_bytes(16, "big") for i in range(1000)]
    assert seen.add(blocks[:10]) and not seen.add(blocks[:10]) and not seen.add([])
    assert seen.add(blocks[5:15])  # five new among five seen
    for i in range(15, 1000, 5):  # ten filters' worth, a page of five blocks at a time
        assert seen.add(blocks[i:i + 5])
    repeats = sum(seen.add([block]) for block in blocks)
    assert repeats == 0  # a Bloom filter never forgets
    fresh = sum(seen.add([(i + 10**6).to_bytes(16, "big")]) for i in range(1000))
    assert fresh >= 980  # false positives: under 1% over all the filters (0.5%, 0.25%, ...)


def test_a_role_s_factor_is_its_smoothed_share_of_new_downloads_over_enough() -> None:
    yields = RoleYield(2)
    assert yields.role_factors().tolist() == [1.0, 1.0]
    yields.record(0, "http://a.blog.test", new=True)
    yields.record(0, "http://b.blog.test", new=False)
    yields.record(0, "http://b.blog.test", new=False)
    assert yields.role_share(0) == yields.role_factor(0) == pytest.approx(2 / 4)  # (1 + 1) / (1 + 3)
    assert yields.role_factors().tolist() == [pytest.approx(0.5), 1.0]
    halves = RoleYield(2, enough=0.5)  # a role that brings something new half the time keeps its score
    for new in (True, False, False):
        halves.record(0, "http://a.blog.test", new=new)
    assert halves.role_factor(0) == 1.0 and halves.factor(0, "http://b.blog.test") == 1.0
    halves.record(0, "http://a.blog.test", new=False)
    assert halves.role_factor(0) == pytest.approx(2 / 5 / 0.5)
    assert halves.role_factors().tolist() == [pytest.approx(0.8), 1.0]


def test_a_host_that_keeps_answering_a_role_with_nothing_falls_behind_the_role() -> None:
    yields = RoleYield(1, host_prior=2.0)
    for n in range(8):  # the role is good on many hosts
        yields.record(0, f"http://u{n}.blog.test", new=True)
    for _ in range(4):  # but one host answers it with redirects only
        yields.record(0, "http://www.blog.test", new=False)
    role = yields.role_factor(0)
    assert role == pytest.approx(9 / 13)
    assert yields.factor(0, "http://new.blog.test") == role  # a host not yet seen: the role's share
    assert yields.factor(0, "http://www.blog.test") == pytest.approx(2 * role / 6)  # Beta update, 4 misses
    assert yields.factor(0, "http://u1.blog.test") == pytest.approx((2 * role + 1) / 3)


def test_the_counts_survive_a_resume_by_role_name() -> None:
    yields = RoleYield(2)
    yields.record(1, "http://www.blog.test", new=False)
    yields.record(0, "http://a.blog.test", new=True)
    data = yields.to_data(["reply", "user"])
    again = RoleYield(3)
    again.restore(data, ["print", "reply", "user"])  # another model: the same roles by name, one more
    assert again.factor(2, "http://www.blog.test") == yields.factor(1, "http://www.blog.test")
    assert again.factor(1, "http://a.blog.test") == yields.factor(0, "http://a.blog.test")
    assert again.role_factor(0) == 1.0
    for wrong in ({"host_prior": 0}, {"prior": -1}, {"enough": 0}, {"enough": 1.5}):
        with pytest.raises(ValueError):
            RoleYield(1, **wrong)
