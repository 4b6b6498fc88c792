"""ARCHITECTURE.md stays true to the code: its component table names every module of the crawler."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_component_table_names_every_module() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text[text.index("## Components by role"):]
    named = set(re.findall(r"`([a-z0-9_/]+\.(?:py|service))`", table))
    folders = set(re.findall(r"`([a-z0-9_/]+/)`", table))
    missing = []
    for package in ("engine", "frontier", "store", "tools"):
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in (".py", ".service") or path.name == "__init__.py" or "__pycache__" in path.parts:
                continue
            relative = path.relative_to(ROOT).as_posix()
            if relative not in named and not any(relative.startswith(f) and f != f"{package}/" for f in folders):
                missing.append(relative)
    assert not missing, f"ARCHITECTURE.md's component table does not name {missing}"
