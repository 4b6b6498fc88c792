"""Clusters of the same page type as crawling-for-target's examples, read from the navigation table (ours).

Why: SOUrCe's clusters are layouts × page types on a site whose users pick a template
(the lab's microblog has 30 layouts: its 1,000 training pages make some 30 presence
clusters and 30 stream clusters). Five example pages name at most five of them, and a
page of the wanted type in another layout then counts as a hub at best (0.2·h), so the
crawl spends its budget on listings that lead to the examples' layouts instead of on the
wanted pages it already knows links to.

The rule: a site links to the pages of one type *the same way* whatever their layout (a
message through its permalink, a "message" entry or an older/newer link; a stream through
a user link or a contact), so two clusters of one type have alike in-link profiles.
A cluster's **in-link profile** is, per *anchor role*, the number of labelled training links
that led into it (the destination counts of every navigation-table row, summed by the row's
role). The role of an Apath is its anchor's class tokens (``a.message`` → ``message``), as
templates name their links' roles; an anchor without a class has its whole Apath as its
role. :func:`kin_clusters` gives the clusters whose profile has a cosine of at least
``threshold`` with the **centroid** of the examples' profiles (the examples' clusters included;
O never). On the lab's microblog (five examples, square roots as below) the cosine with the
centroid is ≥ 0.93 for every stream cluster and ≥ 0.80 for every presence cluster but one of
four training pages (0.75), ≤ 0.38 across types, 0.59 for the mobile mirror's stream: hence the
default 0.8 of ``source-target``'s ``kin`` option (``frontier/policies/source.py``).

Why the centroid, not the nearest example: where DBSCAN mixes types (a layout's journals and
profiles in one cluster), an example page of the wanted type can fall in a cluster that is
mostly another type, and every cluster of that other type is then "kin" of it (the lab's blog:
two of five profile examples in such clusters admitted 75 of 117 clusters, 158 journal pages
among them). The centroid is what the examples share: one example in a mixed cluster moves it
by a fifth. Each example page weighs the same, as its cluster's *unit* profile: a mixed
cluster is often a big one, and raw counts would let it outweigh the others; two examples in
one cluster count twice, since the examples are a sample of the wanted type.

Profiles are compared by the cosine of their square roots, i.e. the Bhattacharyya coefficient
of the two role distributions, not of the raw counts: with raw counts the role that carries
most of a cluster's in-links decides the cosine alone (the microblog's presence clusters are
reached through ``message``, ``comments``, ``permalink`` and ``message-nav`` links, in
proportions that vary with the layout; a presence cluster with few ``message`` in-links had a
cosine of 0.61 with the five examples' centroid, 0.85 on square roots).

Three more readings of the table by anchor role serve ``source-target``: :func:`role_shares`,
the share of each role's labelled links that led into the target clusters (a link's target
part is weighted by it), :func:`example_reach`, how far a role's links into the targets reach
the example pages themselves, and :func:`pooled_roles`, each role's rows pooled over clusters
(the back-off of a link whose key has no row).

Pure: numpy over the table; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from frontier.source.navigation import OUTLIER, FloatArray, NavigationTable, index_of, label_of

__all__ = ["PooledRoles", "RoleShares", "anchor_role", "example_reach", "in_link_profiles", "kin_clusters", "pooled_roles", "role_shares"]


def anchor_role(apath: str) -> str:
    """The role of an Apath: its anchor's class tokens (``message`` in ``/html/body/ul/li/a[message]``),
    or the whole Apath when the anchor has no class."""
    head, bracket, classes = apath.rpartition("[")
    role = classes.removesuffix("]") if bracket else ""
    return role or apath


def in_link_profiles(table: NavigationTable) -> FloatArray:
    """Per cluster index (O last), the labelled training links into it counted per anchor role:
    an (n + 1) × (roles) array, roles in sorted order."""
    roles = sorted({anchor_role(row.apath) for row in table.rows})
    column = {role: i for i, role in enumerate(roles)}
    profiles = np.zeros((table.size, len(roles)))
    for row in table.rows:
        profiles[:, column[anchor_role(row.apath)]] += row.destinations
    return profiles


def kin_clusters(table: NavigationTable, examples: Iterable[int], threshold: float) -> list[int]:
    """The cluster labels whose in-link profile has a cosine ≥ ``threshold`` with the centroid of the
    examples' unit profiles, ``examples`` being the cluster label of each example page (a label
    repeated weighs as many examples), the examples' clusters included, sorted; O is never one.
    Profiles are compared by their square roots (module docstring)."""
    labels = list(examples)
    if OUTLIER in labels:
        raise ValueError("the target must be a cluster, not the outliers (A27)")
    profiles = np.sqrt(in_link_profiles(table))
    norms = np.linalg.norm(profiles, axis=1)
    unit = np.divide(profiles, norms[:, np.newaxis], out=np.zeros_like(profiles), where=norms[:, np.newaxis] > 0)
    centroid = unit[[index_of(label, table.n_clusters) for label in labels]].sum(axis=0)
    size = float(np.linalg.norm(centroid))
    cosine = unit @ (centroid / size) if size > 0 else np.zeros(table.size)
    kin = {label_of(int(index), table.n_clusters) for index in np.flatnonzero(cosine >= threshold)}
    return sorted((kin - {OUTLIER}) | set(labels))


@dataclass(frozen=True, eq=False)
class RoleShares:
    """The share of the labelled training links of each anchor role that led into the target."""

    by_role: dict[str, float]
    by_row: FloatArray
    """that of each row's role, aligned with the table's rows"""


def role_shares(table: NavigationTable, targets: Iterable[int]) -> RoleShares:
    """Per anchor role (and per row of ``table``, by its role), the share of the site's labelled
    training links of that role that led into one of ``targets`` (cluster labels): how far a
    link's role agrees with the target.

    Why: a cluster that mixes two types (a layout whose messages and streams DBSCAN did not part)
    is a target by its in-links, and a row into it then ranks as target whatever it is; on the
    lab's microblog 8% of message links lead into the stream clusters and 99% of user links do,
    so the role tells the two apart."""
    wanted = [index_of(label, table.n_clusters) for label in set(targets)]
    roles = [anchor_role(row.apath) for row in table.rows]
    into: dict[str, float] = {}
    total: dict[str, float] = {}
    for role, row in zip(roles, table.rows):
        total[role] = total.get(role, 0.0) + row.n_labelled
        into[role] = into.get(role, 0.0) + sum(row.destinations[i] for i in wanted)
    by_role = {role: into[role] / total[role] for role in total}
    return RoleShares(by_role, np.array([by_role[role] for role in roles]))


def example_reach(table: NavigationTable, targets: Iterable[int], into_examples: Mapping[str, int],
                  prior: float = 1.0, evidence: float = 3.0) -> dict[str, float]:
    """Per anchor role of ``table``, a factor in (0, 1]: how far the role's labelled training links
    into ``targets`` reached the example pages themselves (``into_examples``: training links per
    role whose destination is an example page), against the rate of all roles together.

    A role that reached no example (e = 0) although it should have reached at least ``evidence``
    of them at the common rate (t·rate ≥ evidence; t its labelled links into a target, rate =
    Σe / Σt; none seen where 3 are expected has a Poisson chance of 5%) takes prior / (t·rate +
    prior); every other role 1. Why: where a cluster holds two types (the lab's blog: a layout's
    profiles and tag lists), a role that leads into it as often as the examples' roles but never
    to an example (the blog's ``tags``: some 9 example in-links expected, 0 seen) is another
    type's; a role with few links into the targets (a stream's ``older`` cursor, 0.5 expected) is
    no evidence, and demoting it lets a page-number widget that reached an example overtake it
    (measured: the microblog's stream task fell from 0.970 to 0.730). All 1 when no training link
    reached an example."""
    wanted = [index_of(label, table.n_clusters) for label in set(targets)]
    into: dict[str, float] = {}
    for row in table.rows:
        role = anchor_role(row.apath)
        into[role] = into.get(role, 0.0) + sum(row.destinations[i] for i in wanted)
    reached = sum(into_examples.get(role, 0) for role in into)
    total = sum(into.values())
    if reached == 0 or total == 0:
        return dict.fromkeys(into, 1.0)
    rate = reached / total
    return {role: prior / (t * rate + prior) if into_examples.get(role, 0) == 0 and t * rate >= evidence else 1.0
            for role, t in into.items()}


@dataclass(frozen=True, eq=False)
class PooledRoles:
    """Each anchor role's destination distribution pooled over every row of that role (sorted roles)."""

    roles: tuple[str, ...]
    distributions: FloatArray


def pooled_roles(table: NavigationTable) -> PooledRoles:
    """The back-off of a link whose (cluster, Apath) key has no row: the destination counts of every
    row of its anchor role added up and normalised (the digest's §2.12 back-off pools an Apath over
    clusters; an Apath carries its layout's tag path, so we pool the role)."""
    roles = sorted({anchor_role(row.apath) for row in table.rows})
    position = {role: i for i, role in enumerate(roles)}
    counts = np.zeros((len(roles), table.size))
    for row in table.rows:
        counts[position[anchor_role(row.apath)]] += row.destinations
    return PooledRoles(tuple(roles), counts / counts.sum(axis=1, keepdims=True))
