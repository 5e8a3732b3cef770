"""Does the CUDA binding release the GIL inside cuEventSynchronize? A counting thread runs while
the main thread waits for a ~7 ms batch, once by event.synchronize() and once by time.sleep of
the same length: equal counts mean the wait let the other thread run."""
import sys, threading, time
import numpy as np
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend

backend = create_backend("cuda-fp16", sys.argv[1], "max_batch=1024,winograd_split=on")
rng = np.random.default_rng(1)
batch = PlanesBatch(rng.integers(0, 2**63, size=(1024, 112), dtype=np.uint64),
                    rng.uniform(0.5, 1.5, (1024, 112)).astype(np.float32))
for _ in range(3):
    backend.evaluate(batch)
count = [0]; stop = [False]
def spin():
    while not stop[0]:
        count[0] += 1
t = threading.Thread(target=spin); t.start()
runner = backend._runner if hasattr(backend, "_runner") else None
for trial in range(3):
    pending = backend.evaluate_async(batch)
    slot = pending._pending._slot if hasattr(pending, "_pending") else pending._slot
    c0 = count[0]; t0 = time.perf_counter()
    slot.event.synchronize()
    dt = time.perf_counter() - t0; c1 = count[0]
    pending.result()
    time.sleep(0.001)
    c2 = count[0]; time.sleep(dt); c3 = count[0]
    print(f"wait {dt*1e3:.2f} ms: counter +{c1-c0} during synchronize, +{c3-c2} during a sleep as long")
stop[0] = True; t.join(); backend.close()
