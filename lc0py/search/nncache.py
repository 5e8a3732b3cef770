"""The NN cache (docs/search.md §12): compiled, ``lc0py/search/core/nncache.py``."""

from lc0py.search.core.nncache import NNCache

__all__ = ["NNCache"]
