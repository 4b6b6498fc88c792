"""frontier/clustergraph/patterns.py: tree, patterns, δ removal and runtime mapping (digest AT-07…AT-10, AT-12…AT-14)."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.clustergraph.patterns import Itemsets, Mapper, node_of, numbers_apart, pattern_of, query_keys, remove_small
from frontier.clustergraph.urls import itemise, normalise, tokens


def itemsets(authority: Iterable[str] = (), path: Iterable[str] = (), query: Iterable[str] = ()) -> Itemsets:
    """Itemsets from space-separated item lists, each with support 30 in one bin."""

    def part(specs: Iterable[str]) -> dict[frozenset[str], tuple[int, ...]]:
        return {frozenset(spec.split()): (30,) for spec in specs}

    return Itemsets(part(authority), part(path), part(query))


# -- the tree and the patterns -------------------------------------------------------------


def test_at07_largest_matched_authority_itemset() -> None:
    sets = itemsets(["news example com", "example com"])
    assert sets.largest("authority", itemise("user1.example.com/")[0]) == frozenset({"example", "com"})
    assert pattern_of("user1.example.com/", sets) == "*.example.com/"
    assert sets.largest("authority", itemise("news.example.com/x")[0]) == frozenset({"news", "example", "com"})
    assert pattern_of("news.example.com/x", sets) == "news.example.com/*"


def test_at08_digits_and_words_are_different_clusters() -> None:
    sets = itemsets(["site"], ["html"])
    assert pattern_of("u.site/123.html", sets) == "*.site/$.html"
    assert pattern_of("u.site/cats.html", sets) == "*.site/*.html"
    assert pattern_of("u.site/１２.html", sets) == "*.site/*.html"  # `$` is ASCII digits only


def test_largest_ties_break_by_total_support_then_sorted_items() -> None:
    by_support = Itemsets({frozenset("ab"): (5, 5), frozenset("ac"): (5, 7)}, {}, {})
    assert by_support.largest("authority", "abc") == frozenset("ac")
    by_name = Itemsets({frozenset("ac"): (6,), frozenset("ab"): (6,), frozenset("a"): (9,)}, {}, {})
    assert by_name.largest("authority", "abc") == frozenset("ab")
    assert by_name.largest("authority", "xyz") is None
    assert by_name.largest("authority", "ax") == frozenset("a")


def test_nesting_and_the_empty_path_node() -> None:
    sets = itemsets(["site"], ["profile"], ["mode reply"])
    assert node_of("bob.site/x9?mode=reply", sets) == (frozenset({"site"}), None, frozenset({"mode", "reply"}))
    assert pattern_of("bob.site/x9?mode=reply", sets) == "*.site/*?mode=reply"
    assert node_of("bob.site/x9?mode=reply", sets, strict_nesting=True) == (frozenset({"site"}), None, None)
    assert pattern_of("bob.site/x9?mode=reply", sets, strict_nesting=True) == "*.site/*?*=*"
    # No authority itemset: the root, every token wildcarded, P and Q never looked up.
    assert node_of("bob.other/profile?mode=reply", sets) == (None, None, None)
    assert pattern_of("bob.other/profile?mode=reply", sets) == "*.*/*?*=*"


def test_itemsets_round_trip_through_json_in_a_fixed_order() -> None:
    sets = Itemsets({frozenset({"lj", "test"}): (9, 8), frozenset({"test"}): (9, 9)}, {frozenset({"html"}): (5, 6)}, {})
    data = sets.to_data()
    assert data["authority"][0] == {"items": ["test"], "supports": [9, 9]}
    text = json.dumps(data, sort_keys=True)
    again = Itemsets.from_data(json.loads(text))
    assert json.dumps(again.to_data(), sort_keys=True) == text
    assert again.supports("path") == {frozenset({"html"}): (5, 6)}
    assert repr(again) == "<Itemsets authority=2, path=1, query=0>"


# -- a LiveJournal-like sample --------------------------------------------------------------

WORDS = ["cats", "dogs", "tea", "rain", "jazz", "code", "maps", "bikes"]


def lj_url(rng: random.Random, users: list[str]) -> tuple[str, str | None]:
    """One sampled URL and the cluster it should map to (None for a rare, noisy type)."""
    user = rng.choice(users)
    post = rng.randrange(10_000, 99_999)
    kind = rng.random()
    if kind < 0.15:
        return f"https://{user}.lj.test/", "*.lj.test/"
    if kind < 0.30:
        return f"http://{user}.lj.test/profile", "*.lj.test/profile"
    if kind < 0.55:
        return f"http://{user}.lj.test/{post}.html", "*.lj.test/$.html"
    if kind < 0.62:
        return f"http://{user}.lj.test/tag", "*.lj.test/tag"
    if kind < 0.72:
        tag = rng.choice(WORDS) + str(rng.randrange(1000))
        return f"http://{user}.lj.test/tag/{tag}/", "*.lj.test/tag/*"
    if kind < 0.82:
        return f"http://{user}.lj.test/{post}.html?mode=reply", "*.lj.test/$.html?mode=reply"
    if kind < 0.92:
        return f"http://www.lj.test/{post}.html#comments", "www.lj.test/$.html"
    if kind < 0.99:
        return f"http://{user}.lj.test/{post}.html?format=light", "*.lj.test/$.html?format=light"
    return f"http://{user}.lj.test/odd/{rng.choice(WORDS)}-{post}?x={post}", None


def lj_sample(seed: int, n: int) -> list[tuple[str, str | None]]:
    rng = random.Random(seed)
    users = [f"{rng.choice(WORDS)}{rng.randrange(10**6)}x" for _ in range(800)]
    return [lj_url(rng, users) for _ in range(n)]


@pytest.fixture(scope="module")
def trained() -> tuple[list[str], Itemsets, Counter[str]]:
    sample = [normalise(url) for url, _ in lj_sample(seed=1, n=1500)]
    sets = Itemsets.mine(sample)
    return sample, sets, Counter(pattern_of(url, sets) for url in sample)


def test_the_sample_yields_the_table_4_patterns(trained: tuple[list[str], Itemsets, Counter[str]]) -> None:
    _, _, sizes = trained
    expected = {
        "*.lj.test/",
        "*.lj.test/profile",
        "*.lj.test/$.html",
        "*.lj.test/tag",
        "*.lj.test/tag/*",
        "*.lj.test/$.html?mode=reply",
        "www.lj.test/$.html",
    }
    assert expected <= set(remove_small(sizes, sum(sizes.values()), 0.03))


def test_at09_each_url_in_exactly_one_node_and_a_pattern_names_one_node(
    trained: tuple[list[str], Itemsets, Counter[str]],
) -> None:
    sample, sets, sizes = trained
    nodes = Counter(node_of(url, sets) for url in sample)
    assert sum(nodes.values()) == len(sample) == sum(sizes.values())
    nodes_of_pattern: dict[str, set[object]] = defaultdict(set)
    for url in sample:
        nodes_of_pattern[pattern_of(url, sets)].add(node_of(url, sets))
    assert all(len(found) == 1 for found in nodes_of_pattern.values())


def test_at12_mapping_reproduces_every_training_cluster(trained: tuple[list[str], Itemsets, Counter[str]]) -> None:
    sample, sets, sizes = trained
    kept = remove_small(sizes, len(sample), 0.03)
    assert kept != set(sizes)  # the noisy type was removed, so the fallback path is exercised too
    mapper = Mapper(sets, kept, ())
    training = {url: mapper.classify(url) for url in sample}  # §2.8: training re-maps with the same function
    for url in sample:
        pattern = pattern_of(url, sets)
        if pattern in kept:
            assert training[url] == (pattern, None)
        else:
            assert training[url][0] in kept | {None}
        assert Mapper(sets, kept, ()).classify(url) == training[url]


def test_at13_unseen_users_and_ids_generalise(trained: tuple[list[str], Itemsets, Counter[str]]) -> None:
    sample, sets, sizes = trained
    mapper = Mapper(sets, remove_small(sizes, len(sample), 0.03), ())
    assert mapper.classify(normalise("http://zed.lj.test/profile")) == ("*.lj.test/profile", None)
    assert mapper.classify(normalise("http://zed.lj.test/4242424.html")) == ("*.lj.test/$.html", None)
    held_out = [(url, cluster) for url, cluster in lj_sample(seed=2, n=3000) if cluster is not None]
    seen = set(sample)
    held_out = [(url, cluster) for url, cluster in held_out if normalise(url) not in seen]
    right = sum(mapper.classify(normalise(url))[0] == cluster for url, cluster in held_out)
    assert right >= 0.99 * len(held_out)


def test_the_mapping_ignores_scheme_port_fragment_and_host_case(
    trained: tuple[list[str], Itemsets, Counter[str]],
) -> None:
    sample, sets, sizes = trained
    mapper = Mapper(sets, remove_small(sizes, len(sample), 0.03), ())
    for url in ("https://Zed.LJ.test:8123/profile/#top", "http://zed.lj.test/profile"):
        assert mapper.classify(normalise(url)) == ("*.lj.test/profile", None)


# -- the fallback (AT-14) -------------------------------------------------------------------


def test_at14_a_pattern_removed_by_delta_falls_back_to_the_general_one() -> None:
    sets = itemsets(["lj test", "bob lj test"], ["profile"])
    assert pattern_of("bob.lj.test/profile", sets) == "bob.lj.test/profile"
    mapper = Mapper(sets, ["*.lj.test/profile"], [])
    assert mapper.classify("bob.lj.test/profile") == ("*.lj.test/profile", None)
    assert mapper.classify("bob.lj.test/profile/extra") == (None, "unmapped")


def test_at14_www_is_preferred_directly_and_through_the_fallback() -> None:
    retained = ["www.lj.test/$.html", "*.lj.test/$.html", "*.lj.test/*.html", "*.lj.test/*.php"]
    direct = Mapper(itemsets(["lj test", "www lj test"], ["html"]), retained, [])
    assert direct.classify("www.lj.test/5.html") == ("www.lj.test/$.html", None)
    # Without the `html` itemset the derived pattern `*.lj.test/$.*` is no cluster: the most specific wins.
    fallback = Mapper(itemsets(["lj test"]), retained, [])
    assert fallback.pattern("www.lj.test/5.html") == "*.lj.test/$.*"
    assert fallback.classify("www.lj.test/5.html") == ("www.lj.test/$.html", None)
    assert fallback.classify("bob.lj.test/5.html") == ("*.lj.test/$.html", None)
    assert fallback.classify("bob.lj.test/cats.html") == ("*.lj.test/*.html", None)
    assert fallback.classify("bob.lj.test/cats.php") == ("*.lj.test/*.php", None)
    assert fallback.classify("bob.lj.test/cats.asp") == (None, "unmapped")
    assert fallback.classify("bob.lj.test/cats/html") == (None, "unmapped")  # another skeleton


def test_at14_a_node_deleted_pattern_is_rejected_without_fallback() -> None:
    mapper = Mapper(itemsets(["lj test"], ["tag"]), ["*.lj.test/*/*", "*.lj.test/tag"], ["*.lj.test/tag/*"])
    assert mapper.classify("bob.lj.test/tag/cats") == (None, "deleted")
    assert mapper.classify("bob.lj.test/tags/cats") == ("*.lj.test/*/*", None)
    assert mapper.classify("bob.lj.test/tag") == ("*.lj.test/tag", None)
    assert mapper.classify("foo.example/foo/bar/baz") == (None, "unmapped")


def test_a_pattern_cannot_be_both_retained_and_deleted() -> None:
    with pytest.raises(ValueError, match="both retained and deleted"):
        Mapper(itemsets(), ["a.test/"], ["a.test/"])


# -- δ removal (AT-10) ----------------------------------------------------------------------


def test_at10_small_patterns_removed_while_97_percent_stays_covered() -> None:
    sizes = {f"p{size}": size for size in (600, 300, 50, 20, 15, 10, 5)}
    assert remove_small(sizes, 1000, 0.03) == {"p600", "p300", "p50", "p20"}


def test_remove_small_ties_by_pattern_and_stops_at_the_first_that_does_not_fit() -> None:
    assert remove_small({"b": 5, "a": 5, "c": 990}, 1000, 0.005) == {"b", "c"}
    assert remove_small({"a": 5, "b": 990}, 1000, 0.0) == {"a", "b"}
    assert remove_small({"a": 3, "b": 90}, 100, 0.1) == {"b"}  # 7 URLs uncovered already (failed or unmapped)


def test_a_small_pattern_with_a_number_for_another_parameter_is_kept_apart() -> None:
    """δ would fold a journal's older pages (``?skip=20``) into its tracking aliases (``?ref=friends``)."""
    members = {"*.lj.test/?*=*": ["a.lj.test/?ref=friends", "b.lj.test/?ref=home"],
               "*.lj.test/?*=$": ["c.lj.test/?skip=20"],
               "*.lj.test/$.html?*=$": ["c.lj.test/5.html?page=2"],
               "*.lj.test/$.html?*=*": ["c.lj.test/5.html?format=light"],
               "*.lj.test/tag/*?*=$": ["c.lj.test/tag/cats?skip=20"]}
    retained = {"*.lj.test/?*=*", "*.lj.test/$.html?*=*"}
    assert numbers_apart(set(members) - retained, retained, members) == {"*.lj.test/?*=$", "*.lj.test/$.html?*=$"}
    # and without the rule the mapper folds them in
    mapper = Mapper(itemsets(["lj test"]), retained, [])
    assert mapper.classify("c.lj.test/?skip=20") == ("*.lj.test/?*=*", None)


