"""The SOUrCe crawl policies (frontier/policies/source.py) in process, on a small hand-written HTML site.

A site of four templates, each page an HTML document: board lists (rows ``a.title`` to
threads, ``a.page`` to the next board page, ``a.help`` in the footer), threads (``a.user`` to
profiles, ``a.related`` to other threads, ``a.reply`` to a login form, ``a.help``), profiles
(``a.thread`` to threads, ``a.help``) and help pages (``a.help``). The model is learnt from it
with the learner's own code (``xpath_bag``, ``link_groups``, ``train``), then the policies are
driven through their hooks as the frontier drives them: ``on_fetched`` with the parsed
document, ``priority`` for each new link, ``lane_rank`` when choosing.

Checked: the digest's harvest rules (§2.12, §3.2, §3.3, §3.5; AT-12's re-applied Balance,
AT-16's nothing-filtered), the target example's errors, and state across a resume.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from engine.parse import extract_links
from frontier.page import FetchedPage
from frontier.policies.source import FIRST_ROW_LANE, NO_ROW_LANE, SEED_LANE, SourceTarget, SourceUcc
from frontier.policy import PolicyError
from frontier.source.features import link_groups, xpath_bag
from frontier.source.model import Model, Params
from frontier.source.train import SamplePage, train

SITE = "http://forum.test"


def links(role: str, urls: list[str], wrap: str = "div") -> str:
    return f"<{wrap} class=\"{role}s\">" + "".join(f'<a class="{role}" href="{u}">x</a>' for u in urls) + f"</{wrap}>"


def board(i: int) -> str:
    rows = "".join(f'<tr><td><a class="title" href="{SITE}/t/{i * 3 + k}">t</a></td><td>n</td></tr>'
                   for k in range(2 + i % 3))
    return (f"<html><head><title>b</title></head><body><h1>Board</h1><table>{rows}</table>"
            f"{links('page', [f'{SITE}/f?page={(i + 1) % 8}'])}<footer>{links('help', [f'{SITE}/help/a'], 'p')}"
            "</footer></body></html>")


def thread(j: int) -> str:
    posts = "".join(f'<article><p>post</p><p>more</p><a class="user" href="{SITE}/u/{(j + k) % 8}">u</a>'
                    f'<a class="reply" href="{SITE}/login?r={j}-{k}">r</a></article>' for k in range(2 + j % 3))
    return (f"<html><head><title>t</title></head><body><h1>Thread</h1>{posts}"
            f"{links('related', [f'{SITE}/t/{(j + 1) % 24}', f'{SITE}/t/{(j + 5) % 24}'], 'ul')}"
            f"<footer>{links('help', [f'{SITE}/help/a'], 'p')}</footer></body></html>")


def profile(u: int) -> str:
    bio = "<p>bio</p>" * (1 + u % 4) + '<img src="a.png"/>' * (u % 2)
    return (f"<html><head><title>u</title></head><body><h1>User</h1><section>{bio}"
            f"{links('thread', [f'{SITE}/t/{u + 8 * k}' for k in range(1 + u % 3)])}</section>"
            f"<footer>{links('help', [f'{SITE}/help/a'], 'p')}</footer></body></html>")


def help_page(name: str) -> str:
    return (f"<html><head><title>h</title></head><body><form><input/><input/><button>go</button></form>"
            f"<footer>{links('help', [f'{SITE}/help/{o}' for o in 'abcd'], 'p')}</footer></body></html>")


PAGES = {
    **{f"{SITE}/f?page={i}": board(i) for i in range(8)},
    **{f"{SITE}/t/{j}": thread(j) for j in range(24)},
    **{f"{SITE}/u/{u}": profile(u) for u in range(8)},
    **{f"{SITE}/help/{n}": help_page(n) for n in "abcd"},
    **{f"{SITE}/login?r={j}-{k}": help_page("login") for j in range(24) for k in range(4)},
}


def document(url: str) -> object:
    return extract_links(PAGES[url].encode(), url, want_document=True).document


def fetched(url: str) -> FetchedPage:
    parsed = extract_links(PAGES[url].encode(), url, want_document=True)
    return FetchedPage(url, 200, {"content-type": "text/html"}, b"", 0.0, parsed.document, tuple(parsed.links))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sample = [url for url in PAGES if "/login" not in url] + [f"{SITE}/login?r={j}-0" for j in range(6)]
    pages = [SamplePage(seq, url, url, dict(xpath_bag(document(url))), link_groups(document(url), url, "forum.test"))
             for seq, url in enumerate(sample)]
    model = train(pages, Params(min_df=1, eps=0.25), "forum.test")
    folder = tmp_path_factory.mktemp("model")
    model.save(folder)
    (folder / "sample.jsonl").write_text("\n".join(page.to_json() for page in pages))
    return folder


def label(model: Model, url: str) -> int:
    found = model.label_of(url)
    assert found is not None
    return found


def test_the_model_knows_the_four_templates(model_dir: Path) -> None:
    model = Model.load(model_dir)
    groups = {label(model, f"{SITE}/f?page=0"), label(model, f"{SITE}/t/0"), label(model, f"{SITE}/u/0"),
              label(model, f"{SITE}/help/a")}
    assert len(groups) == 4 and -1 not in groups, model.clusters
    assert label(model, f"{SITE}/help/b") == label(model, f"{SITE}/login?r=0-0")  # one template: one cluster


def test_ucc_ranks_by_the_link_s_position_and_filters_nothing(model_dir: Path) -> None:
    policy = SourceUcc(SourceUcc.Options(), model_dir)
    assert policy.priority(f"{SITE}/f?page=0", None, None) == SEED_LANE
    assert policy.lane_rank("http://forum.test", SEED_LANE) == -math.inf
    assert list(policy.on_fetched(fetched(f"{SITE}/f?page=1"), 0.0)) == []
    page = fetched(f"{SITE}/t/3")  # Balance: half the harvest is the thread cluster's, half the boards'
    policy.on_fetched(page, 1.0)
    lanes = {url: policy.priority(url, page.url, None) for url in page.links}
    assert all(policy.accept_link(url, page.url, None) is None for url in page.links)  # AT-16: nothing is dropped
    rank = {url: policy.lane_rank("http://forum.test", lane) for url, lane in lanes.items()}
    # a profile (UCC, varied) and a related thread both go before the login form and the help page
    assert rank[f"{SITE}/u/3"] < rank[f"{SITE}/login?r=3-0"]
    assert rank[f"{SITE}/t/4"] < rank[f"{SITE}/help/a"]
    assert all(lane >= FIRST_ROW_LANE for lane in lanes.values())


def test_balance_is_re_applied_as_pages_are_harvested(model_dir: Path) -> None:
    policy = SourceUcc(SourceUcc.Options(), model_dir)
    for u in range(4):
        policy.on_fetched(fetched(f"{SITE}/u/{u}"), 0.0)
    page = fetched(f"{SITE}/t/0")
    policy.on_fetched(page, 0.0)
    user, related = policy.priority(f"{SITE}/u/0", page.url, None), policy.priority(f"{SITE}/t/1", page.url, None)
    before = policy.lane_rank("h", related) - policy.lane_rank("h", user)
    for j in range(1, 20):  # many threads harvested: the thread cluster's Balance falls
        policy.on_fetched(fetched(f"{SITE}/t/{j}"), float(j))
    after = policy.lane_rank("h", related) - policy.lane_rank("h", user)
    assert after > before  # the related-thread lane fell behind the profile lane
    without = SourceUcc(SourceUcc.Options(balance=False, novelty=False), model_dir)  # Balance alone
    without.on_fetched(page, 0.0)
    lane = without.priority(f"{SITE}/t/1", page.url, None)
    first = without.lane_rank("h", lane)
    for j in range(1, 20):
        without.on_fetched(fetched(f"{SITE}/t/{j}"), float(j))
    assert without.lane_rank("h", lane) == first


def test_a_page_of_an_unseen_layout_is_classified_not_refused(model_dir: Path) -> None:
    policy = SourceUcc(SourceUcc.Options(), model_dir)
    odd = f"{SITE}/odd"
    html = f'<html><body><svg><g><rect/></g></svg><a class="new" href="{SITE}/t/1">x</a></body></html>'
    parsed = extract_links(html.encode(), odd, want_document=True)
    policy.on_fetched(FetchedPage(odd, 200, {}, b"", 0.0, parsed.document, tuple(parsed.links)), 0.0)
    assert policy.priority(f"{SITE}/t/1", odd, None) == NO_ROW_LANE  # a key no row knows: score 0, still queued
    assert policy.lane_rank("h", NO_ROW_LANE) == 0.0
    assert sum(policy.counters()["cluster_pages"].values()) == 1


def test_a_redirect_target_goes_first_and_non_html_is_not_classified(model_dir: Path) -> None:
    policy = SourceUcc(SourceUcc.Options(), model_dir)
    policy.on_fetched(FetchedPage(f"{SITE}/p/1", 301, {}, b"", 0.0, redirect=f"{SITE}/t/1"), 0.0)
    assert policy.priority(f"{SITE}/t/1", f"{SITE}/p/1", None) == SEED_LANE
    assert policy.counters()["cluster_pages"] == {}


def test_ucc_a_role_whose_downloads_bring_nothing_falls_behind_on_its_host_first(model_dir: Path) -> None:
    policy = SourceUcc(SourceUcc.Options(balance=False), model_dir)  # Balance off: the scores move by novelty alone
    page = fetched(f"{SITE}/t/3")
    policy.on_fetched(page, 0.0)
    lanes = {url: policy.priority(url, page.url, None) for url in page.links}
    related, user = lanes[f"{SITE}/t/4"], lanes[f"{SITE}/u/3"]
    assert lanes[f"{SITE}/u/4"] == user and lanes[f"{SITE}/t/8"] == related
    here, there = "http://forum.test", "http://other.forum.test"
    first = {lane: policy.lane_rank(here, lane) for lane in (related, user)}
    assert first[related] < 0 and first[user] < 0 and policy.lane_rank(there, user) == first[user]

    policy.on_fetched(fetched(f"{SITE}/t/4"), 1.0)  # the site's threads carry no text block: nothing new
    assert policy.lane_rank(there, related) == pytest.approx(first[related] / 2)  # the role: (1 + 0) / (1 + 1)
    assert policy.lane_rank(here, related) == pytest.approx(first[related] / 3)  # its host: (2 · 1/2 + 0) / (2 + 1)
    assert policy.lane_rank(here, user) == first[user]

    bio = "<html><body><p>A bio the user wrote, longer than any label or name of the template.</p></body></html>"
    parsed = extract_links(bio.encode(), f"{SITE}/u/3", want_document=True)
    policy.on_fetched(FetchedPage(f"{SITE}/u/3", 200, {}, b"", 0.0, parsed.document, ()), 2.0)
    assert policy.lane_rank(here, user) == pytest.approx(first[user])  # new text: the role keeps its score
    policy.on_fetched(FetchedPage(f"{SITE}/u/4", 301, {}, b"", 0.0, redirect=f"{SITE}/u/5"), 3.0)
    assert policy.lane_rank(there, user) == pytest.approx(first[user] * 2 / 3)  # a redirect brings nothing
    assert policy.lane_rank(here, user) == pytest.approx(first[user] * (2 * 2 / 3 + 1) / (2 + 2))

    again = SourceUcc(SourceUcc.Options(balance=False), model_dir)
    again.restore(policy.state())
    assert again.lane_rank(here, user) == policy.lane_rank(here, user)
    assert again.lane_rank(there, related) == policy.lane_rank(there, related)
    off = SourceUcc(SourceUcc.Options(balance=False, novelty=False), model_dir)
    off.restore(policy.state())
    assert off.lane_rank(here, related) == first[related]
    halves = SourceUcc(SourceUcc.Options(balance=False, enough=0.5), model_dir)  # a half share keeps the score
    halves.restore(policy.state())
    assert halves.lane_rank(there, related) == first[related]
    assert halves.lane_rank(here, related) == pytest.approx(first[related] / 3 / 0.5)


def test_the_target_policy_goes_for_its_example_s_cluster(model_dir: Path) -> None:
    policy = SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/u/2"]), model_dir)
    model = Model.load(model_dir)
    assert policy.targets == [label(model, f"{SITE}/u/2")]
    page = fetched(f"{SITE}/t/5")
    policy.on_fetched(page, 0.0)
    rank = {url: policy.lane_rank("h", policy.priority(url, page.url, None)) for url in page.links}
    assert rank[f"{SITE}/u/5"] == min(rank.values())  # profiles first
    assert rank[f"{SITE}/help/a"] == max(rank.values()) or rank[f"{SITE}/login?r=5-0"] == max(rank.values())


def test_several_target_examples_aim_at_the_union_of_their_clusters(model_dir: Path) -> None:
    model = Model.load(model_dir)
    examples = [f"{SITE}/u/2", f"{SITE}/t/3", f"{SITE}/u/4"]
    policy = SourceTarget(SourceTarget.Options(target_examples=examples), model_dir)
    assert policy.targets == sorted({label(model, url) for url in examples})
    assert len(policy.targets) == 2
    scores = policy.cluster_scores()
    assert all(scores[t] >= 0.8 for t in policy.targets)  # Info of a target = 0.8 + 0.2·hub
    assert sorted(scores)[-3] < 0.8


def test_the_target_example_must_be_a_page_of_the_sample(model_dir: Path) -> None:
    with pytest.raises(PolicyError, match="target_examples") as caught:
        SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/u/2", f"{SITE}/u/99"]), model_dir)
    assert f"{SITE}/u/99 is not a page" in str(caught.value) and f"{SITE}/" in str(caught.value).split("e.g.")[1]
    with pytest.raises(PolicyError, match="target_examples"):
        SourceTarget.Options()
    with pytest.raises(PolicyError, match="model"):
        SourceUcc(SourceUcc.Options(), None)
    with pytest.raises(PolicyError, match="model"):
        SourceUcc(SourceUcc.Options(), model_dir / "nothing")


def test_balance_survives_a_resume(model_dir: Path) -> None:
    policy = SourceUcc(SourceUcc.Options(), model_dir)
    for j in range(5):
        policy.on_fetched(fetched(f"{SITE}/t/{j}"), float(j))
    again = SourceUcc(SourceUcc.Options(), model_dir)
    again.restore(policy.state())
    assert np.array_equal(again.harvested, policy.harvested)
    assert again.counters() == policy.counters()


def test_a_target_row_whose_downloads_repeat_content_falls_behind(model_dir: Path) -> None:
    policy = SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/u/2"]), model_dir)
    page = fetched(f"{SITE}/t/5")
    policy.on_fetched(page, 0.0)
    user = policy.priority(f"{SITE}/u/5", page.url, None)
    policy.priority(f"{SITE}/u/6", page.url, None)  # the same row as u/5: a thread's user link
    related = policy.priority(f"{SITE}/t/6", page.url, None)
    first = policy.lane_rank("h", user)
    assert first < policy.lane_rank("h", related)

    def download(url: str, body: bytes) -> None:
        parsed = extract_links(PAGES[url].encode(), url, want_document=True)
        policy.on_fetched(FetchedPage(url, 200, {}, body, 0.0, parsed.document, tuple(parsed.links)), 1.0)

    download(f"{SITE}/u/5", b"profile five")
    assert policy.lane_rank("h", user) == first  # new content: the row keeps its score
    download(f"{SITE}/u/6", b"profile five")  # an alias of a page already fetched
    assert policy.lane_rank("h", user) == pytest.approx(first * 2 / 3)  # (1 + 2 − 1) / (1 + 2)
    assert policy.counters()["row_downloads"] == {"new": 1, "repeated": 1}
    again = SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/u/2"]), model_dir)
    again.restore(policy.state())
    assert again.lane_rank("h", user) == policy.lane_rank("h", user)
    off = SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/u/2"], novelty=False), model_dir)
    off.restore(policy.state())
    assert off.lane_rank("h", user) == first


def test_kin_widens_the_target_only_to_clusters_linked_into_alike(model_dir: Path) -> None:
    examples = [f"{SITE}/u/2"]
    policy = SourceTarget(SourceTarget.Options(target_examples=examples), model_dir)
    assert policy.examples == policy.targets  # profiles alone are reached through user links
    loose = SourceTarget(SourceTarget.Options(target_examples=examples, kin=1e-9), model_dir)
    assert loose.targets == policy.targets  # no other cluster shares a role of its in-links
    with pytest.raises(PolicyError, match="kin"):
        SourceTarget.Options(target_examples=examples, kin=0.0)


def test_a_link_without_a_row_takes_its_anchor_role_s_rows_pooled(model_dir: Path) -> None:
    odd = f"{SITE}/odd"
    html = (f'<html><body><svg><g><rect/></g></svg><section><a class="related" href="{SITE}/t/1">x</a>'
            f'<a class="new" href="{SITE}/t/2">y</a></section></body></html>')
    parsed = extract_links(html.encode(), odd, want_document=True)
    page = FetchedPage(odd, 200, {}, b"", 0.0, parsed.document, tuple(parsed.links))
    policy = SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/t/3"]), model_dir)
    policy.on_fetched(page, 0.0)
    related = policy.priority(f"{SITE}/t/1", odd, None)
    assert related >= FIRST_ROW_LANE + len(Model.load(model_dir).table)  # past the table's rows: a role's lane
    assert policy.lane_rank("h", related) < -0.8  # related links lead to threads, the target
    assert policy.priority(f"{SITE}/t/2", odd, None) == NO_ROW_LANE  # a role no training link had: score 0
    paper = SourceTarget(SourceTarget.Options(target_examples=[f"{SITE}/t/3"], backoff=False), model_dir)
    paper.on_fetched(page, 0.0)
    assert paper.priority(f"{SITE}/t/1", odd, None) == NO_ROW_LANE


def test_reach_demotes_a_role_that_leads_into_the_target_but_never_to_an_example(model_dir: Path) -> None:
    # no board lists threads 2, 11 and 20 (boards 0, 3, 6 list two threads, 1 and 4 three from 3·i),
    # yet title links lead into the threads' clusters as often as related links, which reach them
    examples = [f"{SITE}/t/2", f"{SITE}/t/11", f"{SITE}/t/20"]
    board_page, thread_page = fetched(f"{SITE}/f?page=1"), fetched(f"{SITE}/t/7")

    def ranks(policy: SourceTarget) -> tuple[float, float]:
        policy.on_fetched(board_page, 0.0)
        title = policy.priority(f"{SITE}/t/3", board_page.url, None)
        policy.on_fetched(thread_page, 1.0)
        related = policy.priority(f"{SITE}/t/8", thread_page.url, None)
        return policy.lane_rank("h", title), policy.lane_rank("h", related)

    title, related = ranks(SourceTarget(SourceTarget.Options(target_examples=examples, reach=False), model_dir))
    # 7 of the 86 training links into threads reached an example: title's 23 should have reached 1.9
    title_reach, related_reach = ranks(SourceTarget(SourceTarget.Options(
        target_examples=examples, reach=True, reach_evidence=1.5), model_dir))
    assert related_reach == pytest.approx(related)  # related links reached the examples: kept
    assert title < -0.5 and title_reach > title / 2  # title links reached none: their target part demoted
    assert title_reach > related_reach
    too_few = SourceTarget(SourceTarget.Options(target_examples=examples, reach=True), model_dir)
    assert ranks(too_few) == pytest.approx((title, related))  # 1.9 expected is below the default 3: no evidence
