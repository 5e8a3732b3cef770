"""Medians per (tag, side, size) of backendbench JSON lines, each side against M and the peer."""
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
peers = {}
for path in sys.argv[2:]:
    for d in (json.loads(l) for l in open(path) if l.startswith("{")):
        if "batch" in d:
            peers[(path, d["batch"])] = d["nps"]
for tag in dict.fromkeys(r["tag"] for r in rows):
    sides = list(dict.fromkeys(r["side"] for r in rows if r["tag"] == tag))
    for size in sorted({r["size"] for r in rows if r["tag"] == tag}):
        med = {s: statistics.median([r["nps"] for r in rows if r["tag"] == tag and r["side"] == s and r["size"] == size])
               for s in sides}
        peer = [v for (p, b), v in peers.items() if b == size and f"peer_{tag}" in p]
        line = f"{tag} {size}: " + ", ".join(f"{s} {round(v)}" for s, v in med.items())
        if "M" in med:
            line += " | vs M: " + ", ".join(f"{s} {v / med['M']:.3f}" for s, v in med.items() if s != "M")
        if peer:
            line += f" | peer {round(peer[0])}: " + ", ".join(f"{s} {v / peer[0]:.3f}" for s, v in med.items())
        print(line)
