import io, os, sys, tempfile, traceback
import numpy as np
os.environ["LC0PY_CACHE_DIR"] = tempfile.mkdtemp()
import lc0py.backends.gpu.fp8_calibration as fc
orig = fc.from_bytes
def spy(data, network, where):
    print("from_bytes: len", len(data), "head", data[:120])
    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        print("files", z.files[:5]); print("version", z["version"])
    except Exception:
        traceback.print_exc()
    return orig(data, network, where)
fc.from_bytes = spy
from lc0py.weights.presets import random_network
from lc0py.tools.verify import random_planes_batch
from lc0py.gpu.factory import create_platform
from lc0py.backends.gpu.network import GpuNetwork
from lc0py.backends.gpu.options import GpuOptions
net = random_network("res-tiny", 11, filters=32, se_hidden=8)
cal = fc.calibrate(net, random_planes_batch(64, 9).dense(np.float32))
print("stored", fc.store_calibration(cal))
p = create_platform("nvidia", 0)
try:
    gpu = GpuNetwork(p, net, fp16=True, options=GpuOptions.from_text("max_batch=16,precision=fp8"))
    print("GpuNetwork ok, calibrated:", gpu.fp8_calibration is not None)
except Exception:
    traceback.print_exc()