def test_a_number_for_the_same_parameter_is_the_same_kind_of_page() -> None:
    """A numeric user name in ``?journal=`` is still a tell-a-friend form: it folds in as δ says."""
    members = {"www.lj.test/tell?itemid=$&journal=*": ["www.lj.test/tell?itemid=5&journal=bob"],
               "www.lj.test/tell?itemid=$&journal=$": ["www.lj.test/tell?itemid=6&journal=100"],
               "*.lj.test/$.html": ["bob.lj.test/5.html"], "*.lj.test/tag/$": ["bob.lj.test/tag/2020"],
               "*.lj.test/tag/*": ["bob.lj.test/tag/cats"]}
    retained = {"www.lj.test/tell?itemid=$&journal=*", "*.lj.test/$.html", "*.lj.test/tag/*"}
    # the path's number (a tag named 2020) is a name, not a parameter value: folded in as well
    assert numbers_apart(set(members) - retained, retained, members) == set()
    assert query_keys("a.test/x?b=1&c&b=2") == {"b", "c"} and query_keys("a.test/x") == frozenset()


# -- properties -----------------------------------------------------------------------------

token = st.text("ab09", min_size=1, max_size=3)
urls = st.tuples(
    st.lists(token, min_size=1, max_size=4).map(".".join),
    st.lists(st.tuples(token, st.sampled_from(["/", ".", "//"])), max_size=4),
    st.lists(token, max_size=4),
).map(lambda t: f"{t[0]}/{''.join(tok + sep for tok, sep in t[1])}{'?' + '&'.join(t[2]) if t[2] else ''}")


