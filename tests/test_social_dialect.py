"""Dialects: held-out lab sites whose fixed URL words are renamed, with the same pages and the same truth."""

from __future__ import annotations

import re

import pytest

from bench.invitro.html import SENTENCES
from bench.invitro.social.census import census
from bench.invitro.social.dialect import SYNONYMS, Dialect
from bench.invitro.social.web import SocialParams, SocialWeb
from tests.test_social_sites import SMALL

SMALL_KNOBS = {**{name: knobs for name, (_, knobs) in SMALL.items()}, "blog": {"users": 30, "news": 5, "communities": 4}}
TOKEN = re.compile(r"[^/.?&=#:]+")


def _tokens(url: str) -> set[str]:
    return set(TOKEN.findall(url.split("://", 1)[1].partition("/")[2]))


@pytest.mark.parametrize("name", sorted(SMALL_KNOBS))
def test_no_synonym_is_a_word_the_site_writes(name: str) -> None:
    site = SocialWeb(SocialParams((name,), 7, {name: SMALL_KNOBS[name]}), 8080).site_named(name)
    written = set().union(*(_tokens(url) for url in census(site).urls))
    synonyms = {s for options in SYNONYMS.values() for s in options}
    assert not written & synonyms, f"{name} writes {sorted(written & synonyms)}: a dialect could not tell them apart"


def test_synonyms_are_not_text_words() -> None:
    words = {w.lower().strip(".,;?!") for sentence in SENTENCES for w in sentence.split()}
    assert not words & {s for options in SYNONYMS.values() for s in options}


@pytest.mark.parametrize("name", sorted(SMALL_KNOBS))
def test_a_dialect_renames_urls_and_keeps_pages_and_truth(name: str) -> None:
    plain = SocialWeb(SocialParams((name,), 7, {name: SMALL_KNOBS[name]}), 8080)
    spoken = SocialWeb(SocialParams((name,), 7, {name: {**SMALL_KNOBS[name], "dialect": 3}}), 8080)
    dialect = Dialect(3)
    plain_census = census(plain.site_named(name))
    spoken_census = census(spoken.site_named(name))
    assert spoken_census.pages == plain_census.pages
    assert spoken_census.by_type == plain_census.by_type
    renamed = sum(1 for a, b in zip(plain_census.urls, spoken_census.urls, strict=False) if a != b)
    assert renamed > plain_census.pages // 4  # most URLs carry a fixed word
    for url in plain_census.urls[:300]:
        assert spoken.truth_of_url(dialect.from_site(url)) == plain.truth_of_url(url)
