"""HBM bandwidth on this GPU for the pass's element-wise shapes: D2D memcpy, a uint4 copy kernel
(grid-stride, several grids), an in-place read-modify-write -- the ceiling for residual_layernorm
(65536 x 768 fp16 read + write) and bias_act (65536 x 1024 in place)."""
import cupy as cp, numpy as np
rows = 65536
def timeit(f, reps=30):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    f(); f(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(7):
        s.record(); [f() for _ in range(reps)]; e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / reps * 1e3)
    return sorted(ts)[3]
src = r'''
extern "C" __global__ void copy4(const uint4* __restrict__ a, uint4* __restrict__ b, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = a[i];
}
extern "C" __global__ void copy4x2(const uint4* __restrict__ a, uint4* __restrict__ b, unsigned n) {
  unsigned st = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += 2 * st) {
    uint4 x = a[i]; uint4 y; bool two = i + st < n; if (two) y = a[i + st];
    b[i] = x; if (two) b[i + st] = y; }
}
extern "C" __global__ void rmw4(uint4* __restrict__ a, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint4 x = a[i]; x.x ^= 0x00010001u; a[i] = x; }
}
extern "C" __global__ void read4(const uint4* __restrict__ a, unsigned* out, unsigned n) {
  unsigned acc = 0;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc ^= a[i].x;
  if (acc == 0x12345678u) out[0] = acc; }
'''
m = cp.RawModule(code=src)
for width in (768, 1024):
    nbytes = rows * width * 2
    a = cp.random.random(nbytes // 4, dtype=cp.float32).view(cp.uint8)
    b = cp.empty_like(a); o = cp.zeros(1, cp.uint32)
    n4 = nbytes // 16
    us = timeit(lambda: cp.cuda.runtime.memcpyAsync(b.data.ptr, a.data.ptr, nbytes, 3, 0))
    print(f"[{rows} x {width} fp16 = {nbytes/1e6:.1f} MB] memcpy D2D {us:.1f} us  {2*nbytes/us/1e6:.2f} TB/s (r+w)")
    for name in ("copy4", "copy4x2", "rmw4", "read4"):
        f = m.get_function(name)
        for blocks, th in ((n4 // 256, 256), (132 * 8, 256), (132 * 16, 256), (132 * 4, 512), (65535, 256)):
            blocks = max(1, min(blocks, 2**31 - 1))
            if name == "copy4x2": blk = blocks
            args = (a, o, np.uint32(n4)) if name == "read4" else ((a, np.uint32(n4)) if name == "rmw4" else (a, b, np.uint32(n4)))
            us = timeit(lambda: f((blocks,), (th,), args))
            traffic = nbytes if name == "read4" else 2 * nbytes
            print(f"  {name:8s} grid {blocks:6d} x {th}: {us:7.1f} us  {traffic/us/1e6:.2f} TB/s")
