#!/bin/sh
# scripts/cuda12-headers.sh PINS DIR CUDA_HOME: makes DIR/include the CUDA 12 headers the
# simulator's CUDA 12 build compiles against (sim/cuda12.mk): the include/ folders of the NVIDIA
# wheels pinned in PINS (downloaded by pip, whose cache makes later runs quick; the wheels are
# not kept), and a copy of CUDA_HOME's cuDNN 9 headers (cuDNN 9 is one library for CUDA 12 and
# 13; the copy makes their #include "cuda_runtime_api.h" find CUDA 12's). Writes DIR/.headers (a
# copy of PINS) last and does nothing when it is there already. Exits non-zero with one clear
# line when the wheels cannot be had.
set -eu
pins=$1
dir=$2
cuda=$3
if [ -f "$dir/.headers" ] && cmp -s "$pins" "$dir/.headers" && [ -f "$dir/include/cuda_runtime_api.h" ]; then
    exit 0
fi
wheels=$(mktemp -d); trap 'rm -rf "$wheels"' EXIT
echo "cuda12-headers: downloading the CUDA 12 headers' wheels of $pins (about 600 MB the first time)" >&2
if ! python3 -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
        --progress-bar off -q -r "$pins" -d "$wheels" >&2; then
    echo "cuda12-headers: could not download the wheels of $pins (no network?)" >&2
    exit 1
fi
rm -rf "$dir/include" "$dir/.headers"
mkdir -p "$dir/include"
python3 - "$dir/include" "$wheels"/*.whl <<'PY'
import re, sys, zipfile
out = sys.argv[1]
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            m = re.match(r"nvidia/[^/]+/include/(.+\.h(pp)?)$", name)
            if m:
                target = f"{out}/{m.group(1)}"
                import os
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(name) as src, open(target, "wb") as dst:
                    dst.write(src.read())
PY
for h in "$cuda"/include/cudnn*.h; do
    [ -e "$h" ] || { echo "cuda12-headers: no cuDNN headers under $cuda/include" >&2; exit 1; }
    cp "$h" "$dir/include/"
done
cp "$pins" "$dir/.headers"
echo "cuda12-headers: $dir/include: CUDA $(sed -n 's/^#define CUDART_VERSION *//p' "$dir/include/cuda_runtime_api.h")" >&2
