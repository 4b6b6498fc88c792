"""Freshness-driven recrawl of social-network users (Guo et al.; ``shared/papers/freshness.md``).

Pure, like the rest of :mod:`frontier`: time is passed in as unix seconds, nothing here reads a
clock or does I/O. What each module holds:

- :mod:`~frontier.freshness.planner`: the :class:`Planner` contract every driver uses (the
  simulator, ``crawl fresh schedule``, the live ``--policy freshness``);
- :mod:`~frontier.freshness.penalty`: the penalty ω and potentiality (the paper's blur);
- :mod:`~frontier.freshness.poisson`: rate estimates with a Gamma prior; Algorithm 1, the organ pipe;
- :mod:`~frontier.freshness.calendar`: local days (UTC+8 by default), slots and day types;
- :mod:`~frontier.freshness.hashmodel`: the Hash model's tables; Algorithm 2 per day and continuous;
- :mod:`~frontier.freshness.routing`: the four user classes and which model serves each;
- :mod:`~frontier.freshness.params` and :mod:`~frontier.freshness.planners`: the planners
  (Poisson, Hash, the paper's mix), their parameters and ``--set`` overrides;
- :mod:`~frontier.freshness.due`: the due-time queue the planners share;
- :mod:`~frontier.freshness.partition` and :mod:`~frontier.freshness.architectures`: splitting
  the work over agents (the organ pipe's RR split, set division, the centralized and the
  distributed architectures);
- :mod:`~frontier.freshness.sharing` and :mod:`~frontier.freshness.central`: a live recrawl over
  agents, distributed (the position split, rounds of loads, user moves as messages) or
  centralized (agent 0 plans, crawls go to the shortest to-do list, answers come back).

A user's life: ``begin`` routes it from its history to Poisson or Hash; a Poisson user gets one
due time per period on the organ pipe, a Hash user a due time from its tables; ``take`` hands out
due users by expected backlog within the calls left; ``crawled`` reports the posts found, which
update the models, and plans the next crawl.
"""
