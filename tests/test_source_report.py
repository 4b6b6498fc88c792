"""SOUrCe's model report and picture (frontier/source/report.py, frontier/svg_graph.py), through train() and save().

The sample is a hand-made forum: 6 board-list pages (C0), 8 thread pages (C1, one of them
reached through the redirect /p/7 → /t/7), 4 help pages (C2) and one admin page whose Xpaths
are all rarer than θ (the outlier O). Fetch order puts a list, a thread and a help page
first, so DBSCAN's first-appearance numbering gives those cluster labels.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from frontier.source.model import Model, Params
from frontier.source.report import MIN_SHARE, markdown, svg
from frontier.source.train import SamplePage, train
from frontier.svg_graph import Edge, Node, circle_graph

SITE = "https://forum.test"
HELP = [f"{SITE}/help/{name}" for name in ("terms", "privacy", "faq", "about")]
ADMIN = f"{SITE}/admin/stats"
SVG = {"svg": "http://www.w3.org/2000/svg"}
Record = tuple[str, str, dict[str, int], dict[str, list[str]]]  # requested URL, final URL, Xpath bag, link groups


def board(i: int) -> str:
    return f"{SITE}/f/1?page={i}"


def thread(j: int) -> str:
    return f"{SITE}/t/{j}"


def list_page(i: int) -> Record:
    """Rows: three threads and an ad to the FAQ (C1 0.75, C2 0.25); the first page also links the admin page."""
    groups = {"/html/body/table/tr/td/a[title]": [thread(i), thread(i + 1), thread(i + 2), HELP[2]],
              "/html/body/div/a[page]": [board((i + 1) % 6)],
              "/html/body/div/a[footer]": [HELP[0]]}
    if i == 0:
        groups["/html/body/div/a[admin]"] = [ADMIN]
    bag = {"/html/head/title": 1, "/html/body/div/a": 3, "/html/body/table/tr/td/a": 4,
           "/html/body/table/tr/td/span": 2 + i % 2}
    return board(i), board(i), bag, groups


def thread_page(j: int) -> Record:
    """Each related group: the next thread (thread 6 links thread 7 by its redirecting URL) and an unfetched one."""
    related = f"{SITE}/p/7" if j == 6 else thread((j + 1) % 8)
    groups = {"/html/body/div/a[crumb]": [board(j % 6)],
              "/html/body/div/div/a[related]": [related, thread(900 + j)],
              "/html/body/div/a[footer]": HELP[:2]}
    bag = {"/html/head/title": 1, "/html/body/div/a": 3, "/html/body/div/div/a": 2, "/html/body/div/div/p": 3 + j % 3}
    return (f"{SITE}/p/7" if j == 7 else thread(j)), thread(j), bag, groups


def help_page(k: int) -> Record:
    """A long footer (64 links in all) and a home link to a page outside D; the first also links thread 3."""
    groups = {"/html/body/div/a[footer]": HELP * 4, "/html/body/div/a[]": [f"{SITE}/"]}
    bag = {"/html/head/title": 1, "/html/body/div/a": 5, "/html/body/p": 2 + k % 2}
    if k == 0:
        groups["/html/body/p/a[]"] = [thread(3)]
        bag["/html/body/p/a"] = 1
    return HELP[k], HELP[k], bag, groups


def admin_page() -> Record:
    groups = {"/html/body/ul/li/a[]": [board(0), thread(0), thread(1)], "/html/body/div/a[footer]": [HELP[0]]}
    return ADMIN, ADMIN, {"/html/head/title": 1, "/html/body/ul/li/a": 3, "/html/body/h1": 1}, groups


def forum() -> list[SamplePage]:
    records = [list_page(0), thread_page(0), help_page(0), *(list_page(i) for i in range(1, 6)),
               *(thread_page(j) for j in range(1, 8)), *(help_page(k) for k in range(1, 4)), admin_page()]
    return [SamplePage(seq, url, final, bag, groups) for seq, (url, final, bag, groups) in enumerate(records)]


@pytest.fixture(scope="module")
def model() -> Model:
    return train(forum(), Params(eps=0.2, redirects_as_final=True), "forum.test")


def section(text: str, title: str) -> list[list[str]]:
    """The cells of the table under ``## title``, header and rule left out."""
    body = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[1:]]


# -- the report ------------------------------------------------------------------------------------


def test_the_sample_clusters_into_lists_threads_help_and_one_outlier(model: Model) -> None:
    assert model.labels.tolist() == [0, 1, 2, *[0] * 5, *[1] * 7, *[2] * 3, -1]


