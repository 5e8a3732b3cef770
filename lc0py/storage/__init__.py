"""Files lc0py writes and caches it keeps: one atomic writer, one cache-folder resolver, verified
cache entries. Every package may use it (it imports nothing of lc0py but ``errors``).

* ``atomic.write_atomically`` / ``atomic.check_target``: the only way lc0py writes a file.
* ``cache.cache_folder`` / ``cache.cache_root``: where each cache lives (``LC0PY_CACHE_DIR``).
* ``cache.EntryStore``: cache entries with recorded digests, verified on load, evicted only if ours.
"""
