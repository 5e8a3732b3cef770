"""lc0's multi-device backends: ``demux``, ``roundrobin`` and ``multiplexing``.

Each wraps child backends created through the registry from lc0's nested option groups
(``lc0py.backends.option_groups``)::

    --backend=demux --backend-opts=(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)
    --backend=demux --backend-opts=backend=cuda-fp16,(gpu=0),(gpu=1)     # the same, inherited

* ``demux``: every batch is cut into ``threads``-total parts (at least ``minimum-split-size``
  positions each), the parts go to the children in turn and are computed at once; the outputs
  come back joined in the batch's order (lc0 ``network_demux.cc``).
* ``roundrobin``: whole batches go to the children in turn (lc0 ``network_rr.cc``).
* ``multiplexing``: requests are queued; each child's worker joins as many queued requests as fit
  in ``max_batch`` (default 256) and computes them as one batch (lc0 ``network_mux.cc``).

A group's ``backend`` (else the nearest parent's, else a named group's name) picks its child;
``threads`` (default 1) is read per group the same way; every other key of the group and its
parents goes to the child (``gpu=N`` to a GPU backend). Children run concurrently, each with a
thread of its own that waits for its results and joins them (``feeding``; GPU backends release
the GIL while they wait); an error in any child surfaces as one
``Lc0pyError`` naming the child.
"""