def test_the_report_names_every_cluster_with_its_size_and_sample_urls(model: Model) -> None:
    rows = {row[0]: row for row in section(markdown(model), "Clusters")}
    assert {name: int(row[1]) for name, row in rows.items()} == {"C0": 6, "C1": 8, "C2": 4, "O": 1}
    for cluster in model.clusters:
        name = "O" if cluster.label == -1 else f"C{cluster.label}"
        assert cluster.samples and rows[name][6].split() == list(cluster.samples)
    assert board(0) in rows["C0"][6] and thread(4) in rows["C1"][6] and HELP[3] in rows["C2"][6]
    assert rows["O"][6] == ADMIN and rows["O"][2] == "–"
    assert "`/html/body/div/div/p`" in rows["C1"][7]


def test_the_help_cluster_is_the_top_authority_and_the_least_hub(model: Model) -> None:
    """Every cluster links the help pages, which link little but each other: once HITS drops A's diagonal,
    the help cluster is all authority."""
    rows = {row[0]: row for row in section(markdown(model), "Clusters")}
    assert max(rows, key=lambda name: float(rows[name][3])) == "C2"
    assert min(rows, key=lambda name: float(rows[name][4])) == "C2" and float(rows["C2"][4]) < 0.02
    for row in rows.values():
        assert float(row[5]) == pytest.approx((float(row[3]) + float(row[4])) / 2, abs=1e-4)


def test_the_navigation_table_lists_rows_by_cluster_then_links(model: Model) -> None:
    assert section(markdown(model), "Navigation table") == [
        ["C0", "`/html/body/table/tr/td/a[title]`", "24", "24", "6", "C1 0.75, C2 0.25"],
        ["C0", "`/html/body/div/a[footer]`", "6", "6", "6", "C2 1.00"],
        ["C0", "`/html/body/div/a[page]`", "6", "6", "6", "C0 1.00"],
        ["C0", "`/html/body/div/a[admin]`", "1", "1", "1", "O 1.00"],
        ["C1", "`/html/body/div/a[footer]`", "16", "16", "8", "C2 1.00"],
        # the unfetched thread links count as links, not as labelled ones; /p/7 is labelled through its redirect
        ["C1", "`/html/body/div/div/a[related]`", "16", "8", "8", "C1 1.00"],
        ["C1", "`/html/body/div/a[crumb]`", "8", "8", "8", "C0 1.00"],
        ["C2", "`/html/body/div/a[footer]`", "64", "64", "4", "C2 1.00"],
        ["C2", "`/html/body/p/a[]`", "1", "1", "1", "C1 1.00"],
        ["O", "`/html/body/ul/li/a[]`", "3", "3", "1", "C1 0.67, C0 0.33"],
        ["O", "`/html/body/div/a[footer]`", "1", "1", "1", "C2 1.00"],
    ]  # the help pages' home link has no labelled destination: no row (A10)


@pytest.mark.parametrize(("params", "origin"), [
    (Params(eps=0.2), "eps = 0.2000 (set; the K-dist histogram gives 0.1000 with NumBins = 1, w = 16)"),
    (Params(), "eps = 0.1000 (the fallback: no sparse K-dist bin past the median with NumBins = 1, w = 16)"),
    (Params(bin_factor=0.5), "eps = 0.1026 (estimated from the K-dist histogram with NumBins = 14, w = 0.5)"),
])
def test_the_summary_says_how_eps_was_chosen(params: Params, origin: str) -> None:
    text = markdown(train(forum(), params, "forum.test"))
    assert f"|D| = 19 training pages; |V| = 7 Xpaths (df ≥ 4); {origin}; clusters: 3; outliers: 1 (5.3% of D); " \
           "navigation rows: 11." in text
    warnings = text.split("## Warnings\n", 1)[1]
    assert ("fallback 0.10 is used" in warnings) == (params == Params())
    assert ("None." in warnings) == (params != Params())


# -- the picture -----------------------------------------------------------------------------------


