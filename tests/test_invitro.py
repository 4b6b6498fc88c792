"""The in-vitro web (bench/invitro/): the model's promises, then the servers on real loopback sockets.

Model tests compute pages without a server. Server tests start one in-process web per test
(``start_invitro``), talk raw HTTP/1.1 over asyncio streams (so every byte on the wire is
the test's choice), and read the request log back after ``close()`` has flushed it. Waits
are on futures with timeouts, never sleeps.
"""

from __future__ import annotations

import asyncio
import gzip
import signal
import socket
import statistics
import struct
import sys
from collections import Counter, deque
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import aiodns
import lxml.html
import orjson
import pytest

from bench.invitro import InVitro, ServerOptions, WebModel, WebParams, ip_addresses, read_log, start_invitro

PORT = 8080
SMALL = WebParams(hosts=12, mean_pages=20, seed=7)
TIMEOUT = 10


# The model, without sockets.


def test_same_url_gives_the_same_bytes_in_two_models_and_another_seed_changes_them() -> None:
    one, two = WebModel(SMALL, PORT), WebModel(SMALL, PORT)
    other = WebModel(WebParams(hosts=12, mean_pages=20, seed=8), PORT)
    for host in one.hosts()[:4]:
        for target in [*one.paths(host)[:5], "/robots.txt", "/nothing.html"]:
            a, b = one.respond(host, target), two.respond(host, target)
            assert (a.status, a.headers, a.body, a.links) == (b.status, b.headers, b.body, b.links)
    assert one.respond("h00001.web.test", "/").body != other.respond("h00001.web.test", "/").body


def test_hosts_share_ips_in_loopback_and_spill_into_the_next_block() -> None:
    model = WebModel(WebParams(hosts=10, hosts_per_ip=4), PORT)
    assert model.hosts()[:2] == ["h00000.web.test", "h00001.web.test"]
    assert [model.ip_of(h) for h in model.hosts()] == ["127.0.1.1"] * 4 + ["127.0.1.2"] * 4 + ["127.0.1.3"] * 2
    assert model.ip_of("H00005.WEB.TEST") == "127.0.1.2"
    with pytest.raises(KeyError):
        model.ip_of("h10.web.test")
    ips = ip_addresses(WebParams(hosts=600, hosts_per_ip=1))
    assert len(set(ips)) == 600 and ips[253:255] == ["127.0.1.254", "127.0.2.1"]
    assert all(ip.startswith("127.") and not ip.endswith((".0", ".255")) for ip in ips)
    for base in ("127.255.255.250", "10.0.0.0"):
        with pytest.raises(ValueError):
            WebParams(hosts=40, ip_base=base)
    assert model.seeds(2) == ["http://h00000.web.test:8080/", "http://h00001.web.test:8080/"]


def test_sizes_and_out_degrees_are_about_as_configured() -> None:
    params = WebParams(hosts=30, mean_pages=20, mean_links=30, page_bytes=12000)
    model = WebModel(params, PORT)
    sizes, degrees, pages = [], [], []
    for host in model.hosts():
        paths = model.paths(host)
        pages.append(len(paths))
        for target in paths[:10]:
            response = model.respond(host, target)
            if response.status == 200 and response.content_type.startswith("text/html"):
                sizes.append(len(response.body))
                degrees.append(sum(tag != "link" for tag in response.tags))
    assert 0.8 * 12000 < statistics.mean(sizes) < 1.3 * 12000
    assert 0.6 * 30 < statistics.mean(degrees) < 1.4 * 30
    assert 0.5 * 20 < statistics.mean(pages) < 1.6 * 20 and max(pages) > 2 * min(pages)


def parsed_links(url: str, body: bytes) -> tuple[list[str], list[bool]]:
    """What a correct parser extracts: href/src of a, link, area, iframe, resolved, without fragment."""
    document = lxml.html.fromstring(body)
    base = urljoin(url, document.xpath("//base/@href")[0]) if document.xpath("//base/@href") else url
    links, nofollow = [], []
    for element in document.iter("a", "link", "area", "iframe"):
        href = element.get("src" if element.tag == "iframe" else "href")
        if href is None or href.startswith(("mailto:", "javascript:")):
            continue
        links.append(urldefrag(urljoin(base, href))[0])
        nofollow.append("nofollow" in (element.get("rel") or ""))
    return links, nofollow


