"""bench/invitro: the duplicates, near-duplicates and hostile resources that issue 5's tests crawl, off by default."""

from __future__ import annotations

import zlib

from bench.invitro.hostile import TARGETS, bomb
from bench.invitro.model import WebModel, WebParams, copy_of
from frontier.urls import canonicalize

PORT = 8080


def test_off_by_default_the_web_has_no_copies_and_no_hostile_resources() -> None:
    model = WebModel(WebParams(hosts=30), PORT)
    for host in model.hosts():
        home = model.respond(host, "/")
        assert not [u for u in home.links if "mirror=" in u or "edition=" in u or "/hostile/" in u]
        assert model.respond(host, "/hostile/big.html").status == 404
        assert model.respond(host, "/?mirror=1").status == 404


def test_copies_are_byte_identical_and_editions_differ_in_one_number() -> None:
    model = WebModel(WebParams(hosts=10, duplicate_share=0.5, duplicate_copies=3), PORT)
    found = 0
    for host in model.hosts():
        info = model.host_info(host)
        assert info is not None
        for i, path in enumerate(model.paths(host)):
            original = model.respond(host, path)
            if not model.is_duplicated(info, i) or original.status != 200:
                continue
            found += 1
            sep = "&" if "?" in path else "?"
            copies = [f"{info.origin}{path}{sep}{kind}={k}" for kind in ("mirror", "edition") for k in (1, 2, 3)]
            assert copies == [u for u in original.links if u in copies], "the page links its copies"
            for url in copies:  # as the crawler fetches them: query parameters sorted by name
                assert model.respond_url(canonicalize(url)).body == model.respond_url(url).body
            for k in (1, 2, 3):
                assert model.respond(host, f"{path}{sep}mirror={k}").body == original.body
                edition = model.respond(host, f"{path}{sep}edition={k}").body
                assert edition == original.body.replace(b">Edition 0<", b">Edition %d<" % k)
            assert model.respond(host, f"{path}{sep}mirror=4").status == 404
    assert found > 5


def test_copy_of_reads_the_last_copy_argument_wherever_it_stands() -> None:
    assert copy_of("/a?mirror=2") == ("/a", "mirror", 2)
    assert copy_of("/list?page=3&edition=1") == ("/list?page=3", "edition", 1)
    assert copy_of("/list?edition=1&page=3") == ("/list?page=3", "edition", 1)
    assert copy_of("/item?edition=2&id=5&lang=en") == ("/item?id=5&lang=en", "edition", 2)
    assert copy_of("/a?mirror=1&mirror=2") == ("/a?mirror=1", "mirror", 2)
    assert copy_of("/list?mirror=x") == ("/list?mirror=x", "", 0)
    assert copy_of("/amirror=1") == ("/amirror=1", "", 0)


def test_hostile_hosts_link_their_resources_from_home() -> None:
    model = WebModel(WebParams(hosts=20, hostile_share=0.5, bomb_bytes=1 << 20, big_bytes=50_000), PORT)
    hostile = [h for h in model.hosts() if model.is_hostile(model.host_info(h))]  # type: ignore[arg-type]
    assert 0 < len(hostile) < 20
    host = hostile[0]
    home = model.respond(host, "/")
    assert [u for u in home.links if "/hostile/" in u] == [f"http://{host}:{PORT}{t}" for t in TARGETS]
    gz = model.respond(host, "/hostile/bomb-gzip.html")
    assert ("Content-Encoding", "gzip") in gz.headers and len(zlib.decompress(gz.body, 31)) == 1 << 20
    assert len(gz.body) < 5000 and bomb("gzip", 1 << 20) is bomb("gzip", 1 << 20)
    assert len(model.respond(host, "/hostile/big.html").body) == 50_000