def drawn_edges(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    """Each edge path by its (source, destination), read from its tooltip ``C0 → C1: …``."""
    found = {}
    for path in root.findall("svg:path[@class]", SVG):
        title = path.find("svg:title", SVG)
        assert title is not None and title.text is not None
        match = re.match(r"(\w+) → (\w+):", title.text)
        assert match is not None
        found[match.group(1), match.group(2)] = path
    return found


def test_the_svg_has_a_node_per_cluster_and_o_and_the_non_negligible_edges_of_a(model: Model) -> None:
    root = ET.fromstring(svg(model))
    nodes = root.findall("svg:g", SVG)
    assert [node.findtext("svg:text", namespaces=SVG) for node in nodes] == ["C0 (6)", "C1 (8)", "C2 (4)", "O (1)"]
    assert [node.get("class") for node in nodes] == ["node cluster"] * 3 + ["node outliers"]
    edges = drawn_edges(root)
    adjacency = model.table.adjacency()
    names = ["C0", "C1", "C2", "O"]
    assert set(edges) == {(names[i], names[j]) for i, j in np.argwhere(adjacency > 0).tolist()
                          if adjacency[i, j] >= MIN_SHARE * adjacency[i].sum()}
    assert set(edges) == {("C0", "C0"), ("C0", "C1"), ("C0", "C2"), ("C0", "O"), ("C1", "C0"), ("C1", "C1"),
                          ("C1", "C2"), ("C2", "C2"), ("O", "C0"), ("O", "C1"), ("O", "C2")}
    # C2 → C1 is 1 link of 65: left out, and the title says so
    assert "1 edges under 2% of their source's links omitted" in (root.findtext("svg:title", namespaces=SVG) or "")


def test_the_svg_edges_grow_with_a_and_self_loops_are_loops(model: Model) -> None:
    edges = drawn_edges(ET.fromstring(svg(model)))
    width = {key: float(path.get("stroke-width") or 0) for key, path in edges.items()}
    assert width["C0", "C1"] > width["C1", "C0"] > width["C0", "O"]  # A = 18 > 8 > 1
    assert all(path.get("stroke-dasharray") for key, path in edges.items() if "O" in key)
    assert not any(path.get("stroke-dasharray") for key, path in edges.items() if "O" not in key)
    for name in ("C0", "C1", "C2"):
        points = (edges[name, name].get("d") or "").split()
        assert points[1:3] == points[-2:]  # the path ends where it starts


# -- files -----------------------------------------------------------------------------------------


def test_save_writes_the_report_and_load_round_trips(model: Model, tmp_path: Path) -> None:
    model.save(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"model.json", "matrix.npy", "report.md", "graph.svg"}
    loaded = Model.load(tmp_path)
    assert loaded.to_data() == model.to_data() == Model.load(tmp_path / "model.json").to_data()
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == markdown(loaded) == markdown(model)
    assert (tmp_path / "graph.svg").read_text(encoding="utf-8") == svg(loaded) == svg(model)
    assert loaded.label_of(f"{SITE}/p/7") == 1 and loaded.label_of(ADMIN, outliers=False) is not None


# -- the shared renderer ---------------------------------------------------------------------------


def test_circle_graph_escapes_text_and_keeps_the_given_order() -> None:
    nodes = [Node("a", "a <1>", "x"), Node("b", "b & c", greyed=True)]
    edges = [Edge("b", "a", "light", "b → a", "dashed", 0.8), Edge("a", "b", "heavy", "a → b & more", width=3.25)]
    root = ET.fromstring(circle_graph(nodes, edges, "two <nodes>"))
    assert root.findtext("svg:title", namespaces=SVG) == "two <nodes>"
    assert [g.findtext("svg:text", namespaces=SVG) for g in root.findall("svg:g", SVG)] == ["a <1>", "b & c"]
    assert [g.get("class") for g in root.findall("svg:g", SVG)] == ["node x", "node"]
    paths = root.findall("svg:path", SVG)
    assert [(p.get("class"), p.get("stroke-width"), p.get("stroke-dasharray")) for p in paths] == [
        ("edge light", "0.8", "5,4"), ("edge heavy", "3.2", None)]
    assert ET.fromstring(circle_graph([], [], "empty")).findall("svg:g", SVG) == []


def test_a_link_that_redirected_leads_to_o_unless_redirects_count_as_their_target() -> None:
    from frontier.source.navigation import index_of

    related = "/html/body/div/div/a[related]"  # thread 6 links thread 7 by its redirecting URL /p/7
    for as_final in (False, True):
        trained = train(forum(), Params(eps=0.2, redirects_as_final=as_final), "forum.test")
        thread_cluster = trained.label_of(thread(0))
        assert thread_cluster is not None and trained.label_of(f"{SITE}/p/7") == thread_cluster  # the example lookup
        row = trained.table.get((thread_cluster, related))
        assert row is not None
        to_o = row.destinations[index_of(-1, trained.n_clusters)]
        assert (to_o == 1) != as_final, row
