"""The frontier: everything that decides what to fetch next. It does no network I/O.

Like h11, this package holds no I/O code besides its own files (the sieve's and the
virtualizer's): no sockets, no asyncio, no clock. Time is passed in as ``now``
(seconds on the monotonic clock) by the engine. ``tests/test_layering.py`` enforces it.

The life of one URL (see ARCHITECTURE.md for the numbered steps):

1. A link found in a page is canonicalized (:mod:`frontier.urls`), shown to the crawl
   policy (:mod:`frontier.policy`; the policies themselves are modules of
   :mod:`frontier.policies`), checked against the URL cache and handed to the
   *sieve* (:mod:`frontier.sieve`), which emits every URL exactly once, in the order
   it was first enqueued. A policy that ranks URLs gives each a *lane* that travels
   with it.
2. The *distributor* (:mod:`frontier.distributor`) reads URLs out of the sieve. The first
   URL of an unknown host (scheme+authority) creates a :class:`~frontier.visit_state.VisitState`
   with ``/robots.txt`` queued first; the engine resolves its name and the visit state
   joins the :class:`~frontier.workbench.WorkbenchEntry` of its IP.  A URL of a known host
   is appended to its visit state's FIFO (one per lane, when ranked), or to the host's
   on-disk queue in the *workbench virtualizer* (:mod:`frontier.virtualizer`) when the
   workbench is over its byte budget or the host already has URLs on disk. Revisits the
   policy asks for wait in :mod:`frontier.revisits` and, once due, go ahead of their
   host's backlog.
3. The three levels are URL (path+query bytes) → visit state (one per host, next-fetch
   time for host politeness) → workbench entry (one per IP, next-fetch time for IP
   politeness). The :class:`~frontier.workbench.Workbench` orders entries by the later of
   their IP's next-fetch time and their first host's next-fetch time, so
   ``acquire(now)`` hands out a visit state only when both host and IP politeness allow
   a fetch now. Acquiring takes the whole IP off the workbench: one fetch in flight per IP.
4. The engine fetches the visit state's next URL (a retry, then due revisits, then the
   backlog: FIFO, or, ranked, the lane the policy ranks best now) and calls
   ``release(visit_state, now)`` with the end time of the fetch; both delays are counted
   from that instant. The policy sees the response (``on_fetched``) before its links come
   back to step 1.
"""
