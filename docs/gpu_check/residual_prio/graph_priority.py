"""Which stream priorities the kernels of a captured forward pass carry: every kernel node's
CU_LAUNCH_ATTRIBUTE_PRIORITY, counted, for the graph of each batch bucket (res-20x256).
    python3 graph_priority.py NET.pb.gz"""
import collections
import sys

import numpy as np
from cuda.bindings import driver as drv

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu import cuda_platform
from lc0py.backends.registry import create_backend

seen = []
orig = cuda_platform.CudaPlatform.end_capture

def end_capture(self, stream):
    err, graph = drv.cuStreamEndCapture(self._stream(stream))
    err, _, n = drv.cuGraphGetNodes(graph, 0)
    err, nodes, n = drv.cuGraphGetNodes(graph, n)
    count = collections.Counter()
    for node in nodes:
        err, kind = drv.cuGraphNodeGetType(node)
        if kind == drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
            err, val = drv.cuGraphKernelNodeGetAttribute(
                node, drv.CUkernelNodeAttrID.CU_LAUNCH_ATTRIBUTE_PRIORITY)
            count[int(val.priority) if int(err) == 0 else f"err {err}"] += 1
    seen.append(dict(count))
    exe = cuda_platform._check(drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
    drv.cuGraphDestroy(graph)
    return self._keep(exe)

cuda_platform.CudaPlatform.end_capture = end_capture

b = create_backend("cuda-fp16", sys.argv[1], "max_batch=1024")
print("range", drv.cuCtxGetStreamPriorityRange())
rng = np.random.default_rng(1)
for n in (256, 1024):
    bits = rng.random((n, 112, 64)) < 0.12
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    b.evaluate(PlanesBatch(masks, rng.random((n, 112)).astype(np.float32)))
for i, c in enumerate(seen):
    print("graph", i, "kernel nodes by priority:", c)
b.close()
