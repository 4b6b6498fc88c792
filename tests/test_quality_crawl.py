"""End to end: ``crawl learn quality`` on a crawl of an in-vitro web with spam hosts, then a crawl of
another web (another seed: hosts the model has never seen) with the filter, over real sockets.

Asserted from the server's request log and the WARC files: every host the filter stopped has at
most ``n`` HTML pages (what the filter reads) in the WARC files; most spam hosts were stopped and few good ones; the good hosts' pages
are all fetched, as many as without the filter; each scored host has its metadata record."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
from warcio.archiveiterator import ArchiveIterator

from bench.invitro import WebParams
from tests.invitro_harness import NO_DELAYS, WebThread, page_requests, run_crawl

PAGES = 5
PARAMS = dict(hosts=150, spam_share=0.4, mean_pages=12)


def crawl_web(tmp: Path, name: str, seed: int, settings: list[str] = (),  # type: ignore[assignment]
              agents: int = 1) -> tuple[Counter[str], dict, dict[str, bool]]:
    """Page requests per host name, stats.json, and host name → spam, of a whole crawl of the web ``seed``."""
    web = WebThread(WebParams(seed=seed, **PARAMS), tmp / f"{name}.jsonl")  # type: ignore[arg-type]
    try:
        seeds = web.web.seeds
        spam = {host: web.model.spam_kind(host) is not None for host in web.model.hosts()}
        done = run_crawl(tmp / name, seeds, dns=str(web.web.dns_address),
                         settings=[*NO_DELAYS, f"engine.processes={agents}", *settings])
    finally:
        log = web.stop()
    return Counter(r.host for r in page_requests(log)), done.stats, spam


def html_pages(out: Path) -> Counter[str]:
    """200 HTML response records per host name in a crawl's WARC files (revisits have no body to read)."""
    counts: Counter[str] = Counter()
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "response" and record.http_headers is not None and (
                    record.http_headers.get_statuscode() == "200"
                    and (record.http_headers.get_header("Content-Type") or "").startswith("text/html")
                ):
                    counts[record.rec_headers.get_header("WARC-Target-URI").split("/")[2].rsplit(":", 1)[0]] += 1
    return counts


def verdicts_of(out: Path) -> dict[str, tuple[str, int]]:
    """host name → (action, hosts per IP) of every agent's quality.csv."""
    return {line.split(",")[0].split("//")[1].rsplit(":", 1)[0]: (line.split(",")[2], int(line.split(",")[4]))
            for path in out.glob("agent-*/quality.csv") for line in path.read_text().splitlines()[1:]}


def test_a_learned_model_cuts_unseen_spam_hosts_off(tmp_path: Path) -> None:
    _, _, spam = crawl_web(tmp_path, "train", seed=11)
    labels = tmp_path / "hosts.csv"
    labels.write_text("host,label,kind\n" + "".join(f"{host},{int(s)},\n" for host, s in spam.items()))
    model = tmp_path / "model"
    learn = subprocess.run([sys.executable, "-m", "engine.cli", "learn", "quality", "--labels", str(labels),
                            "--crawl", str(tmp_path / "train"), "--out", str(model), "--pages", str(PAGES)],
                           capture_output=True, text=True, timeout=300)
    assert learn.returncode == 0, learn.stderr
    assert (model / "model.json").exists() and "mean AUC" in (model / "report.md").read_text()

    without, _, truth = crawl_web(tmp_path, "without", seed=12)
    with_, stats, truth_again = crawl_web(tmp_path, "with", seed=12,
                                          settings=[f"quality.model={model}", f"quality.pages={PAGES}"])
    assert truth == truth_again
    verdicts = {host: action for host, (action, _) in verdicts_of(tmp_path / "with").items()}
    stopped = {host for host, action in verdicts.items() if action == "stop"}
    html = html_pages(tmp_path / "with")
    assert stopped and all(html[host] <= PAGES for host in stopped)  # cut off at n HTML pages, what the filter reads
    spam_judged = [h for h in verdicts if truth[h]]
    good_judged = [h for h in verdicts if not truth[h]]
    assert spam_judged and good_judged
    assert len(stopped & set(spam_judged)) >= 0.7 * len(spam_judged), (len(stopped & set(spam_judged)), len(spam_judged))
    assert len(stopped & set(good_judged)) <= 0.15 * len(good_judged), (len(stopped & set(good_judged)), len(good_judged))
    good_without = sum(n for h, n in without.items() if not truth[h])
    good_with = sum(n for h, n in with_.items() if not truth[h])
    spam_without = sum(n for h, n in without.items() if truth[h])
    spam_with = sum(n for h, n in with_.items() if truth[h])
    print(f"good pages {good_without} -> {good_with}, spam pages {spam_without} -> {spam_with}, "
          f"stopped {len(stopped)} of {len(verdicts)} scored ({len(spam_judged)} spam)")
    assert good_with >= 0.9 * good_without
    assert spam_with < spam_without
    assert stats["quality"]["hosts_scored"] == len(verdicts) and stats["quality"]["hosts_stopped"] == len(stopped)
    assert stats["frontier"]["drops"].get("purged_quality", 0) + stats["frontier"]["drops"].get("quality", 0) > 0
    # every scored host has its metadata record, with the CSV's score
    scored = {}
    for path in (tmp_path / "with" / "warc").glob("*.warc.gz"):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "metadata" and record.rec_headers.get_header("WARC-Concurrent-To") is None:
                    fields = dict(line.split(": ", 1) for line in record.content_stream().read().decode().splitlines())
                    scored[record.rec_headers.get_header("WARC-Target-URI")] = fields["hostQualityAction"]
    assert sorted(uri.split("//")[1].rsplit(":", 1)[0] for uri in scored) == sorted(verdicts)
    assert orjson.loads((tmp_path / "with" / "stats.json").read_bytes())["config"]["quality"]["pages"] == PAGES

    # two agents: each owns about half the hosts of an IP, and still scores a host with all of them
    # (engine/ip_table.py), as one agent does and as the model learnt from the WARC files
    _, stats2, _ = crawl_web(tmp_path, "with2", seed=12, settings=[f"quality.model={model}", f"quality.pages={PAGES}"],
                             agents=2)
    one, two = verdicts_of(tmp_path / "with"), verdicts_of(tmp_path / "with2")
    assert {p.name for p in (tmp_path / "with2").glob("agent-*/quality.csv")} == {"quality.csv"} and \
        len(list((tmp_path / "with2").glob("agent-*/quality.csv"))) == 2
    mean_one = sum(n for _, n in one.values()) / len(one)
    mean_two = sum(n for _, n in two.values()) / len(two)
    print(f"hosts per IP at scoring: one agent {mean_one:.2f}, two agents {mean_two:.2f}")
    assert mean_two >= 0.85 * mean_one
    stopped2 = {host for host, (action, _) in two.items() if action == "stop"}
    spam2 = [h for h in two if truth[h]]
    assert len(stopped2 & set(spam2)) >= 0.7 * len(spam2), (len(stopped2 & set(spam2)), len(spam2))
    assert stats2["quality"]["hosts_stopped"] == len(stopped2)
