"""Rule T (ours): the text blocks of a page, own words, thin clusters, and their deletion in pruning and training."""

from __future__ import annotations

import xxhash
from lxml import html

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


def test_pruning_deletes_thin_leaves_only() -> None:
    graph = toy(AT22_SIZES, AT22_EDGES)
    assert prune(graph).survivors == {"HOME", "POST", "PROF"}  # AT-22: D deletes TAG and protects POST
    pruned = prune(graph, thin={"PROF": "thin", "POST": "thin", "TERMS": "thin"})
    # TERMS goes to rule H first; POST is a leaf of E1 (its edges out were pruned), PROF is not (PROF → HOME
    # is kept); with POST gone, D has no pair left and TAG stays
    assert pruned.nodes.reasons == {"TERMS": HEADER_FOOTER, "POST": THIN_CONTENT}
    assert pruned.survivors == {"HOME", "TAG", "PROF"}


def forum(blocks: bool) -> list[SampleRecord]:
    """Board pages listing threads; threads with their own text, each linking its board, its reply form
    and two other threads; the forms of half of them link back."""
    records: list[SampleRecord] = []
    form = (block("Reply"), block("Write your reply"), block("Post reply"), block("Back"))
    for b in range(12):
        board = f"http://f.test/board?page={b}"
        listed = tuple(f"http://f.test/t/{t}/slug" for t in range(10 * b, 10 * b + 10))
        records.append(SampleRecord(len(records), board, board, 200, listed, (block(f"board {b} " * 20),)))
    for t in range(120):
        thread, reply = f"http://f.test/t/{t}/slug", f"http://f.test/post/reply?t={t}"
        text = (block("Thread"), *(block(f"comment {t} {j} " + "word " * j) for j in range(10)))
        others = (f"http://f.test/board?page={t // 10}", *(f"http://f.test/t/{(t + k) % 120}/slug" for k in (1, 7)))
        records.append(SampleRecord(len(records), thread, thread, 200, (reply, *others), text if blocks else None))
        if t % 2 == 0:  # half the threads have a reply form: the boards cover the threads better than the forms
            records.append(SampleRecord(len(records), reply, reply, 200, (thread,), form if blocks else None))
    return records


def test_training_deletes_a_thin_leaf_cluster_when_the_text_was_read() -> None:
    seeds = ["http://f.test/board?page=0"]
    model = train(forum(blocks=True), Params(), seeds)
    assert model.deleted == {"f.test/post/reply?t=$": THIN_CONTENT}
    assert "words of their own" in model.clusters["f.test/post/reply?t=$"].note
    for without in (train(forum(blocks=False), Params(), seeds), train(forum(blocks=True), Params(thin_words=0), seeds),
                    train(forum(blocks=True), Params(literal=True), seeds)):
        assert "f.test/post/reply?t=$" in without.survivors


def test_sample_records_keep_their_blocks_through_json() -> None:
    record = SampleRecord(3, "http://f.test/a", "http://f.test/a", 200, ("http://f.test/b",), (block("x y"), (1, 0)))
    assert SampleRecord.from_json(record.to_json()) == record
    old = SampleRecord(4, "http://f.test/c", "http://f.test/c", 301, ("http://f.test/d",))
    assert "blocks" not in old.to_json() and SampleRecord.from_json(old.to_json()) == old
    redirect = SampleRecord(5, "http://f.test/e", "http://f.test/e", 301, ("http://f.test/f",), ())
    assert SampleRecord.from_json(redirect.to_json()).blocks == ()
