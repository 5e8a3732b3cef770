import io, sys, traceback, zipfile
import numpy
print("numpy", numpy.__version__, "python", sys.version.split()[0])
from lc0py.backends.gpu.fp8_calibration import calibrate, to_bytes, from_bytes
from lc0py.weights.presets import random_network
from lc0py.tools.verify import random_planes_batch
net = random_network("res-tiny", 11, filters=32, se_hidden=8)
cal = calibrate(net, random_planes_batch(64, 9).dense(numpy.float32))
b = to_bytes(cal)
print("bytes", len(b))
zf = zipfile.ZipFile(io.BytesIO(b))
for info in zf.infolist()[:4]:
    raw = zf.read(info.filename)
    print(info.filename, info.file_size, raw[:80])
try:
    z = numpy.load(io.BytesIO(b))
    for k in z.files:
        print(k, z[k].dtype, z[k].shape)
except Exception:
    traceback.print_exc()
try:
    from_bytes(b, net, "x"); print("from_bytes ok")
except Exception:
    traceback.print_exc()
