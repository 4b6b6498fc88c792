"""The crawler's compiled parts; everything else is declared in pyproject.toml.

``store._signature``: the near-duplicate signature's normalisation (store/signature.py says why).
``engine._start_tags``: the HTML tokenizer that finds a page's link-bearing start tags (engine/parse.py says why).
``frontier._resolve``: a page's links resolved against its base, the common hrefs (frontier/_resolve.c says why).
``store._deflate``: deflate with one Huffman code chosen once, for the small WARC records (store/deflate.py says why).
``store._graph``: a page's link graph record (store/_graph.c says why).
pip builds them on install (``make crawl``); a work tree run from its sources builds them in place
with ``python setup.py build_ext --inplace``.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("store._signature", ["store/_signature.c"], extra_compile_args=["-O2"]),
        Extension("engine._start_tags", ["engine/_start_tags.c"], extra_compile_args=["-O2"]),
        Extension("frontier._resolve", ["frontier/_resolve.c"], extra_compile_args=["-O2"]),
        Extension("store._deflate", ["store/_deflate.c"], extra_compile_args=["-O2"]),
        Extension("store._graph", ["store/_graph.c"], extra_compile_args=["-O2"]),
    ]
)
