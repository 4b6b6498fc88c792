"""A Markdown table as lines of text, for the learners' readable reports (``report.md``).

Pure: values in, lines out; a ``|`` inside a value is escaped so that it stays in its cell.
"""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """The table's lines, header and separator first, then a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return [*lines, ""]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")
