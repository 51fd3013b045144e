"""scripts/gpu/envinfo.py [OUT.json]: the versions the GPU check runs with (python, torch, CUDA, the
device, timm), as JSON on stdout or into OUT.json. Exit status: 0 when torch sees a CUDA device,
3 when torch imports but sees none, 4 when torch does not import."""
import json
import platform
import sys


def main():
    info = {"python": sys.version.split()[0], "executable": sys.executable,
            "platform": platform.platform(), "libc": "-".join(platform.libc_ver())}
    status = 0
    try:
        import torch
        info["torch"] = getattr(torch, "__version__", "?")
        info["torch_cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
        info["cuda_available"] = bool(torch.cuda.is_available())
        if not info["cuda_available"]:
            status = 3
        for key, what in (("device", "get_device_name"), ("device_count", "device_count"),
                          ("capability", "get_device_capability")):
            if info["cuda_available"] and hasattr(torch.cuda, what):
                try:
                    info[key] = getattr(torch.cuda, what)()
                except Exception as exc:  # noqa: BLE001
                    info[key] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001
        info["torch_error"] = f"{type(exc).__name__}: {exc}"
        status = 4
    try:
        import timm
        info["timm"] = timm.__version__
    except Exception as exc:  # noqa: BLE001
        info["timm_error"] = f"{type(exc).__name__}: {exc}"
    try:
        import triton
        info["triton"] = triton.__version__
    except Exception as exc:  # noqa: BLE001
        info["triton_error"] = f"{type(exc).__name__}: {exc}"
    text = json.dumps(info, indent=1)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
