"""The crawl policies shipped with the crawler, one module each (the seam is :mod:`frontier.policy`).

Every module here is imported when a policy is looked up by name, and each
:class:`~frontier.policy.CrawlPolicy` subclass with a ``name`` registers itself: adding a
policy is adding a module, nothing else. Policies are pure decisions (no I/O but reading
their model in ``__init__``, no clock); keep a module's imports light, since looking up any
policy imports them all. Policies from other packages join through the ``crawl.policies``
entry-point group instead.
"""
