#!/usr/bin/env python3
"""ResNet-50's convolutions one by one on this GPU: cuDNN against the GEMMs
an im2col convolution calls (what dtsim's CUDA backend runs), fp32, TF32 off.

For each distinct convolution of ResNet-50 v1.5 (torchvision's layout) at
batch N, times with CUDA events (mean of --repeat after --warmup):
    cudnn  fwd, dgrad, wgrad  (aten.convolution_backward; cudnn.benchmark on,
                               as scripts/torch_reference.py runs)
    gemm   fwd  W (K, CRS) x col (CRS, N P)
           dgrad W^T x dy (K, N P)         wgrad dy x col^T
           as torch.mm on contiguous row-major operands (one cuBLAS SGEMM)
    bgemm  fwd and dgrad as N GEMMs of one sample each (strided batched,
           the weights shared), the layout (N, K, P) of the activations
    unfold im2col's copy alone (F.unfold)
and prints one line per layer and the totals weighted by how often the layer
occurs, in ms per training step:

    python3 scripts/torch_conv_layers.py --batch 64

--deepbench DIR also writes the cuDNN passes as DIR/conv.csv and the forward
GEMMs as DIR/gemm.csv in Baidu DeepBench's format (one row per distinct
layer; GEMMs in cuBLAS's column-major terms: m = N P, n = K, k = C R S, no
transposes), the input of `dtsim validate kernels`. --from-table FILE writes
them from a table this script printed before, without a GPU:

    python3 scripts/torch_conv_layers.py --from-table results/h100/conv-layers.txt \
        --gpu H100 --deepbench scenarios/fit/h100-kernels
"""
import argparse
import sys

# (C, K, H, R, stride, pad, count) of ResNet-50 v1.5 at 224x224: stem, then
# per stage the first block's layers and the repeated blocks' layers.
LAYERS = [
    (3, 64, 224, 7, 2, 3, 1),
    # stage 1, 56x56
    (64, 64, 56, 1, 1, 0, 1), (64, 64, 56, 3, 1, 1, 3), (64, 256, 56, 1, 1, 0, 4),
    (256, 64, 56, 1, 1, 0, 2),
    # stage 2: 56 -> 28 (stride in the 3x3 and the downsample)
    (256, 128, 56, 1, 1, 0, 1), (128, 128, 56, 3, 2, 1, 1), (256, 512, 56, 1, 2, 0, 1),
    (128, 512, 28, 1, 1, 0, 4), (512, 128, 28, 1, 1, 0, 3), (128, 128, 28, 3, 1, 1, 3),
    # stage 3: 28 -> 14
    (512, 256, 28, 1, 1, 0, 1), (256, 256, 28, 3, 2, 1, 1), (512, 1024, 28, 1, 2, 0, 1),
    (256, 1024, 14, 1, 1, 0, 6), (1024, 256, 14, 1, 1, 0, 5), (256, 256, 14, 3, 1, 1, 5),
    # stage 4: 14 -> 7
    (1024, 512, 14, 1, 1, 0, 1), (512, 512, 14, 3, 2, 1, 1), (1024, 2048, 14, 1, 2, 0, 1),
    (512, 2048, 7, 1, 1, 0, 3), (2048, 512, 7, 1, 1, 0, 2), (512, 512, 7, 3, 1, 1, 2),
]


def timed(torch, fn, warmup, repeat):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeat  # ms


def write_deepbench(folder, gpu, batch, rows, source):
    """rows: (C, K, H, R, s, pad, {name: ms}) per distinct layer."""
    import os
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "conv.csv"), "w") as f:
        f.write("gpu,precision,source_app,w,h,c,n,k,s,r,pad_w,pad_h,stride_w,stride_h,p,q,"
                "fwd_ms,bwd_input_ms,bwd_params_ms,fwd_algorithm\n")
        for c, k, h, r, s, pad, ms in rows:
            o = (h + 2 * pad - r) // s + 1
            f.write("%s,fp32,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,\n" %
                    (gpu, source, h, h, c, batch, k, r, r, pad, pad, s, s, o, o,
                     ms["cudnn_fwd"], ms["cudnn_dgrad"], ms["cudnn_wgrad"]))
    with open(os.path.join(folder, "gemm.csv"), "w") as f:
        f.write("gpu,precision,source_app,m,n,k,a_transpose,b_transpose,time_ms,tflops\n")
        for c, k, h, r, s, pad, ms in rows:
            o = (h + 2 * pad - r) // s + 1
            m, n, kk = batch * o * o, k, c * r * r
            t = ms["gemm_fwd"]
            f.write("%s,fp32,%s,%d,%d,%d,N,N,%.4f,%.3f\n" %
                    (gpu, source, m, n, kk, t, 2.0 * m * n * kk / (t * 1e-3) / 1e12))


