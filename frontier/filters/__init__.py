"""Filters: BUbiNG's boolean predicates that scope each phase of the crawl. Pure, no I/O.

A crawl has five filters, one per phase (``[filters]`` in crawl.toml; BUbiNG's
``scheduleFilter``, ``fetchFilter``, ``followFilter``, ``parseFilter``, ``storeFilter``):

* **URL filters** — ``schedule`` (a discovered URL, before it is queued), ``fetch`` (a URL
  just before it is fetched), ``follow`` (each link of a parsed page) — see a canonical URL;
* **response filters** — ``parse`` (whether to extract a response's links), ``store``
  (whether to write it to the WARC files) — see a :class:`Response`; URL predicates apply
  there to the response's URL.

An expression composes built-in predicates with ``and``, ``or``, ``not`` and parentheses
(:mod:`frontier.filters.language` has the grammar), evaluated left to right with short
circuit, e.g.::

    (host_ends_with(example.com) and not host_in(blocked.txt)) or max_depth(10)
    not duplicate_segments(3) and not path_ends_with(.jpg, .png, .zip)
    status(2xx) and content_type(text/html) and not looks_binary()

Built-ins (:mod:`frontier.filters.builtins`): over URLs ``host_is``, ``host_ends_with``,
``host_in(FILE)``, ``scheme_is``, ``path_ends_with``, ``url_matches``, ``max_depth``,
``max_url_length``, ``duplicate_segments`` (the crawler-trap test,
:mod:`frontier.filters.segments`); over responses ``status``, ``content_type``,
``looks_binary``, ``max_size``, ``min_size``; and the constants ``true`` and ``false``.

:func:`compile_filter` turns the text into nested closures once (:mod:`~frontier.filters.compiler`);
a bad expression raises :class:`FilterError` with the 1-based column at fault and a caret
under it. The only I/O is reading ``host_in``'s file, at compile time.
"""

from frontier.filters.builtins import BUILTINS, Response
from frontier.filters.compiler import PHASES, Filter, PhaseFilterError, PhaseFilters, compile_filter
from frontier.filters.language import FilterError, parse

__all__ = [
    "BUILTINS",
    "PHASES",
    "Filter",
    "FilterError",
    "PhaseFilterError",
    "PhaseFilters",
    "Response",
    "compile_filter",
    "parse",
]
