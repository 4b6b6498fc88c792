"""Rules T and F (ours): the text blocks of a page, own words, thin and feed clusters, and their deletion in
pruning and training."""

from __future__ import annotations

import xxhash
from lxml import html

from frontier.clustergraph.feeds import FEED, feed_clusters
from frontier.clustergraph.model import Params
from frontier.clustergraph.pruning import HEADER_FOOTER, prune
from frontier.clustergraph.thin import THIN_CONTENT, own_words, text_blocks, thin_clusters
from frontier.clustergraph.train import SampleRecord, train
from tests.test_clustergraph_pruning import AT22_EDGES, AT22_SIZES, toy


def block(text: str) -> tuple[int, int]:
    return xxhash.xxh3_64_intdigest(text.encode()), len(text.split())


def test_text_blocks_are_the_visible_text_nodes_in_order() -> None:
    page = html.fromstring("<html><head><title>Reply</title><style>p {}</style></head><body>"
                           "<h1> Reply  to\nthread </h1><script>var x = 1;</script><p>Hello <b>bold</b> tail</p>"
                           "<!-- hidden --><noscript>enable js</noscript><p>   </p>after</body></html>")
    assert text_blocks(page) == (block("Reply to thread"), block("Hello"), block("bold"), block("tail"),
                                 block("after"))


def test_own_words_leave_out_what_half_the_pages_show() -> None:
    header, footer = block("Site header"), block("all rights reserved")
    pages = [(header, block("one two three"), footer), (header, block("four"), footer), (header, footer),
             (block("only here twice"),)]
    assert own_words(pages) == [3, 1, 0, 3]  # the header (4 of 4) and footer (3 of 4) are template


def test_thin_clusters_by_median_own_words_and_minimum_pages() -> None:
    template = (block("Reply"), block("Post your reply below"), block("Submit"))
    texts = {f"f.test/reply?t={i}": (*template, block(f"thread {i}")) for i in range(5)}
    texts |= {f"f.test/t/{i}": (block("Thread"), block(" ".join(f"w{i}x{j}" for j in range(40)))) for i in range(5)}
    texts |= {f"f.test/faq?q={i}": template for i in range(3)}

    def cluster_of(url: str) -> str:
        return url.split("?")[0].rsplit("/", 1)[0] if "/t/" in url else url.split("?")[0]

    found = thin_clusters(texts, cluster_of, min_pages=4, max_words=10)
    assert list(found) == ["f.test/reply"]  # threads have 40 own words; the faq has too few pages to judge
    assert "median 2 words" in found["f.test/reply"]
    assert thin_clusters(texts, cluster_of, min_pages=3, max_words=10).keys() == {"f.test/reply", "f.test/faq"}
    assert thin_clusters(texts, cluster_of, min_pages=4, max_words=2) == {}


def test_pruning_deletes_what_no_other_cluster_needs() -> None:
    graph = toy(AT22_SIZES, AT22_EDGES)
    assert prune(graph).survivors == {"HOME", "POST", "PROF"}  # AT-22: D deletes TAG and protects POST
    pruned = prune(graph, by_content={node: (THIN_CONTENT, "thin") for node in ("PROF", "POST", "TERMS")})
    # TERMS goes to rule H first; POST is a leaf of E1 (its edges out were pruned), PROF is not (PROF → HOME
    # is kept); with POST gone, D has no pair left and TAG stays
    assert pruned.nodes.reasons == {"TERMS": HEADER_FOOTER, "POST": THIN_CONTENT}
    assert pruned.survivors == {"HOME", "TAG", "PROF"}


def test_a_cluster_that_links_onward_goes_only_while_another_way_in_stays() -> None:
    sizes = {"S": 10, "A": 10, "B": 10, "X": 100}
    graph = toy(sizes, [("S", "A", 1.0, 10, 10), ("S", "B", 1.0, 10, 10), ("A", "X", 0.35, 10, 35),
                        ("B", "X", 0.35, 10, 35)])
    assert prune(graph).edges.kept >= {("A", "X"), ("B", "X")}  # neither exceeds τ: both kept
    one = prune(graph, by_content={"A": (FEED, "feeds")})
    assert one.nodes.reasons == {"A": FEED} and one.survivors == {"S", "B", "X"}
    both = prune(graph, by_content={"A": (FEED, "feeds"), "B": (THIN_CONTENT, "thin")})
    assert both.nodes.reasons == {"A": FEED} and ("B", "X") in both.final_edges  # B is now X's only way in


