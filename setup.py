"""The crawler's one compiled part; everything else is declared in pyproject.toml.

``store._signature``: the near-duplicate signature's normalisation (store/signature.py says why).
pip builds it on install (``make crawl``); a work tree run from its sources builds it in place
with ``python setup.py build_ext --inplace``.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("store._signature", ["store/_signature.c"], extra_compile_args=["-O2"])])
