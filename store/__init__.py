"""The store: keeps what was fetched (WARC files, statistics). It never imports the engine."""
