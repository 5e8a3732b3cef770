"""The game and its search tree (``NodeTree``, flat arrays: ``lc0py/search/core/tree.py``)."""

from lc0py.search.core.tree import TERMINAL, NodeTree, NodeView

__all__ = ["TERMINAL", "NodeTree", "NodeView"]
