"""The engine: runs things. Processes, the event loop, fetching, DNS, robots, parsing, CLI.

The engine turns what happens on the network into calls on the frontier (``frontier/``,
pure, no I/O) and records what was fetched in the store (``store/``). Dependencies point
one way: engine → frontier, store. See ARCHITECTURE.md.
"""