@settings(max_examples=300, deadline=None)
@given(urls, st.data())
def test_patterns_keep_separators_literals_and_wildcard_digits_only(url: str, data: st.DataObject) -> None:
    key = normalise(url)
    chosen = [
        data.draw(st.frozensets(st.sampled_from(sorted(items)))) if items else frozenset() for items in itemise(key)
    ]
    sets = Itemsets(*({itemset: (5,)} if itemset else {} for itemset in chosen))
    pattern = pattern_of(key, sets)
    for url_part, pattern_part in zip(tokens(key), tokens(pattern), strict=True):
        assert url_part[1::2] == pattern_part[1::2]  # separators verbatim, same token count
        for original, shown in zip(url_part[::2], pattern_part[::2], strict=True):
            digits = original.isdigit() and original.isascii()
            assert shown in (original, "$" if digits else "*")
    assert Mapper(sets, [pattern], []).classify(key) == (pattern, None)


# -- names apart: identifiers beside positions ---------------------------------------------


def _stream_urls(hosts: int, names: tuple[str, str] = ("before", "offset")) -> set[str]:
    """Each host's stream by cursor (a message id, once each) and by page offset (10, 20 on every host)."""
    cursor, position = names
    return {url for i in range(hosts) for url in (f"u{i}.mb.test/?{cursor}={5000 + 7 * i}",
                                                   f"u{i}.mb.test/?{position}=10", f"u{i}.mb.test/?{position}=20")}


