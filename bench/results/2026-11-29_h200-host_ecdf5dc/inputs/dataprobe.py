import sys, statistics
sys.path.insert(0, 'scripts/bench')
from graph_replay import Variant, planes
from lc0py.chess import PositionHistory
from lc0py.tools.backendbench import make_batch
w = sys.argv[1]; n = int(sys.argv[2]); mb = int(sys.argv[3]) if len(sys.argv) > 3 else 16
v = Variant("cuda-fp16", w, "", mb)
h = PositionHistory.from_fen(None); fmt = int(v.backend.network.input_format)
g = v.graph(n)
inputs = {"random": planes(n, n), "startpos": make_batch(h, fmt, n),
          "kiwipete": make_batch(PositionHistory.from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"), fmt, n)}
t = {k: [] for k in inputs}
for r in range(6):
    for k, b in (inputs.items() if r % 2 == 0 else reversed(list(inputs.items()))):
        v.gpu.submit(b).result()  # its planes now in the input buffer
        v.pass_ms(g, 60)
        t[k].append(v.pass_ms(g, 300))
for k, x in t.items():
    print(f"{w} size {n} max_batch {mb} input {k:9s} {statistics.median(x):.4f} ms  rounds " + " ".join(f"{y:.4f}" for y in x))
v.close()
