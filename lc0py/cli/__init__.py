"""Command-line entry point (``lc0py``)."""
