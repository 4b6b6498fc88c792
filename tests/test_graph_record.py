"""store/linkgraph.py: a page's graph record, written in C (store/_graph.c), is what the Python writes.

The Python (``encode_record_python``) is the oracle; the records are also read back with ``records``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from store import _graph
from store.linkgraph import GraphWriter, encode_record, encode_record_python, host_of, node_id, records

# URL-ish strings with the pieces host_of cuts at, in odd places too, and non-ASCII text
PIECE = st.sampled_from(["http", "https", "://", ":", "/", "//", "h1.example", "H2.example:8000", "p", "?q=1", "é",
                         "\u2603", "\U0001f600", "x", ""])
URLISH = st.lists(PIECE, max_size=8).map("".join)


@given(st.integers(0, 2**64 - 1), URLISH, st.lists(st.one_of(URLISH, st.sampled_from(["http://a/1", "http://a/2",
                                                                                        "https://b:8/x"])), max_size=40))
@example(0, "http://a/", ["http://a/", "http://a/", "http://b/c", "x/y://z/w", "a://", "http://", "nohost"])
@example(2**64 - 1, "", [])
def test_the_c_record_is_the_python_record(offset: int, url: str, links: list[str]) -> None:
    assert _graph.encode_record(offset, url, links) == encode_record_python(offset, url, links)


def test_a_lone_surrogate_is_left_to_the_python() -> None:
    links = ["http://a/\udcff", "http://b/"]
    assert _graph.encode_record(1, "http://s/", links) is None
    assert encode_record(1, "http://s/", links) == encode_record_python(1, "http://s/", links)


@pytest.mark.parametrize("offset", [-1, 2**64])
def test_an_offset_out_of_range_is_refused(offset: int) -> None:
    with pytest.raises(OverflowError):
        _graph.encode_record(offset, "http://a/", [])


def test_records_read_back_with_their_ids(tmp_path: Path) -> None:
    writer = GraphWriter(tmp_path, "x.warc.gz")
    links = ["http://a.example/1", "http://b.example:81/2", "http://a.example/1", "http://a.example/3"]
    writer.add(123, "http://s.example/p", links)
    writer.finish()
    [record] = records(tmp_path / "x.graph")
    assert (record.offset, record.src, record.url) == (123, node_id("http://s.example/p"), "http://s.example/p")
    assert record.src_host == node_id("s.example")
    assert list(record.links) == [node_id(u) for u in dict.fromkeys(links)]
    assert list(record.hosts) == [node_id(h) for h in dict.fromkeys(map(host_of, links))]