def test_a_wildcarded_name_hiding_identifiers_and_positions_is_split_by_name() -> None:
    from frontier.clustergraph.patterns import names_apart

    urls = _stream_urls(40)
    sampled = {url for url in urls if url.startswith(("u1", "u2"))}  # u1, u2, u10…u29: 22 of each name
    assert names_apart({"*.mb.test/?*=$": urls}, sampled, 5) == {"before", "offset"}
    # too few sampled pages of a name: the itemsets' support, not a new cluster
    assert names_apart({"*.mb.test/?*=$": urls}, {"u1.mb.test/?before=5007", "u1.mb.test/?offset=10"}, 5) == set()
    # two positions (or two identifiers) are one kind of number: nothing to keep apart
    both_positions = {url.replace("before", "page").replace(f"={5000 + 7 * i}", f"={2 + i % 3}")
                      for i in range(40) for url in _stream_urls(40) if url.startswith(f"u{i}.")}
    assert names_apart({"*.mb.test/?*=$": both_positions}, both_positions, 5) == set()
    # a name the itemsets kept, or a word value, is not a wildcarded number parameter
    assert names_apart({"*.mb.test/?offset=$": urls, "*.mb.test/?*=*": urls}, urls, 5) == set()


def test_training_keeps_a_cursor_apart_from_its_offset_aliases() -> None:
    """The microblog's stream pages (``?before=ID``) and their duplicates (``?offset=N``) under one ``?*=$``."""
    from frontier.clustergraph.model import Params
    from frontier.clustergraph.train import SampleRecord, train

    hosts = 300
    records = [SampleRecord(i, f"http://u{i}.mb.test/", f"http://u{i}.mb.test/", 200,
                            (f"http://u{i}.mb.test/msg/{1000 + i}", f"http://u{i}.mb.test/?before={5000 + 7 * i}",
                             f"http://u{i}.mb.test/?offset=10", f"http://u{i}.mb.test/?offset=20"))
               for i in range(hosts)]
    records += [SampleRecord(hosts + i, f"http://u{i}.mb.test/msg/{1000 + i}", f"http://u{i}.mb.test/msg/{1000 + i}",
                             200, (f"http://u{i}.mb.test/",)) for i in range(hosts)]
    # the stream pages fall in the first bin only: their names are not frequent in every bin
    streams = [url for i in range(12) for url in (f"http://u{i}.mb.test/?before={5000 + 7 * i}",
                                                  f"http://u{i}.mb.test/?offset={10 + 10 * (i % 2)}")]
    records = [SampleRecord(-len(streams) + k, url, url, 200, (url.partition("?")[0],))
               for k, url in enumerate(streams)] + records
    unseen = ("u999.mb.test/?before=123456", "u999.mb.test/?offset=30")
    split = Mapper((model := train(records, Params(), [])).itemsets, model.survivors, ())
    assert [split.classify(url)[0] for url in unseen] == ["*.mb.test/?before=$", "*.mb.test/?offset=$"]
    one = Mapper((old := train(records, Params(names_apart=False), [])).itemsets, old.survivors, ())
    assert [one.classify(url)[0] for url in unseen] == ["*.mb.test/?*=$", "*.mb.test/?*=$"]
