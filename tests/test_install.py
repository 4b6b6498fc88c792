"""A clean install runs: the crawler with its runtime dependencies only, as a new user gets it.

The test suite's own virtual environment holds the test and benchmark extras, which pull in
packages (brotli came with Scrapy) that can hide a dependency the crawler imports but does not
declare. So these tests check the declaration against the imports, and run ``make crawl`` from
a copy of the tree (the files git would commit) into a virtual environment that has nothing but
``pip install -e .``. That environment is kept under ``.cache/`` and keyed by the declared
dependencies, so a change to them gets a new one and an unchanged list costs no reinstall of
the wheels (pip's own cache makes even a new one quick).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest
from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("engine", "frontier", "store", "bench/invitro", "tools")  # what `crawl` runs; bench/*.py are extras
CACHE = ROOT / ".cache" / "clean-install"


def declared_dependencies() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def distribution_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def third_party_imports(path: Path) -> set[str]:
    local = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in local and n != "__future__"}


def test_every_runtime_import_is_a_declared_dependency() -> None:
    declared = {distribution_name(d) for d in declared_dependencies()}
    owners = importlib.metadata.packages_distributions()
    undeclared = {}
    for folder in RUNTIME:
        for path in (ROOT / folder).rglob("*.py"):
            for module in third_party_imports(path):
                dists = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
                if not dists & declared:
                    undeclared.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert not undeclared, f"imported by the crawler but not in [project.dependencies]: {undeclared}"


def copy_of_tree(dest: Path) -> Path:
    """The files a clean clone of this work tree would hold: tracked and new ones, as they are now."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)  # new times: make sees pyproject.toml newer than the last install
    return dest


def clean_venv() -> Path:
    key = hashlib.sha256("\n".join(sorted(declared_dependencies())).encode()).hexdigest()[:16]
    venv = CACHE / f"venv-{key}"
    if not venv.exists():
        for stale in CACHE.glob("venv-*"):  # environments of earlier dependency lists
            shutil.rmtree(stale, ignore_errors=True)
    return venv


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_crawl_from_a_clean_tree_with_runtime_dependencies_only(tmp_path: Path) -> None:
    tree = copy_of_tree(tmp_path / "clone")
    venv = clean_venv()
    out = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    done = subprocess.run(
        ["make", "crawl", f"VENV={venv}", f"CRAWL_ARGS=--out {out} --max-seconds 6 --set engine.progress=log"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                               capture_output=True, text=True, check=True).stdout
    names = {p["name"].lower() for p in orjson.loads(installed)}
    assert not names & {"pytest", "hypothesis", "scrapy", "matplotlib"}, "extras leaked into the clean install"

    pages = 0
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f, check_digests=True):
                if record.rec_type == "response" and record.http_headers.get_statuscode() == "200":
                    pages += record.http_headers.get_header("Content-Type", "").startswith("text/html")
    stats = orjson.loads((out / "stats.json").read_bytes())
    assert pages > 0 and stats["pages"] >= pages, (pages, stats["pages"])
    assert "crawl summary" in done.stderr

    # every module the crawler may load (not only those a short crawl reaches) imports in the clean environment
    modules = [
        ".".join(p.relative_to(tree).with_suffix("").parts).removesuffix(".__init__")
        for folder in RUNTIME for p in (tree / folder).rglob("*.py") if p.name != "__main__.py"
    ]
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]",
         *modules], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
