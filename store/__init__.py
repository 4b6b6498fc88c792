"""The store: keeps what was fetched (ARCHITECTURE.md, step 7). It never imports the engine.

Modules, by role:

- :mod:`~store.archive`: ``Archive``, the one object the engine holds: dedup, WARC, index, graph;
- :mod:`~store.warc`: WARC/1.1 records (request, response, revisit, metadata, dns), files, torn tails;
- :mod:`~store.signature`: content signatures (BUbiNG's near-duplicate heuristic), pure;
- :mod:`~store.dedup`: signatures seen and their first captures (Bloom filter + SQLite);
- :mod:`~store.cdxj`: CDXJ indexes per WARC file and lookups by URL;
- :mod:`~store.linkgraph`: page and host link graph segments per WARC file, and their reader;
- :mod:`~store.recovery`: rebuilding indexes and graph segments from the WARC after a crash;
- :mod:`~store.errors`: ``StoreFull`` and its family.
"""
