"""Which stage of the pipeline a profiler sample is charged to (``bench/engine_overhead.py``).

A sample is a stack of pyinstrument frame identifiers (``function\\0file\\0line``), outermost
first. It is charged to the response source if it passes through ``bench/memory_web.py`` (the
web's work, not the engine's); else to the stage of the innermost frame in the project's own
code, so that library code (lxml, ISA-L, xxhash, numpy) counts for the project module that
called it; else, with no project frame at all, to the event loop and the rest (uvloop's own
work, and the loop's idle waits, which ``engine_overhead`` removes). Pure: no profiler here.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "response source (the web, not the engine)"
REST = "event loop and the rest"
STAGES = (  # (path prefix under the repository, stage): the first that matches wins
    ("engine/parse.py", "parse: link extraction"),
    ("engine/content.py", "gzip decoding"),
    ("engine/robots.py", "robots.txt rules"),
    ("frontier/urls.py", "canonicalize"),
    ("frontier/sieve", "sieve and URL cache"),
    ("frontier/url_cache.py", "sieve and URL cache"),
    ("frontier/quality", "quality filter: features, score"),
    ("engine/quality_text.py", "quality filter: page text"),
    ("frontier/", "frontier: workbench, distributor, virtualizer"),
    ("store/", "store: WARC records"),
    ("engine/", "fetch bookkeeping: agent loops, pipeline"),
)


def stage_of(stack: list[str]) -> str:
    """The stage a sampled stack is charged to."""
    root = str(ROOT) + "/"
    files = [frame.split("\x00")[1][len(root):] for frame in stack if root in frame]
    if "bench/memory_web.py" in files:
        return SOURCE
    for path in reversed(files):  # innermost first; the benchmark's driver and the virtualenv match no stage
        for prefix, stage in STAGES:
            if path.startswith(prefix):
                return stage
    return REST
