#!/usr/bin/env python3
"""Peer benchmark (not part of lc0py, torch is not a dependency): the same network in PyTorch.

Loads the ``.pb.gz`` with lc0py's loader (or builds a preset), runs the attention-body forward
pass in fp16 with ``F.scaled_dot_product_attention`` (smolgen bias as the float ``attn_mask``),
``torch.compile`` (inductor), and one CUDA graph per batch size. Residual (SE-ResNet) nets run
``TorchResidualNet``: channels-last ``F.conv2d`` (cuDNN, benchmark mode), same compile + graph.
Timed like ``gpu_bench.py``:
H2D of the compact masks/values and D2H of policy/WDL/moves-left inside each timed batch,
median over iterations. Prints one JSON line per size and checks its policy against lc0py's
numpy reference on a few positions (so the peer is known to compute the same function).

    PYTHONPATH=$PWD python3 scripts/compare/peer_torch.py --weights /tmp/t82.pb.gz --sizes 64,256,1024
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from lc0py.model.tables import attention_policy_gather, conv_policy_gather, pos_encoding_table
from lc0py.weights.network import Activation, Network
from lc0py.weights.residual import ClassicalPolicyHead, ConvPolicyHead, ResidualNetwork


def act_fn(a: Activation):  # type: ignore[no-untyped-def]
    return {
        Activation.RELU: F.relu,
        Activation.RELU_2: lambda x: F.relu(x).square(),
        Activation.MISH: F.mish,
        Activation.SWISH: F.silu,
        Activation.SELU: F.selu,
        Activation.TANH: torch.tanh,
        Activation.SIGMOID: torch.sigmoid,
        Activation.NONE: lambda x: x,
    }[a]


class TorchNet(torch.nn.Module):
    def __init__(self, net: Network, dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        dev = "cuda"

        def t(a, dt=dtype):  # type: ignore[no-untyped-def]
            return None if a is None else torch.as_tensor(np.ascontiguousarray(a), device=dev).to(dt)

        self.net = net
        self.H = net.heads
        self.alpha = float(net.alpha)
        self.act, self.ffn_act, self.sg_act = (
            act_fn(net.default_act),
            act_fn(net.ffn_act),
            act_fn(net.smolgen_act),
        )
        e = net.embedding
        self.pe = t(pos_encoding_table())
        self.emb_w, self.emb_b = t(e.dense.w), t(e.dense.b)
        self.mult = t(e.mult_gate.T) if e.mult_gate is not None and e.add_gate is not None else None
        self.add = t(e.add_gate.T) if self.mult is not None else None
        self.layers = []
        for L in net.encoders:
            d = {
                "qkv_w": t(np.concatenate([L.q.w, L.k.w, L.v.w])),
                "qkv_b": t(
                    np.concatenate(
                        [
                            L.q.b,
                            L.k.b if L.k.b is not None else 0 * L.q.b,
                            L.v.b if L.v.b is not None else 0 * L.q.b,
                        ]
                    )
                ),
                "o_w": t(L.out.w),
                "o_b": t(L.out.b),
                "ln1": (t(L.ln1.gamma), t(L.ln1.beta), L.ln1.eps),
                "f1_w": t(L.ffn1.w),
                "f1_b": t(L.ffn1.b),
                "f2_w": t(L.ffn2.w),
                "f2_b": t(L.ffn2.b),
                "ln2": (t(L.ln2.gamma), t(L.ln2.beta), L.ln2.eps),
                "sg": None,
            }
            if L.smolgen is not None:
                s = L.smolgen
                d["sg"] = (
                    t(s.compress),
                    t(s.dense1.w),
                    t(s.dense1.b),
                    (t(s.ln1.gamma), t(s.ln1.beta), s.ln1.eps),
                    t(s.dense2.w),
                    t(s.dense2.b),
                    (t(s.ln2.gamma), t(s.ln2.beta), s.ln2.eps),
                )
            self.layers.append(d)
        self.sg_w = t(net.smolgen_w)
        p = net.policy
        self.p_w, self.p_b = t(p.embedding.w), t(p.embedding.b)
        self.q_w, self.q_b, self.k_w, self.k_b = t(p.wq.w), t(p.wq.b), t(p.wk.w), t(p.wk.b)
        self.promo = t(p.promotion)
        self.gather = torch.as_tensor(attention_policy_gather(), device=dev)
        v = net.value
        self.v = [(t(v.embedding.w), t(v.embedding.b)), (t(v.fc1.w), t(v.fc1.b)), (t(v.fc2.w), t(v.fc2.b))]
        m = net.moves_left
        self.m = (
            [(t(m.embedding.w), t(m.embedding.b)), (t(m.fc1.w), t(m.fc1.b)), (t(m.fc2.w), t(m.fc2.b))]
            if m
            else None
        )
        self.shifts = torch.arange(64, device=dev, dtype=torch.int64)
        self.dtype = dtype

    @staticmethod
    def ln(x, p):  # type: ignore[no-untyped-def]
        return F.layer_norm(x, (x.shape[-1],), p[0], p[1], p[2])

    def forward(self, masks: torch.Tensor, values: torch.Tensor):  # type: ignore[no-untyped-def]
        b = masks.shape[0]
        bits = (masks[:, :, None] >> self.shifts) & 1  # [B, 112, 64]
        tokens = (bits.to(self.dtype) * values[:, :, None].to(self.dtype)).transpose(1, 2)  # [B, 64, 112]
        z = torch.cat([tokens, self.pe.expand(b, 64, 64)], dim=-1)
        x = self.act(F.linear(z, self.emb_w, self.emb_b))
        if self.mult is not None:
            x = x * self.mult + self.add
        H = self.H
        for d in self.layers:
            qkv = F.linear(x, d["qkv_w"], d["qkv_b"])
            q, k, v = qkv.view(b, 64, 3, H, -1).permute(2, 0, 3, 1, 4)
            mask = None
            if d["sg"] is not None:
                cw, d1w, d1b, ln1, d2w, d2b, ln2 = d["sg"]
                c = F.linear(x, cw).reshape(b, -1)
                g = self.ln(self.sg_act(F.linear(c, d1w, d1b)), ln1)
                g = self.ln(self.sg_act(F.linear(g, d2w, d2b)), ln2)
                mask = F.linear(g.view(b, H, -1), self.sg_w).view(b, H, 64, 64)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            o = o.transpose(1, 2).reshape(b, 64, -1)
            x1 = self.ln(x + self.alpha * F.linear(o, d["o_w"], d["o_b"]), d["ln1"])
            f = F.linear(self.ffn_act(F.linear(x1, d["f1_w"], d["f1_b"])), d["f2_w"], d["f2_b"])
            x = self.ln(x1 + self.alpha * f, d["ln2"])
        p = self.act(F.linear(x, self.p_w, self.p_b))
        qp, kp = F.linear(p, self.q_w, self.q_b), F.linear(p, self.k_w, self.k_b)
        lg = (qp @ kp.transpose(1, 2)).float() / math.sqrt(qp.shape[-1])
        off = (kp[:, 56:64] @ self.promo.T).float()
        promo = lg[:, 48:56, 56:64, None] + off[:, None, :, 0:3] + off[:, None, :, 3:4]
        policy = torch.cat([lg.reshape(b, 4096), promo.reshape(b, 192)], dim=1)[:, self.gather]
        hv = self.act(F.linear(x, *self.v[0])).reshape(b, -1)
        hv = self.act(F.linear(hv, *self.v[1]))
        wdl = torch.softmax(F.linear(hv, *self.v[2]).float(), dim=-1)
        if self.m is not None:
            hm = self.act(F.linear(x, *self.m[0])).reshape(b, -1)
            hm = self.act(F.linear(hm, *self.m[1]))
            mlh = F.relu(F.linear(hm, *self.m[2])).float()[:, 0]
        else:
            mlh = torch.zeros(b, device=x.device)
        return policy, wdl, mlh


class TorchResidualNet(torch.nn.Module):
    """A residual (SE-ResNet) net in PyTorch: NCHW tensors in channels-last memory (cuDNN's fast
    layout for fp16 convolutions), ``F.conv2d`` for every convolution, the SE unit with lc0's
    layout (fc2 -> sigmoid scale | bias), convolution / classical / attention policy heads."""

    def __init__(self, net: ResidualNetwork, dtype: torch.dtype = torch.float16) -> None:
        super().__init__()
        dev = "cuda"

        def t(a, dt=dtype):  # type: ignore[no-untyped-def]
            return None if a is None else torch.as_tensor(np.ascontiguousarray(a), device=dev).to(dt)

        def conv(c):  # type: ignore[no-untyped-def]
            return t(c.w).contiguous(memory_format=torch.channels_last), t(c.b)

        self.act, self.dtype, self.C = act_fn(net.default_act), dtype, net.filters
        self.inp = conv(net.input)
        self.blocks = [
            (conv(b.conv1), conv(b.conv2),
             None if b.se is None else (t(b.se.fc1.w), t(b.se.fc1.b), t(b.se.fc2.w), t(b.se.fc2.b)))
            for b in net.blocks
        ]
        pol = net.policy
        self.kind = type(pol).__name__
        if isinstance(pol, ConvPolicyHead):
            self.pol = (conv(pol.conv1), conv(pol.conv2))
            self.gather = torch.as_tensor(conv_policy_gather(), device=dev)
        elif isinstance(pol, ClassicalPolicyHead):
            self.pol = (conv(pol.conv), (t(pol.fc.w), t(pol.fc.b)))
        else:
            if pol.encoders:
                raise SystemExit("peer_torch: policy encoder layers on a residual body are not modelled")
            h = pol.head
            self.pol = ((t(h.embedding.w), t(h.embedding.b)), (t(h.wq.w), t(h.wq.b)), (t(h.wk.w), t(h.wk.b)),
                        t(h.promotion))
            self.gather = torch.as_tensor(attention_policy_gather(), device=dev)
        v, m = net.value, net.moves_left
        self.wdl = v.wdl
        self.v = (conv(v.conv), (t(v.fc1.w), t(v.fc1.b)), (t(v.fc2.w), t(v.fc2.b)))
        self.m = None if m is None else (conv(m.conv), (t(m.fc1.w), t(m.fc1.b)), (t(m.fc2.w), t(m.fc2.b)))
        self.shifts = torch.arange(64, device=dev, dtype=torch.int64)

    def conv(self, x, wb, act: bool = True):  # type: ignore[no-untyped-def]
        y = F.conv2d(x, wb[0], wb[1], padding=(wb[0].shape[-1] - 1) // 2)
        return self.act(y) if act else y

    def fc_head(self, x, h):  # type: ignore[no-untyped-def]
        z = self.conv(x, h[0]).reshape(x.shape[0], -1)  # channel-major c*64 + s, as lc0
        return F.linear(self.act(F.linear(z, *h[1])), *h[2]).float()

    def forward(self, masks: torch.Tensor, values: torch.Tensor):  # type: ignore[no-untyped-def]
        b = masks.shape[0]
        bits = (masks[:, :, None] >> self.shifts) & 1  # [B, 112, 64]
        x = (bits.to(self.dtype) * values[:, :, None].to(self.dtype)).view(b, 112, 8, 8)
        x = self.conv(x.contiguous(memory_format=torch.channels_last), self.inp)
        for c1, c2, se in self.blocks:
            y = self.conv(self.conv(x, c1), c2, act=False)
            if se is not None:
                z = F.linear(self.act(F.linear(y.mean((2, 3)), se[0], se[1])), se[2], se[3])
                y = torch.sigmoid(z[:, : self.C])[:, :, None, None] * y + z[:, self.C :, None, None]
            x = self.act(y + x)
        if self.kind == "ConvPolicyHead":
            p = self.conv(self.conv(x, self.pol[0]), self.pol[1], act=False)
            policy = p.reshape(b, -1)[:, self.gather].float()
        elif self.kind == "ClassicalPolicyHead":
            policy = F.linear(self.conv(x, self.pol[0]).reshape(b, -1), *self.pol[1]).float()
        else:
            emb, wq, wk, promo = self.pol
            tok = F.selu(F.linear(x.flatten(2).transpose(1, 2), *emb))
            qp, kp = F.linear(tok, *wq), F.linear(tok, *wk)
            lg = (qp @ kp.transpose(1, 2)).float() / math.sqrt(qp.shape[-1])
            off = (kp[:, 56:64] @ promo.T).float()
            pr = lg[:, 48:56, 56:64, None] + off[:, None, :, 0:3] + off[:, None, :, 3:4]
            policy = torch.cat([lg.reshape(b, 4096), pr.reshape(b, 192)], dim=1)[:, self.gather]
        z = self.fc_head(x, self.v)
        if self.wdl:
            wdl = torch.softmax(z, dim=-1)
        else:
            q = torch.tanh(z[:, 0])
            wdl = torch.stack([(1 + q) / 2, torch.zeros_like(q), (1 - q) / 2], dim=1)
        mlh = F.relu(self.fc_head(x, self.m))[:, 0] if self.m is not None else torch.zeros(b, device=x.device)
        return policy, wdl, mlh


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default=None)
    ap.add_argument("--preset", default="t82")
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    if args.weights:
        from lc0py.weights import load_network

        net = load_network(args.weights)
    else:
        from lc0py.weights.presets import random_network

        net = random_network(args.preset, 1)
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
    residual = isinstance(net, ResidualNetwork)
    model: torch.nn.Module = TorchResidualNet(net) if residual else TorchNet(net)
    torch.backends.cudnn.benchmark = True
    fn = model.forward if args.no_compile else torch.compile(model.forward, dynamic=False)
    rng = np.random.default_rng(0)
    fpp = net.flops_per_position()
    # correctness check against lc0py's float64 reference on 4 positions
    from lc0py.backends.base import PlanesBatch
    from lc0py.model import cast_network, forward

    def batch_of(n: int) -> PlanesBatch:
        bits = rng.random((n, 112, 64)) < 0.12
        masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
        return PlanesBatch(masks, rng.random((n, 112)).astype(np.float32))

    chk = batch_of(4)
    with torch.no_grad():
        pol, _, _ = model.forward(
            torch.as_tensor(chk.masks.view(np.int64)).cuda(), torch.as_tensor(chk.values).cuda()
        )
    ref = forward(cast_network(net, np.float64), chk.dense(np.float64), np.float64)
    err = float(np.linalg.norm(pol.cpu().numpy() - ref.policy) / np.linalg.norm(ref.policy))
    print(json.dumps({"peer": "torch", "check_policy_rel_err": err, "torch": torch.__version__}), flush=True)
    for n in [int(s) for s in args.sizes.split(",")]:
        b = batch_of(n)
        h_masks = torch.as_tensor(b.masks.view(np.int64)).pin_memory()
        h_values = torch.as_tensor(b.values).pin_memory()
        d_masks, d_values = h_masks.cuda(), h_values.cuda()
        t0 = time.time()
        with torch.no_grad():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    fn(d_masks, d_values)
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outs = fn(d_masks, d_values)
        compile_s = time.time() - t0
        host = [torch.empty(o.shape, dtype=o.dtype).pin_memory() for o in outs]
        times = []
        for i in range(args.iters + 3):
            t = time.perf_counter()
            d_masks.copy_(h_masks, non_blocking=True)
            d_values.copy_(h_values, non_blocking=True)
            graph.replay()
            for h, o in zip(host, outs, strict=True):
                h.copy_(o, non_blocking=True)
            torch.cuda.synchronize()
            float(host[0][-1, -1])
            if i >= 3:
                times.append(time.perf_counter() - t)
        med = float(np.median(times))
        print(
            json.dumps(
                {
                    "peer": "torch compile+graph+" + ("cudnn" if residual else "sdpa"),
                    "batch": n,
                    "nps": n / med,
                    "median_ms": med * 1e3,
                    "tflops": fpp * n / med / 1e12,
                    "compile_s": compile_s,
                }
            ),
            flush=True,
        )
        del graph
    return 0


if __name__ == "__main__":
    sys.exit(main())