def test_feed_clusters_are_the_clusters_of_syndication_feeds() -> None:
    types = {f"m.test/u{i}/feed": "application/rss+xml" for i in range(9)} | {"m.test/c/news": "text/html"}
    types |= {f"m.test/u{i}/atom": "application/atom+xml" for i in range(3)}
    types |= {f"m.test/u{i}/data": "application/xml" for i in range(5)}  # generic XML is no evidence of a feed
    types |= {f"m.test/t/{i}": "text/html" for i in range(20)}

    def cluster_of(url: str) -> str:
        return url.rsplit("/", 1)[1] if "/u" in url or "/c/" in url else "thread"

    assert feed_clusters(types, cluster_of) == {"feed": "9 of 9 sampled pages are syndication feeds"}
    assert feed_clusters(types, cluster_of, min_pages=10) == {}
    def mixed(url: str) -> str:
        return "mixed" if "/u" in url or "/c/" in url else "thread"

    assert feed_clusters(types, mixed) == {"mixed": "12 of 18 sampled pages are syndication feeds"}  # a majority
    assert feed_clusters(types, mixed, min_share=0.7) == {}


def forum(content: bool) -> list[SampleRecord]:
    """Board pages listing threads; threads with their own text, each linking its board, its reply form,
    its feed and two other threads; the forms of half of them link back. ``content``: the records carry
    their text and media type."""
    records: list[SampleRecord] = []
    html_type, rss = ("text/html", "application/rss+xml") if content else (None, None)
    form = (block("Reply"), block("Write your reply"), block("Post reply"), block("Back"))
    for b in range(12):
        board = f"http://f.test/board?page={b}"
        listed = tuple(f"http://f.test/t/{t}/slug" for t in range(10 * b, 10 * b + 10))
        records.append(SampleRecord(len(records), board, board, 200, listed,
                                    (block(f"board {b} " * 20),) if content else None, html_type))
    for t in range(120):
        thread, reply, feed = f"http://f.test/t/{t}/slug", f"http://f.test/post/reply?t={t}", f"http://f.test/t/{t}/rss"
        text = (block("Thread"), *(block(f"comment {t} {j} " + "word " * j) for j in range(10)))
        others = (f"http://f.test/board?page={t // 10}", *(f"http://f.test/t/{(t + k) % 120}/slug" for k in (1, 7)))
        records.append(SampleRecord(len(records), thread, thread, 200, (reply, feed, *others),
                                    text if content else None, html_type))
        if t % 2 == 0:  # half the threads have a reply form: the boards cover the threads better than the forms
            records.append(SampleRecord(len(records), reply, reply, 200, (thread,), form if content else None, html_type))
        if t % 3 == 0:
            records.append(SampleRecord(len(records), feed, feed, 200, (), None, rss))
    return records


def test_training_deletes_thin_and_feed_leaf_clusters_when_the_content_was_read() -> None:
    seeds = ["http://f.test/board?page=0"]
    model = train(forum(content=True), Params(), seeds)
    assert model.deleted == {"f.test/post/reply?t=$": THIN_CONTENT, "f.test/t/$/rss": FEED}
    assert "words of their own" in model.clusters["f.test/post/reply?t=$"].note
    assert model.clusters["f.test/t/$/rss"].note == "40 of 40 sampled pages are syndication feeds"
    assert train(forum(content=False), Params(), seeds).deleted == {}
    assert train(forum(content=True), Params(thin_words=0), seeds).deleted == {"f.test/t/$/rss": FEED}
    assert train(forum(content=True), Params(feeds=False), seeds).deleted == {"f.test/post/reply?t=$": THIN_CONTENT}
    assert train(forum(content=True), Params(literal=True), seeds).deleted == {}


def test_sample_records_keep_their_blocks_through_json() -> None:
    record = SampleRecord(3, "http://f.test/a", "http://f.test/a", 200, ("http://f.test/b",), (block("x y"), (1, 0)))
    assert SampleRecord.from_json(record.to_json()) == record
    old = SampleRecord(4, "http://f.test/c", "http://f.test/c", 301, ("http://f.test/d",))
    assert "blocks" not in old.to_json() and SampleRecord.from_json(old.to_json()) == old
    redirect = SampleRecord(5, "http://f.test/e", "http://f.test/e", 301, ("http://f.test/f",), ())
    assert SampleRecord.from_json(redirect.to_json()).blocks == ()
    feed = SampleRecord(6, "http://f.test/rss", "http://f.test/rss", 200, (), None, "application/rss+xml")
    assert SampleRecord.from_json(feed.to_json()) == feed
