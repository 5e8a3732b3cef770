"""lc0py's public evaluation API: load a net, evaluate python-chess boards, look inside.

* :func:`load` -> :class:`Net` (``net.evaluate(board)``, ``net.evaluate_many(boards)``,
  ``net.trace(board)``);
* :class:`Evaluation`: policy over the legal moves, WDL, Q, moves-left;
* :class:`Trace`: per-layer activations and per-head attention probabilities.

Re-exported by ``lc0py`` itself; see the README's first example.
"""

from lc0py.api.evaluation import Evaluation
from lc0py.api.net import Net, Position, load
from lc0py.api.trace import Trace

__all__ = ["Evaluation", "Net", "Position", "Trace", "load"]