def test_links_as_written_resolve_to_the_listed_links_and_each_is_answered() -> None:
    model = WebModel(SMALL, PORT)
    statuses: Counter[int] = Counter()
    kinds: Counter[str] = Counter()
    for host in model.hosts()[:6]:
        for target in model.paths(host):
            url = f"http://{host}:{PORT}{target}"
            response = model.respond(host, target)
            if response.status != 200:
                continue
            assert parsed_links(url, response.body) == (response.links, response.nofollow)
            kinds.update(response.tags)
            for link in response.links:
                answer = model.respond_url(link)
                statuses[answer.status] += 1
                assert answer.status == 404 if "/missing/" in link else answer.status in (200, 301, 302, 404, 500)
    assert statuses[200] > 10 * (statuses[404] + statuses[500]) and statuses[404] > 0
    assert kinds["a"] > 20 * kinds["iframe"] > 0 and kinds["area"] > 0 and kinds["link"] > 0
    assert "Disallow" not in model.respond("h00000.web.test", "/").body.decode()


def test_variants_of_links_all_occur() -> None:
    model = WebModel(SMALL, PORT)
    bodies = b"".join(model.respond(host, t).body for host in model.hosts()[:4] for t in model.paths(host))
    for needle in (b'href="../', b'href="/', b'href="http://', b'href="//', b'href="./', b"#", b"<base href=",
                   b'rel="nofollow"', b"utm_source=", b"&amp;lang=en", b".pdf", b".png", b"/missing/", b"<iframe"):
        assert needle in bodies, needle


def test_breadth_first_from_the_seeds_reaches_most_of_the_web() -> None:
    model = WebModel(SMALL, PORT)
    all_pages = {f"http://{h}:{PORT}{t}" for h in model.hosts() for t in model.paths(h)}
    seen = set(model.seeds(3))
    queue = deque(seen)
    while queue:
        for link in model.respond_url(queue.popleft()).links:
            if link not in seen:
                seen.add(link)
                queue.append(link)
    assert len(all_pages & seen) > 0.8 * len(all_pages)


def test_statuses_redirects_and_binary_files() -> None:
    model = WebModel(WebParams(hosts=40, frac_404=0.1, frac_500=0.05, frac_redirect=0.1, frac_binary=0.05), PORT)
    statuses: Counter[int] = Counter()
    for host in model.hosts():
        info = model.host_info(host)
        assert info is not None
        for target in model.paths(host):
            response = model.respond(host, target)
            statuses[response.status] += 1
            if response.status in (301, 302):
                location = dict(response.headers)["Location"]
                assert urljoin(f"http://{host}:{PORT}{target}", location) == response.links[0]
                assert urlsplit(location).hostname in (None, host)
                assert model.respond_url(response.links[0]).status not in (301, 302)
        for k in range(info.files):
            response = model.respond(host, model.file_path(info, k))
            assert response.status == 200 and response.content_type in ("application/pdf", "image/png")
            assert not response.compressible and len(response.body) > 1000
    total = sum(statuses.values())
    assert 0.06 < statuses[404] / total < 0.14 and 0.02 < statuses[500] / total < 0.08
    assert 0.06 < (statuses[301] + statuses[302]) / total < 0.14 and statuses[301] and statuses[302]
    assert model.respond("h00000.web.test", "/").status == 200
    assert model.respond("nowhere.test", "/").status == 404
    assert model.respond("h00000.web.test", "/section1/page999999.html").status == 404


def test_robots_variants_all_occur_and_disallow_real_paths() -> None:
    model = WebModel(WebParams(hosts=300), PORT)
    statuses: Counter[int] = Counter()
    disallow = delay = 0
    for host in model.hosts():
        status, body = model.robots_txt(host)
        statuses[status] += 1
        disallow += b"Disallow: /private/" in body
        delay += b"Crawl-delay: 0.5" in body
    assert statuses[200] > 150 and 30 < statuses[404] < 100 and statuses[500] and statuses[503]
    assert 20 < disallow < 90 and 8 < delay < 50
    assert any(t.startswith("/private/") for h in model.hosts()[:20] for t in model.paths(h))


