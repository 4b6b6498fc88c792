"""The learners' ``report.md`` as HTML, for the policy section of ``crawl report``: the subset they write.

:mod:`frontier.clustergraph.report` and :mod:`frontier.source.report` write headings (``#``,
``##``, ``###``), paragraphs, inline ``code`` and pipe tables (:mod:`frontier.markdown_table`,
``|`` escaped inside a cell); that subset is rendered, everything else is kept as escaped text.
No Markdown library is a runtime dependency, and none is needed for our own files. Pure: text in,
text out; every piece of the input is escaped, so the page stays free of scripts and links.
"""

from __future__ import annotations

import re
from html import escape

_CELL_BORDER = re.compile(r"(?<!\\)\|")
_CODE = re.compile(r"`([^`]*)`")
_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def inline(text: str) -> str:
    """Escaped text with ```code``` spans as ``<code>``."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escape(text))


def cells(line: str) -> list[str]:
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BORDER.split(line.strip())[1:-1]]


def markdown_html(text: str) -> str:
    """The HTML of ``text`` (module docstring); headings are shifted down to h4–h6, under the report's own."""
    out: list[str] = []
    table: list[list[str]] = []

    def close_table() -> None:
        if table:
            head = "".join(f"<th>{inline(cell)}</th>" for cell in table[0])
            body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in table[1:])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            if not _RULE.match(line.strip()):
                table.append(cells(line))
            continue
        close_table()
        level = len(line) - len(line.lstrip("#"))
        if 1 <= level <= 3 and line[level:level + 1] == " ":
            out.append(f"<h{level + 3}>{inline(line[level + 1:])}</h{level + 3}>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    close_table()
    return "".join(out)
