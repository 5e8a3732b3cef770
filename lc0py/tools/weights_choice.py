"""The one rule every command follows for ``--weights`` (stated in ``lc0py --help`` and the README).

* ``--weights FILE``: that file.
* ``--weights <random>``: the built-in T82-shaped net with random weights (said on stderr).
* no ``--weights``, or ``--weights <autodiscover>`` (lc0's default): the net lc0 would find in its
  folders (``lc0py.weights.discover``). If there is none, the commands that only measure speed
  (``backendbench``, ``benchmark``) go on with ``<random>`` and say so; every other command (the
  UCI engine, ``eval``, ``describenet``, ``export-onnx``), whose output is the net's own, stops
  with one line naming the folders it searched.

``verify`` and ``tune`` choose a random net by ``--preset`` instead (their default is named in
their ``--help``); a backend that needs no network (``random``) takes none.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lc0py.errors import UsageError

RANDOM = "<random>"
AUTODISCOVER = "<autodiscover>"

RULE = (
    "--weights: a .pb.gz file; <random>: the built-in T82-shaped random-weight net; "
    "without --weights (= <autodiscover>, lc0's default) the net lc0 finds in its folders, "
    "else <random> for the speed tools (backendbench, benchmark) and an error for the others"
)
"""The rule in one sentence, for ``--help`` texts."""


def resolve_weights(value: str | Path | None, command: str, *, speed_tool: bool,
                    backend: str = "auto") -> Path | None:
    """The network file ``command`` loads for ``--weights value`` under the rule above; ``None``
    when backend ``backend`` runs without a network."""
    from lc0py.backends.registry import default_weights, needs_weights

    text = "" if value is None else str(value).strip()
    if text not in ("", AUTODISCOVER, RANDOM):
        return Path(text)
    if not needs_weights(backend):
        return None
    if text == RANDOM:
        return default_weights()
    from lc0py.weights.discover import discover_weights_file, search_directories

    found = discover_weights_file()
    if found is not None:
        print(f"lc0py: {command}: no --weights given: using {found} (found in lc0's folders)",
              file=sys.stderr, flush=True)
        return Path(found)
    if speed_tool:
        return default_weights()
    raise UsageError(
        f"{command}: no network: give --weights FILE (or --weights {RANDOM} for the built-in "
        f"random-weight net); none found in lc0's folders ({', '.join(search_directories())})"
    )
