"""The frontier does no network I/O, and dependencies point one way: engine → frontier, store."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NETWORK = {"asyncio", "aiohttp", "aiodns", "pycares", "socket", "uvloop", "http", "urllib.request", "ssl"}


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", modules("frontier"), ids=lambda p: p.name)
def test_frontier_does_no_network_io(path: Path) -> None:
    bad = {name for name in imports(path) if name.split(".")[0] in NETWORK or name in NETWORK}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", modules("frontier") + modules("store"), ids=lambda p: p.name)
def test_nothing_below_the_engine_imports_it(path: Path) -> None:
    bad = {name for name in imports(path) if name.split(".")[0] in ("engine", "bench", "tools")}
    assert not bad, f"{path.parent.name}/{path.name} imports {bad}"


@pytest.mark.parametrize("path", modules("frontier"), ids=lambda p: p.name)
def test_frontier_reads_no_clock(path: Path) -> None:
    source = path.read_text()
    for call in ("time.time(", "time.monotonic(", "datetime.now(", "perf_counter("):
        assert call not in source, f"{path.name} reads the clock ({call}); pass `now` in instead"


@pytest.mark.parametrize("package", ["engine", "frontier", "store", "bench"])
def test_every_module_says_what_it_is_for(package: str) -> None:
    for path in modules(package):
        if path.stat().st_size:
            assert ast.get_docstring(ast.parse(path.read_text())), f"{package}/{path.name} has no module docstring"