def test_utm_variant_is_the_same_page_and_other_queries_are_not() -> None:
    model = WebModel(SMALL, PORT)
    host = "h00002.web.test"
    target = next(t for t in model.paths(host) if "?" not in t and t != "/" and model.respond(host, t).status == 200)
    assert model.respond(host, target + "?utm_source=feed").body == model.respond(host, target).body
    assert model.respond(host, target + "?utm_source=other").status == 404


# The servers, on loopback sockets.


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[InVitro]:
    web = await start_invitro(SMALL, log_path=tmp_path / "requests.jsonl")
    yield web
    await web.close()


async def exchange(address: tuple[str, int], requests: list[bytes]) -> list[tuple[int, dict[str, str], bytes]]:
    """Send requests on one connection (pipelined) and read as many responses: (status, headers, body)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), TIMEOUT)
    writer.write(b"".join(requests))
    answers = []
    for _ in requests:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while size := int(await reader.readline(), 16):
                body += await reader.readexactly(size)
                await reader.readline()
            await reader.readline()
        else:
            body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), TIMEOUT)
        answers.append((int(lines[0].split()[1]), headers, body))
    writer.close()
    return answers


def get(target: str, host: str, *extra: str) -> bytes:
    return "\r\n".join([f"GET {target} HTTP/1.1", f"Host: {host}", *extra, "", ""]).encode()


def proxy_address(web: InVitro) -> tuple[str, int]:
    assert web.proxy_address is not None
    host, port = web.proxy_address.split(":")
    return host, int(port)


async def test_origin_and_proxy_form_give_the_model_body_and_the_log_says_so(web: InVitro, tmp_path: Path) -> None:
    host = "h00005.web.test"
    ip = web.model.ip_of(host)
    [(status, headers, body)] = await exchange((ip, web.port), [get("/", host)])
    url = f"http://{host}:{web.port}/"
    [(status2, _, body2)] = await exchange(proxy_address(web), [get(url, f"{host}:{web.port}")])
    [(missing, _, _)] = await exchange((ip, web.port), [get("/", "unknown.example")])
    assert status == status2 == 200 and body == body2 == web.model.respond(host, "/").body
    assert headers["content-type"].startswith("text/html") and missing == 404
    await web.close()
    records = read_log(tmp_path / "requests.jsonl")
    assert [(r.host, r.ip, r.local, r.proxy, r.status, r.bytes) for r in records] == [
        (host, ip, ip, False, 200, len(body)),
        (host, ip, "127.0.0.1", True, 200, len(body)),
        ("unknown.example", None, ip, False, 404, records[2].bytes),
    ]
    assert all(r.start <= r.end for r in records) and len({r.conn for r in records}) == 3


async def test_keep_alive_serves_pipelined_requests_on_one_connection_and_close_ends_it(
    web: InVitro, tmp_path: Path
) -> None:
    host = "h00001.web.test"
    address = (web.model.ip_of(host), web.port)
    answers = await exchange(address, [get("/", host), get("/robots.txt", host), get("/", host, "Connection: close")])
    assert [a[0] for a in answers[:2]] == [200, web.model.robots_txt(host)[0]]
    assert "connection" not in answers[0][1] and answers[2][1]["connection"] == "close"
    reader, writer = await asyncio.open_connection(*address)
    writer.write(get("/", host, "Connection: close"))
    data = await asyncio.wait_for(reader.read(), TIMEOUT)  # read() returns at EOF: the server closed
    assert data.startswith(b"HTTP/1.1 200 OK")
    writer.close()
    await web.close()
    assert len({r.conn for r in read_log(tmp_path / "requests.jsonl")[:3]}) == 1


async def test_gzip_when_asked_and_not_for_binary_files(web: InVitro) -> None:
    host = "h00003.web.test"
    info = web.model.host_info(host)
    assert info is not None and info.files
    binary = web.model.file_path(info, 0)
    answers = await exchange(
        (web.model.ip_of(host), web.port),
        [get("/", host, "Accept-Encoding: gzip, deflate"), get("/", host), get(binary, host, "Accept-Encoding: gzip")],
    )
    (_, zipped_headers, zipped), (_, plain_headers, plain), (_, binary_headers, data) = answers
    assert zipped_headers["content-encoding"] == "gzip" and gzip.decompress(zipped) == plain
    assert len(zipped) < len(plain) / 2 and "content-encoding" not in plain_headers
    assert "content-encoding" not in binary_headers and data == web.model.respond(host, binary).body


async def test_server_knobs_close_chunked_and_slow(tmp_path: Path) -> None:
    params = WebParams(hosts=4, mean_pages=5, frac_slow=1.0, slow_seconds=0.2)
    options = ServerOptions(keepalive=False, chunked=True, gzip=False)
    web = await start_invitro(params, log_path=tmp_path / "log.jsonl", options=options, proxy=False, dns=False)
    try:
        host = "h00000.web.test"
        address = (web.model.ip_of(host), web.port)
        [(status, headers, body)] = await exchange(address, [get("/", host, "Accept-Encoding: gzip")])
        assert status == 200 and headers["connection"] == "close" and headers["transfer-encoding"] == "chunked"
        assert body == web.model.respond(host, "/").body and "content-encoding" not in headers
    finally:
        await web.close()
    [record] = read_log(tmp_path / "log.jsonl")
    assert record.end - record.start >= 0.2 and not record.gzip and not record.aborted


async def test_dns_answers_model_hosts_and_nothing_else(web: InVitro) -> None:
    assert web.dns_address is not None
    resolver = aiodns.DNSResolver(nameservers=[web.dns_address], timeout=2, tries=1)
    result = await asyncio.wait_for(resolver.query_dns("h00009.web.test", "A"), TIMEOUT)
    assert [(r.data.addr, r.ttl) for r in result.answer] == [(web.model.ip_of("h00009.web.test"), 300)]
    for name in ("h99999.web.test", "example.com"):
        with pytest.raises(aiodns.error.DNSError) as failure:
            await asyncio.wait_for(resolver.query_dns(name, "A"), TIMEOUT)
        assert failure.value.args[0] == aiodns.error.ARES_ENOTFOUND
    with pytest.raises(aiodns.error.DNSError) as failure:
        await asyncio.wait_for(resolver.query_dns("h00009.web.test", "AAAA"), TIMEOUT)
    assert failure.value.args[0] == aiodns.error.ARES_ENODATA
    # The same over TCP: a two-byte length, then the message.
    host, port = web.dns_address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    query = struct.pack("!HHHHHH", 77, 0x0100, 1, 0, 0, 0) + b"\x06h00002\x03web\x04test\x00" + struct.pack("!HH", 1, 1)
    writer.write(struct.pack("!H", len(query)) + query)
    (length,) = struct.unpack("!H", await asyncio.wait_for(reader.readexactly(2), TIMEOUT))
    reply = await asyncio.wait_for(reader.readexactly(length), TIMEOUT)
    writer.close()
    assert reply[:2] == query[:2] and reply[-4:] == socket.inet_aton(web.model.ip_of("h00002.web.test"))
    assert web.statistics()["dns"]["queries"] >= 5


async def test_python_m_bench_invitro_serves_until_sigterm_and_flushes_its_log(tmp_path: Path) -> None:
    ready, log, stats = tmp_path / "ready.json", tmp_path / "log.jsonl", tmp_path / "stats.json"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.invitro", "--hosts", "8", "--ready-file", str(ready), "--log", str(log),
        "--stats", str(stats), "--set", "mean_pages=5", "--seeds", "3",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        first = await asyncio.wait_for(child.stdout.readline(), 30)  # printed after the ready file is in place
        assert first.startswith(b"invitro: ")
        info = orjson.loads(ready.read_bytes())
        assert info["hosts"] == 8 and len(info["seeds"]) == 3 and info["pid"] == child.pid
        assert info["ips"] == ["127.0.1.1", "127.0.1.2"] and info["params"]["mean_pages"] == 5
        host, port = info["proxy"].split(":")
        [(status, _, _)] = await exchange((host, int(port)), [get(info["seeds"][1], "h00001.web.test")])
        assert status == 200
        child.send_signal(signal.SIGTERM)
        output, _ = await asyncio.wait_for(child.communicate(), 30)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    assert child.returncode == 0 and b"invitro: stats" in output
    [record] = read_log(log)
    assert (record.host, record.target, record.status, record.proxy) == ("h00001.web.test", "/", 200, True)
    assert orjson.loads(stats.read_bytes())["requests"] == 1
