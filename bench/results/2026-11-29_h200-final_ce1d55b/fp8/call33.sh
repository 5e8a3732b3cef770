#!/usr/bin/env bash
# stop 26, call 5: cuda-fp8 with gemm_tune: fp16 / fp8 default / fp8 with smolgen's generator in fp16 / fp8 gemm_tune=off,
# e2e_like_peer at 256 and 1024, 2 alternating rounds
set -u
export PYTHONPATH=$PWD/.whl/site:$PWD PYTHONUNBUFFERED=1 LC0PY_KERNEL_CACHE=/tmp/k LC0PY_CACHE_DIR=/tmp/c LC0PY_TUNED_DIR=/tmp/tuned33
O=$OUT/fp8; mkdir -p $O; t=$(date +%s); cp .dev/call33.sh $O/
{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "tree $C"; } > $O/info.txt 2>&1
[ -f /tmp/t82.pb.gz ] || timeout 60 python3 -m lc0py make-net --preset t82 -o /tmp/t82.pb.gz > /dev/null 2>&1
run() { # label backend opts
  timeout 90 python3 scripts/bench/e2e_like_peer.py /tmp/t82.pb.gz 256,1024 "$3" --backend $2 2>>$O/err | sed "s|^{|{\"side\": \"$1\", |" >> $O/rounds.log; }
for r in 1 2; do
  [ $(( $(date +%s) - t )) -gt 330 ] && break
  run fp16 cuda-fp16 ""; run fp8 cuda-fp8 ""; run fp8_gen16 cuda-fp8 "fp8_gemms=qkv+out+ffn"; run fp8_untuned cuda-fp8 "gemm_tune=off"
  echo "round $r $(( $(date +%s) - t )) s" >> $O/info.txt
done
python3 - $O/rounds.log <<'PY' | tee -a $O/info.txt
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for b in (256, 1024):
    med = {s: statistics.median([r["nps"] for r in rows if r["side"] == s and r["batch"] == b]) for s in ("fp16", "fp8", "fp8_gen16", "fp8_untuned") if any(r["side"] == s and r["batch"] == b for r in rows)}
    print(b, {s: round(v) for s, v in med.items()}, {s: round(v / med["fp16"], 3) for s, v in med.items()})
PY
tail -3 $O/err >> $O/info.txt 2>/dev/null; cat $O/info.txt
