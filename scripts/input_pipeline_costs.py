#!/usr/bin/python3
"""CPU time per sample of the two built-in input pipelines, measured on this machine.

- cifar10: the TensorFlow CIFAR-10 tutorial's training augmentation
  (cifar10_input.py: random 24x24 crop of the 32x32 image, random flip,
  random brightness (max delta 63), random contrast (0.2 to 1.8), per-image
  standardisation), written with torch tensor ops on a uint8 image.
- imagenet-224: the ResNet training pipeline of torchvision's reference
  scripts (references/classification/presets.py: decode the JPEG,
  RandomResizedCrop(224), RandomHorizontalFlip, to a float tensor,
  Normalize), on a 500 x 375 JPEG (quality 90), about ImageNet's mean image
  size (Russakovsky et al. 2015: average 400 x 350 at full resolution;
  ILSVRC-2012's mean JPEG is about 110 KB).

One thread (torch.set_num_threads(1)); process CPU time, median of --reps
repetitions of --samples samples. Prints JSON with the per-sample times.

Usage: /usr/bin/python3 scripts/input_pipeline_costs.py [--samples 2000] [--reps 5]
"""
import argparse
import io
import json
import platform
import statistics
import time

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image


def cifar_sample(img, gen):
    # img: uint8 [3, 32, 32]
    y = int(torch.randint(0, 9, (1,), generator=gen))
    x = int(torch.randint(0, 9, (1,), generator=gen))
    c = img[:, y:y + 24, x:x + 24].float()
    if torch.rand(1, generator=gen) < 0.5:
        c = c.flip(-1)
    c = c + (torch.rand(1, generator=gen) * 126 - 63)
    factor = 0.2 + 1.6 * torch.rand(1, generator=gen)
    mean = c.mean(dim=(1, 2), keepdim=True)
    c = (c - mean) * factor + mean
    m = c.mean()
    adjusted_std = torch.clamp(c.std(), min=1.0 / (c.numel() ** 0.5))
    return (c - m) / adjusted_std


def synthetic_jpeg(width=500, height=375, quality=90, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack([
        128 + 80 * np.sin(xx / 37.0 + c) * np.cos(yy / 23.0 - c) for c in range(3)
    ], axis=-1)
    noisy = np.clip(base + rng.normal(0, 18, base.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(noisy).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8, generator=gen)

    def per_sample(fn, n):
        times = []
        for _ in range(args.reps):
            t = time.process_time()
            for i in range(n):
                fn(i)
            times.append((time.process_time() - t) / n)
        return statistics.median(times), min(times), max(times)

    cifar = per_sample(lambda i: cifar_sample(images[i % 64], gen), args.samples)

    jpeg = synthetic_jpeg()
    pipeline = T.Compose([
        T.RandomResizedCrop(224),
        T.RandomHorizontalFlip(),
        T.PILToTensor(),
        T.ConvertImageDtype(torch.float),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])

    def imagenet(_):
        img = Image.open(io.BytesIO(jpeg)).convert("RGB")
        return pipeline(img)

    inet = per_sample(imagenet, max(1, args.samples // 20))
    print(json.dumps({
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": Image.__version__,
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), platform.processor()),
        "clock": "process CPU time (time.process_time), one thread",
        "cifar10_per_sample_s": {"median": cifar[0], "min": cifar[1], "max": cifar[2]},
        "imagenet224_per_sample_s": {"median": inet[0], "min": inet[1], "max": inet[2]},
        "imagenet_jpeg_bytes": len(jpeg),
    }, indent=2))


if __name__ == "__main__":
    main()
