"""SOUrCe features and weights (digest §2.2–2.4, §2.6): AT-01…AT-05, plus the edges around them.

Pages are parsed by the crawler's own ``engine.parse.extract_links(want_document=True)``, so the
tree is the one a policy gets as ``page.document``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from engine.parse import extract_links
from frontier.source.features import apath, link_groups, xpath_bag
from frontier.source.weights import MIN_DF, Vocabulary

AT01 = b"""<html><head><title>T</title></head><body>
<div class="nav"><a href="/">Home</a><a class="login" href="/login?r=1">Login</a></div>
<table><tr><td><div><a class="ad" href="/ad/1">Ad</a></div></td></tr>
<tr><td><div><a class="result" href="/q/1">Q1</a></div></td></tr>
<tr><td><div><a class="result  x" href="/q/2"><span>Q2</span></a></div></td></tr></table>
<p>text<br/></p><img src="x.png"/><!-- c --></body></html>"""

PAGE = "http://s.test/x"
TOLERANCE = 1e-4


def document(body: bytes, url: str = PAGE) -> etree._Element:
    root = extract_links(body, url, want_document=True).document
    assert root is not None
    return root  # type: ignore[no-any-return]


# -- AT-01 Xpath bag --------------------------------------------------------------------------------


def test_at01_xpath_bag() -> None:
    assert xpath_bag(document(AT01)) == Counter({
        "/html/head/title": 1,
        "/html/body/div/a": 2,
        "/html/body/table/tr/td/div/a": 2,
        "/html/body/table/tr/td/div/a/span": 1,
        "/html/body/p/br": 1,
        "/html/body/img": 1,
    })


def test_doctype_comments_and_processing_instructions_are_no_leaves_and_do_not_unleaf() -> None:
    body = b"<!DOCTYPE html><!-- before --><html><body><p>x<!-- c --><?pi y?></p><div><!-- only --></div></body></html>"
    assert xpath_bag(document(body)) == Counter({"/html/body/p": 1, "/html/body/div": 1})


def test_body_only_drops_head_leaves() -> None:
    bag = xpath_bag(document(AT01), body_only=True)
    assert "/html/head/title" not in bag
    assert bag == xpath_bag(document(AT01)) - Counter({"/html/head/title": 1})


def test_classes_name_each_element_by_its_tag_and_first_class_token() -> None:
    body = (b'<html><body class="layout-7"><div class=" entry  wide"><p class="text">x</p><p>y</p></div>'
            b'<DIV CLASS="Nav"><a class="">z</a></DIV></body></html>')
    assert xpath_bag(document(body), classes=True) == Counter({
        "/html/body.layout-7/div.entry/p.text": 1,
        "/html/body.layout-7/div.entry/p": 1,
        "/html/body.layout-7/div.Nav/a": 1,
    })
    assert xpath_bag(document(body), body_only=True, classes=True) == xpath_bag(document(body), classes=True)
    assert xpath_bag(document(body)) == Counter({"/html/body/div/p": 2, "/html/body/div/a": 1})


def test_tags_are_lower_case_and_deep_trees_do_not_recurse() -> None:
    root = etree.Element("HTML")
    element = etree.SubElement(root, "Body")
    for _ in range(5000):  # beyond Python's recursion limit
        element = etree.SubElement(element, "div")
    assert xpath_bag(root) == Counter({"/html/body" + "/div" * 5000: 1})


# -- AT-02 Apaths and link groups -------------------------------------------------------------------


def test_at02_link_groups() -> None:
    assert list(link_groups(document(AT01), PAGE, "s.test").items()) == [  # in document order
        ("/html/body/div/a[]", ["http://s.test/"]),
        ("/html/body/div/a[login]", ["http://s.test/login?r=1"]),
        ("/html/body/table/tr/td/div/a[ad]", ["http://s.test/ad/1"]),
        ("/html/body/table/tr/td/div/a[result]", ["http://s.test/q/1"]),
        ("/html/body/table/tr/td/div/a[result x]", ["http://s.test/q/2"]),
    ]


def test_apath_of_a_non_leaf_anchor_with_messy_classes() -> None:
    root = document(b'<html><body><ul><li><a class="  b\t a\n b " href="/y"><span>s</span></a></li></ul></body></html>')
    anchor = next(root.iter("a"))
    assert apath(anchor) == "/html/body/ul/li/a[b a b]"  # tokens in source order, nothing deduplicated


def test_apath_alone_equals_the_group_keys() -> None:
    root = document(AT01)
    assert [apath(anchor) for anchor in root.iter("a")] == list(link_groups(root, PAGE, "s.test"))


def test_link_groups_keep_duplicates_in_document_order() -> None:
    body = b'<html><body><a class="p" href="/2">2</a><a class="p" href="/1">1</a><a class="p" href="/2">2</a>'
    expected = ["http://s.test/2", "http://s.test/1", "http://s.test/2"]
    assert link_groups(document(body), PAGE, "s.test") == {"/html/body/a[p]": expected}


# -- AT-03 URL filter -------------------------------------------------------------------------------

FILTER_PAGE = b"""<html><head><base href="http://www.s.test/dir/"></head><body>
<a href="javascript:void(0)">js</a><a href="mailto:a@s.test">mail</a><a href="tel:123">tel</a>
<a href="data:text/html,x">data</a><a href="#">bare</a><a href=" #top ">top</a><a>no href</a>
<a href="http://other.test/q/1">other host</a><a href="http://sub.s.test/q/1">subdomain</a>
<a href="pic.png">png</a><a href="/doc.PDF?x=1">pdf</a><a href="/style.css">css</a><a href="/a.tar.gz">gz</a>
<a href="q/3#frag">frag</a><a href="HTTP://WWW.S.TEST:80/q/4">www</a><a href="http://s.test/q/5?b=2&amp;a=1">query</a>
<a href="/v1.2/page">dotted directory</a><a href="/.hidden">dot file</a>
</body></html>"""


def test_at03_url_filter_with_base_href() -> None:
    groups = link_groups(document(FILTER_PAGE), "http://s.test/x/y", "s.test")
    assert groups == {
        "/html/body/a[]": [
            "http://sub.s.test/q/1",  # a subdomain is the site too (a host per user, a mobile mirror)
            "http://www.s.test/dir/q/3",  # resolved against <base href>, fragment stripped
            "http://www.s.test/q/4",  # scheme and host lower-cased, default port dropped; www. is intra-site
            "http://s.test/q/5?a=1&b=2",
            "http://www.s.test/v1.2/page",
            "http://www.s.test/.hidden",
        ]
    }


def test_link_groups_equal_the_urls_the_crawler_queues() -> None:
    parsed = extract_links(FILTER_PAGE, "http://s.test/x/y", want_document=True)
    urls = {url for group in link_groups(parsed.document, "http://s.test/x/y", "s.test").values() for url in group}
    assert urls <= set(parsed.links)


def test_sort_query_follows_the_crawl_setting() -> None:
    groups = link_groups(document(FILTER_PAGE), "http://s.test/x/y", "s.test", sort_query=False)
    assert "http://s.test/q/5?b=2&a=1" in groups["/html/body/a[]"]


def test_site_given_with_www_and_upper_case() -> None:
    assert link_groups(document(FILTER_PAGE), "http://s.test/x/y", "WWW.S.Test") == link_groups(
        document(FILTER_PAGE), "http://s.test/x/y", "s.test"
    )


def test_base_without_href_is_skipped_and_an_invalid_page_url_raises() -> None:
    body = b'<html><head><base target="_blank"><base href="/b/"></head><body><a href="c">c</a></body></html>'
    assert link_groups(document(body), PAGE, "s.test") == {"/html/body/a[]": ["http://s.test/b/c"]}
    with pytest.raises(ValueError):
        link_groups(document(body), "ftp://s.test/", "s.test")


# -- AT-04 weights ----------------------------------------------------------------------------------

AT04_TF = [(3, 1, 0), (1, 0, 2), (2, 2, 0), (0, 0, 1)]
AT04_BAGS = [Counter({f"x{i + 1}": tf for i, tf in enumerate(row) if tf}) for row in AT04_TF]
AT04_EXPECTED = np.array([
    [0.606684, 0.393316, 0],
    [0.327324, 0, 0.672676],
    [0.435425, 0.564575, 0],
    [0, 0, 1],
])


def at04_matrix() -> np.ndarray:
    return Vocabulary.fit(AT04_BAGS, min_df=1).matrix(AT04_BAGS)


def test_at04_weights() -> None:
    vocabulary = Vocabulary.fit(AT04_BAGS, min_df=1)
    assert vocabulary.paths == ("x1", "x2", "x3")
    assert vocabulary.df == (3, 2, 2)
    assert vocabulary.n_pages == 4
    np.testing.assert_allclose(vocabulary.idf, [math.log(4 / 3 + 1), math.log(3), math.log(3)])
    matrix = vocabulary.matrix(AT04_BAGS)
    assert matrix.dtype == np.float64
    np.testing.assert_allclose(matrix, AT04_EXPECTED, atol=TOLERANCE)
    for bag, row in zip(AT04_BAGS, matrix):
        np.testing.assert_array_equal(vocabulary.vector(bag), row)


@pytest.mark.parametrize("log", [math.log, math.log2, math.log10])
def test_at04_the_log_base_does_not_matter(log: Callable[[float], float]) -> None:
    df, n = (3, 2, 2), 4
    raw = np.array([[log(tf + 1) * log(n / d + 1) for tf, d in zip(row, df)] for row in AT04_TF])
    np.testing.assert_allclose(at04_matrix(), raw / raw.sum(axis=1, keepdims=True), atol=1e-12)


def test_at04_distances() -> None:
    p1, p2, p3, p4 = at04_matrix()
    assert np.linalg.norm(p1 - p3) == pytest.approx(0.242197, abs=TOLERANCE)
    assert np.linalg.norm(p2 - p4) == pytest.approx(0.462907, abs=TOLERANCE)


def test_at04_idf_keeps_the_plus_one() -> None:
    assert at04_matrix()[0][0] != pytest.approx(0.453574, abs=TOLERANCE)  # [C]'s log(|D|/df)


# -- AT-05 df filter --------------------------------------------------------------------------------


def test_at05_df_filter() -> None:
    bags = [Counter({"kept": 1, "dropped": 1}) for _ in range(3)] + [Counter({"kept": 2}), Counter({"other": 1})]
    vocabulary = Vocabulary.fit(bags)
    assert MIN_DF == 4
    assert vocabulary.paths == ("kept",)
    assert vocabulary.df == (4,)
    assert vocabulary.n_pages == 5
    assert Vocabulary.fit(bags, min_df=1).paths == ("dropped", "kept", "other")


# -- new pages, storage -----------------------------------------------------------------------------


def test_new_pages_use_the_training_idf_and_ignore_unknown_paths() -> None:
    vocabulary = Vocabulary.fit(AT04_BAGS, min_df=1)
    page = Counter({"x1": 3, "x2": 1, "unseen": 9})
    np.testing.assert_allclose(vocabulary.vector(page), AT04_EXPECTED[0], atol=TOLERANCE)
    np.testing.assert_array_equal(vocabulary.vector(Counter({"unseen": 2})), np.zeros(3))
    np.testing.assert_array_equal(vocabulary.vector(Counter()), np.zeros(3))
    assert vocabulary.matrix([]).shape == (0, 3)


def test_columns_do_not_depend_on_page_order() -> None:
    assert Vocabulary.fit(AT04_BAGS[::-1], min_df=1) == Vocabulary.fit(AT04_BAGS, min_df=1)


def test_storage_round_trip_is_byte_stable() -> None:
    vocabulary = Vocabulary.fit(AT04_BAGS, min_df=2)
    data = vocabulary.to_data()
    assert data == {"df": {"x1": 3, "x2": 2, "x3": 2}, "min_df": 2, "n_pages": 4}
    raw = json.dumps(data, sort_keys=True)
    loaded = Vocabulary.from_data(json.loads(raw))
    assert loaded == vocabulary
    np.testing.assert_array_equal(loaded.idf, vocabulary.idf)
    assert json.dumps(loaded.to_data(), sort_keys=True) == raw


def test_invalid_vocabularies_are_refused() -> None:
    with pytest.raises(ValueError):
        Vocabulary.fit([])
    with pytest.raises(ValueError):
        Vocabulary.fit(AT04_BAGS, min_df=0)
    with pytest.raises(ValueError):
        Vocabulary(("b", "a"), (1, 1), 4, 1)
    with pytest.raises(ValueError):
        Vocabulary(("a",), (5,), 4, 1)


def test_the_vocabulary_is_frozen() -> None:
    vocabulary = Vocabulary.fit(AT04_BAGS, min_df=1)
    with pytest.raises(ValueError):
        vocabulary.idf[0] = 1.0


bag_strategy = st.dictionaries(st.sampled_from([f"/html/body/x{i}" for i in range(8)]), st.integers(1, 50), max_size=8)


@given(st.lists(bag_strategy, min_size=1, max_size=20), st.integers(1, 5))
def test_rows_are_l1_normalised_or_zero(bags: list[dict[str, int]], min_df: int) -> None:
    vocabulary = Vocabulary.fit(bags, min_df=min_df)
    matrix = vocabulary.matrix(bags)
    assert (matrix >= 0).all()
    for bag, total in zip(bags, matrix.sum(axis=1)):
        known = any(path in vocabulary.column for path in bag)
        assert total == (pytest.approx(1.0) if known else 0.0)
