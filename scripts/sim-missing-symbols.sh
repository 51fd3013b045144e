#!/bin/sh
# scripts/sim-missing-symbols.sh VENV [SIMDIR]: the CUDA runtime, CUPTI, cuBLAS, cuBLASLt and
# cuDNN functions that the torch of VENV (and the NVIDIA wheels beside it) import and the
# simulated device in SIMDIR does not export, one per line; exit 1 when there is one. Python
# loads torch with RTLD_NOW, so any of them stops `import torch` (or the first call into the
# library that needs it). SIMDIR defaults to build/sim12 for a CUDA 12 torch, else build/sim.
# Reads the files only (nm -D); runs nothing of torch's.
set -eu
venv=$1
site=$(ls -d "$venv"/lib/python3*/site-packages | head -n 1)
[ -d "$site/torch/lib" ] || { echo "sim-missing-symbols: no torch in $venv" >&2; exit 2; }
major=$(sed -n "s/^cuda[^=]*= *'\([0-9]*\)\..*/\1/p" "$site/torch/version.py")
if [ "$major" = 12 ]; then sim=${2:-build/sim12}; else sim=${2:-build/sim}; fi
needed=$(mktemp); have=$(mktemp); trap 'rm -f "$needed" "$have"' EXIT
for f in "$site"/torch/lib/*.so* "$site"/nvidia/*/lib/*.so*; do
    [ -f "$f" ] && nm -D --undefined-only "$f" 2>/dev/null
done | awk '{print $NF}' | sed 's/@.*//' | grep -E '^(__cuda|cuda[A-Z]|cupti[A-Z]|cublas|cudnn)' | sort -u > "$needed"
for f in "$sim"/libcudart.so.* "$sim"/libcupti.so.* "$sim"/libcublas.so.* "$sim"/libcublasLt.so.* "$sim"/libcudnn.so.*; do
    [ -L "$f" ] || nm -D --defined-only "$f"
done | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$have"
missing=$(comm -23 "$needed" "$have")
echo "sim-missing-symbols: torch of $venv (CUDA ${major:-?}) imports $(wc -l < "$needed") of these functions; $sim lacks $(printf '%s' "$missing" | grep -c . || true)" >&2
[ -z "$missing" ] || { printf '%s\n' "$missing"; exit 1; }
