"""The offline freshness simulator (issue 15, digest §5, §6.2-6.4): recrawl planners run on a virtual clock.

Role: measure how many new posts a :class:`~frontier.freshness.planner.Planner` collects, and how
fresh it keeps the archive, under an API's limits, without a network or a wall clock. It lives
in ``bench/`` rather than ``tools/`` because it is an evaluation instrument, not an offline tool
a crawl operator runs: its ground truth is the benchmark's synthetic population
(:mod:`bench.invitro.posting`) or a replayed trace, and its only user is the evaluation
``bench/freshness_eval.py`` (and the tests). The planners themselves stay in ``frontier/``.

Modules, by role:

- :mod:`~bench.freshness.trace`: the ground truth, every post of every user, from a population or
  a replayed ``user_id,unix_ts`` CSV (left-truncated users marked);
- :mod:`~bench.freshness.api`: the emulated API, newest K posts per call, calls per clock hour,
  capture times by post identity;
- :mod:`~bench.freshness.simulator`: the discrete-event driver of a planner over the API;
- :mod:`~bench.freshness.metrics`: collected, coverage, lost to the cap, potentiality, staleness,
  delay, freshness, overall and per class;
- :mod:`~bench.freshness.baselines`: round-robin, the cyclic single visit and rate-proportional.
"""
