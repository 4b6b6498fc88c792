"""Rule V (parameter views), further pages (paginations) and numbers as data: where the trainer goes past the paper."""

from __future__ import annotations

import dataclasses

from frontier.clustergraph.model import Params
from frontier.clustergraph.train import SampleRecord, train
from frontier.clustergraph.variants import (
    PARAMETER_VARIANT,
    paginations,
    parameter_variants,
    without_number_parameters,
    without_word_parameters,
)
from tests.test_clustergraph_model import lj_sample


def test_word_parameters_are_stripped_and_numbers_kept() -> None:
    assert without_word_parameters("a.test/b?sort=top&page=2") == "a.test/b?page=2"
    assert without_word_parameters("a.test/b?ref=home&utm_source=x") == "a.test/b"
    assert without_word_parameters("a.test/b?skip=20") == "a.test/b?skip=20"
    assert without_word_parameters("a.test/b") == "a.test/b"
    assert without_word_parameters("a.test/b?flag") == "a.test/b"


def _cluster_of(url: str) -> str | None:
    path, _, query = url.partition("?")
    if path.startswith("a.test/post/"):
        return "a.test/post/$" + ("?*=*" if query else "")
    if path == "a.test/login":
        return "a.test/*?*=*" if query else "a.test/*"
    return None


def test_a_view_of_each_page_is_a_variant_and_a_selector_is_not() -> None:
    posts = [f"a.test/post/{i}" for i in range(40)]
    members = {
        "a.test/post/$": set(posts),
        "a.test/post/$?*=*": {f"{p}?format=light" for p in posts},  # one print view per post: a view
        # a login form naming every page it came from strips to one URL: a selector, not a view
        "a.test/*?*=*": {f"a.test/login?returnto={i}x" for i in range(40)},
    }
    found = parameter_variants(members, _cluster_of)
    assert list(found) == ["a.test/post/$?*=*"]
    assert "a view of a.test/post/$" in found["a.test/post/$?*=*"]


def test_a_view_is_deleted_before_edge_deletion() -> None:
    base = lj_sample(pages=600)
    extra: list[SampleRecord] = []
    for record in base:
        if record.url.endswith(".html"):  # each post also linked as its print view
            extra.append(dataclasses.replace(record, outlinks=(*record.outlinks, f"{record.url}?format=light")))
        else:
            extra.append(record)
    sample = [*extra, *(SampleRecord(len(extra) + i, f"{r.url}?format=light", f"{r.url}?format=light", 200, r.outlinks)
                        for i, r in enumerate(r for r in extra if r.url.endswith(".html")))]
    model = train(sample, Params(), [])
    views = [c for c, info in model.clusters.items() if info.status == PARAMETER_VARIANT]
    assert "*.lj.test/$.html?format=light" in views or "*.lj.test/$.html?*=*" in views
    assert not any(e.kept for e in model.edges if e.src in views or e.dst in views)
    literal = train(sample, Params(literal=True), [])
    assert not any(info.status == PARAMETER_VARIANT for info in literal.clusters.values())
    # a numeric parameter of the same skeleton (``?page=2`` falls back to ``?*=*``) makes it no view
    paged = [dataclasses.replace(r, outlinks=(*r.outlinks, f"{r.url}?page=2")) if r.url.endswith(".html") else r
             for r in sample]
    assert not any(info.status == PARAMETER_VARIANT for info in train(paged, Params(), []).clusters.values())


def test_numbers_are_never_literal_unless_asked() -> None:
    records = [SampleRecord(i, f"http://www.f.test/t/{i}?page={2 + i % 2}", f"http://www.f.test/t/{i}?page={2 + i % 2}",
                            200, (f"http://www.f.test/t/{i + 1}?page={2 + (i + 1) % 2}",)) for i in range(600)]
    clusters = set(train(records, Params(), []).clusters)
    assert "www.f.test/t/$?page=$" in clusters
    assert not any(c.endswith("page=2") for c in clusters)
    literal = set(train(records, Params(literal_numbers=True), []).clusters)
    assert {"www.f.test/t/$?page=2", "www.f.test/t/$?page=3"} <= literal


def test_rule_d_needs_a_listing_that_covered_a_real_share_of_the_content_with_several_links_a_page() -> None:
    from frontier.clustergraph.pruning import DUPLICATE_CONTENT, prune
    from tests.test_clustergraph_pruning import at22

    assert prune(at22()).nodes.reasons.get("TAG") == DUPLICATE_CONTENT  # the paper: TAG→POST (cov 0.7) was pruned
    floor = prune(at22(), listing_cov=0.8).nodes.reasons
    assert "TAG" not in floor and "POST" not in floor  # a pruned edge covering 0.7 < 0.8 lists too little
    assert "TAG" not in prune(at22(), listing_fan_out=11).nodes.reasons  # TAG lists 10 posts per page, not 11
    assert prune(at22(), listing_cov=0.3, listing_fan_out=3).nodes.reasons.get("TAG") == DUPLICATE_CONTENT
    assert (Params().listing_cov, Params().listing_fan_out) == (0.3, 3.0)


def test_further_pages_are_the_urls_of_another_cluster_with_a_number_parameter_added() -> None:
    assert without_number_parameters("a.test/b?sort=top&page=2") == "a.test/b?sort=top"
    assert without_number_parameters("a.test/?skip=20") == "a.test/"

    def cluster_of(url: str) -> str | None:
        path, _, query = url.partition("?")
        if path.endswith(".html"):
            return "*.lj/$.html" + ("?*=$" if query[-1:].isdigit() else "?*=*" if query else "")
        return "*.lj/" + ("?*=$" if query[-1:].isdigit() else "?*=*" if query else "")

    members = {"*.lj/?*=$": ["a.lj/?skip=20", "b.lj/?skip=40"], "*.lj/?*=*": ["a.lj/?ref=friends"],
               "*.lj/$.html?*=$": ["a.lj/5.html?page=2"], "*.lj/": ["a.lj/"], "*.lj/$.html": ["a.lj/5.html"]}
    assert paginations(members, cluster_of) == {"*.lj/?*=$": "*.lj/", "*.lj/$.html?*=$": "*.lj/$.html"}