def from_table(path):
    """The per-layer rows of a table this script printed."""
    rows, names = [], None
    for line in open(path):
        fields = line.split()
        if fields[:5] == ["C", "K", "H", "R", "s"]:
            names = fields[5:]
        elif names and len(fields) == 6 + len(names) and fields[5].startswith("x"):
            c, k, h, r, s = (int(x) for x in fields[:5])
            ms = dict(zip(names, (float(x) for x in fields[6:])))
            rows.append((c, k, h, r, s, r // 2, ms))
    if not rows:
        raise SystemExit("torch_conv_layers: no layer rows in %s" % path)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--deepbench", metavar="DIR", help="also write conv.csv and gemm.csv here")
    ap.add_argument("--from-table", metavar="FILE", help="convert a printed table (no GPU)")
    ap.add_argument("--gpu", default="H100", help="the GPU's name in the CSVs (default H100)")
    a = ap.parse_args()
    if a.from_table:
        if not a.deepbench:
            raise SystemExit("torch_conv_layers: --from-table needs --deepbench DIR")
        write_deepbench(a.deepbench, a.gpu, a.batch, from_table(a.from_table), "ResNet-50")
        return 0
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_conv_layers: PyTorch is not installed; skipped")
        return 3
    if not torch.cuda.is_available():
        print("torch_conv_layers: no GPU; skipped")
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    conv_bwd = torch.ops.aten.convolution_backward
    n = a.batch
    names = ["cudnn_fwd", "cudnn_dgrad", "cudnn_wgrad", "gemm_fwd", "gemm_dgrad", "gemm_wgrad",
             "bgemm_fwd", "bgemm_dgrad", "unfold"]
    totals = dict.fromkeys(names, 0.0)
    measured = []
    print("%-26s %s" % ("C K H R s", " ".join("%11s" % x for x in names)))
    for c, k, h, r, s, pad, count in LAYERS:
        oh = (h + 2 * pad - r) // s + 1
        p, crs = oh * oh, c * r * r
        x = torch.randn(n, c, h, h, device="cuda")
        w = torch.randn(k, c, r, r, device="cuda")
        dy = torch.randn(n, k, oh, oh, device="cuda")
        col = torch.randn(crs, n * p, device="cuda")
        dyt = torch.randn(k, n * p, device="cuda")
        wm = w.reshape(k, crs)
        colb = col.reshape(crs, n, p).permute(1, 0, 2).contiguous()
        dyb = dy.reshape(n, k, p)
        ms = {
            "cudnn_fwd": lambda: F.conv2d(x, w, None, s, pad),
            "cudnn_dgrad": lambda: conv_bwd(dy, x, w, None, [s, s], [pad, pad], [1, 1], False,
                                            [0, 0], 1, [True, False, False]),
            "cudnn_wgrad": lambda: conv_bwd(dy, x, w, None, [s, s], [pad, pad], [1, 1], False,
                                            [0, 0], 1, [False, True, False]),
            "gemm_fwd": lambda: torch.mm(wm, col),
            "gemm_dgrad": lambda: torch.mm(wm.t(), dyt),
            "gemm_wgrad": lambda: torch.mm(dyt, col.t()),
            "bgemm_fwd": lambda: torch.matmul(wm, colb),
            "bgemm_dgrad": lambda: torch.matmul(wm.t(), dyb),
            "unfold": lambda: F.unfold(x, r, 1, pad, s),
        }
        row = [timed(torch, ms[m], a.warmup, a.repeat) for m in names]
        measured.append((c, k, h, r, s, pad, dict(zip(names, row))))
        for m, t in zip(names, row):
            totals[m] += t * count
        print("%-26s %s" % ("%d %d %d %d %d x%d" % (c, k, h, r, s, count),
                            " ".join("%11.3f" % t for t in row)))
        del x, w, dy, col, dyt, colb
        torch.cuda.empty_cache()
    print("%-26s %s" % ("total (ms per step)", " ".join("%11.2f" % totals[m] for m in names)))
    print("cudnn fwd+dgrad+wgrad %.2f ms; im2col GEMMs %.2f ms; batched fwd+dgrad + GEMM wgrad "
          "%.2f ms (batch %d, %s)" %
          (totals["cudnn_fwd"] + totals["cudnn_dgrad"] + totals["cudnn_wgrad"],
           totals["gemm_fwd"] + totals["gemm_dgrad"] + totals["gemm_wgrad"],
           totals["bgemm_fwd"] + totals["bgemm_dgrad"] + totals["gemm_wgrad"], n,
           torch.cuda.get_device_name(0)))
    if a.deepbench:
        write_deepbench(a.deepbench, a.gpu, n, measured, "ResNet-50")
    return 0


if __name__ == "__main__":
    sys.exit(main())
