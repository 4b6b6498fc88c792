"""SOUrCe end to end: ``crawl learn source`` on the lab's forum, then ``crawl run`` with both policies.

Over loopback against the in-vitro server and its DNS, judged from the server's request log
with the lab's ground truth: the learning downloads are what ``sampling.json`` says and are
charged to no crawl (A18); every crawl fetches exactly its budget, each URL once, none off
the site (AT-15); crawling-for-UCC harvests a larger share of user-created content than a
breadth-first crawl of the same budget, and crawling-for-target a far larger share of its
target type (issue 14's targets are measured at full size by ``bench/source_eval.py``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from bench.invitro.social.web import SocialParams, SocialWeb
from frontier.source.model import Model
from frontier.source.train import read_sample
from tests.invitro_harness import LabCrawl, crawl_lab, learn_lab

LEARN_PAGES = 300
BUDGET = 600


def truths(crawl: LabCrawl, web: SocialWeb) -> list:  # type: ignore[type-arg]
    return [web.truth(r.host, r.target) for r in crawl.records if r.method == "GET" and r.target != "/robots.txt"]


def test_learn_then_crawl_for_ucc_and_for_a_target(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as pool:  # the breadth-first crawl needs no model: it runs while the learner does
        later = pool.submit(crawl_lab, tmp_path, "forum", "bfs", BUDGET, [])
        model_dir, downloads = learn_lab(tmp_path, "forum", "source", LEARN_PAGES)
        bfs = later.result()
    figures = orjson.loads((model_dir / "sampling.json").read_bytes())
    assert figures["downloads"] == downloads <= LEARN_PAGES
    for name in ("model.json", "matrix.npy", "report.md", "graph.svg", "sample.jsonl"):
        assert (model_dir / name).stat().st_size > 0, name
    model = Model.load(model_dir)
    assert model.n_clusters >= 3 and len(model.table) > 10, model.clusters

    web = SocialWeb(SocialParams(("forum",)), 80)
    threads = [p.final_url for p in read_sample(model_dir / "sample.jsonl")
               if web.truth_of_url(p.final_url).type == "thread"]
    ucc = crawl_lab(tmp_path, "forum", "ucc", BUDGET, ["--policy", "source-ucc", "--model", str(model_dir)])
    target = crawl_lab(tmp_path, "forum", "target", BUDGET, [
        "--policy", "source-target", "--model", str(model_dir), "--target-example", threads[0]])

    for crawl in (bfs, ucc, target):  # AT-15
        requested = [(r.host, r.target) for r in crawl.records]
        assert len(requested) == BUDGET and len(set(requested)) == BUDGET
        assert {web.site_of(host) for host, _ in requested} == {web.site_named("forum")}
    pages = ucc.stats["policy"]["cluster_pages"]
    assert 0 < sum(pages.values()) <= BUDGET, pages  # every HTML page was classified, outliers included

    def share(crawl: LabCrawl, test: object) -> float:
        found = truths(crawl, web)
        return sum(1 for t in found if test(t)) / len(found)  # type: ignore[operator]

    is_ucc, is_thread = (lambda t: t.ucc), (lambda t: t.type == "thread")
    assert share(ucc, is_ucc) >= max(0.95, share(bfs, is_ucc)), (share(ucc, is_ucc), share(bfs, is_ucc))
    assert share(target, is_thread) >= max(0.85, share(bfs, is_thread) + 0.1), \
        (share(target, is_thread), share(bfs, is_thread))
