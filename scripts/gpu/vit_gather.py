"""scripts/gpu/vit_gather.py: a small timm VisionTransformer with patch_drop_rate=0.5 trained under
torch.use_deterministic_algorithms(True): the backward of PatchDropout's torch.gather makes the host wait
inside the autograd thread (GatherBackward), where no Python frame and no record_function label
reaches. --indexing replaces the gather in timm's PatchDropout.forward with advanced indexing (its
backward does not sync). No pretrained weights, no network.

    python3 scripts/gpu/vit_gather.py [--indexing] [--mode plain|profiler|syncdebug] [--steps N]

CUBLAS_WORKSPACE_CONFIG=:4096:8 (deterministic cuBLAS) and TIMM_FUSED_ATTN=0 (timm's attention
written out, not F.scaled_dot_product_attention, whose backward may have no deterministic kernel)
are set here unless already set."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("TIMM_FUSED_ATTN", "0")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import common  # noqa: E402

BATCH = 64
IMG = 64
NUM_CLASSES = 10


def indexing_forward(self, x):
    """PatchDropout.forward with advanced indexing instead of torch.gather (the article's
    MyPatchDropout); returns what the patched class returns (timm <= 0.9: x, or (x, indices) when
    return_indices; later: PatchDropout x, PatchDropoutWithIndices (x, indices))."""
    with_indices = type(self).__name__ == "PatchDropoutWithIndices" or bool(getattr(self, "return_indices", False))
    if not self.training or self.prob == 0.:
        return (x, None) if with_indices else x
    if self.num_prefix_tokens:
        prefix_tokens, x = x[:, :self.num_prefix_tokens], x[:, self.num_prefix_tokens:]
    else:
        prefix_tokens = None
    B, L = x.shape[0], x.shape[1]
    num_keep = max(1, int(L * (1. - self.prob)))
    keep_indices = torch.argsort(torch.randn(B, L, device=x.device), dim=-1)[:, :num_keep]
    if getattr(self, "ordered", False):
        keep_indices = keep_indices.sort(dim=-1)[0]
    stride = L * torch.unsqueeze(torch.arange(B, device=x.device), 1)
    flat = (stride + keep_indices).flatten()
    x = x.reshape(B * L, -1)[flat].view(B, num_keep, -1)  # call: indexing
    if prefix_tokens is not None:
        x = torch.cat((prefix_tokens, x), dim=1)
    return (x, keep_indices) if with_indices else x


def use_indexing():
    """Monkeypatches timm's PatchDropout classes; returns the names patched."""
    import timm.layers.patch_dropout as pd
    patched = []
    for name in ("PatchDropout", "PatchDropoutWithIndices"):
        cls = getattr(pd, name, None)
        if cls is not None:
            cls.forward = indexing_forward
            patched.append(name)
    return patched


def main():
    args = common.parse_args(__doc__, {"indexing": "PatchDropout with indexing instead of gather"})
    import timm
    from timm.models.vision_transformer import VisionTransformer
    if os.environ.get("TIMM_FUSED_ATTN") == "0" and hasattr(timm.layers, "set_fused_attn"):
        timm.layers.set_fused_attn(False)
    patched = use_indexing() if args.indexing else []
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda")
    model = VisionTransformer(img_size=IMG, patch_size=8, embed_dim=64, depth=2, num_heads=4,
                              num_classes=NUM_CLASSES, patch_drop_rate=0.5).to(dev)
    drop = type(getattr(model, "patch_drop", None)).__name__
    if drop not in ("PatchDropout", "PatchDropoutWithIndices"):
        raise SystemExit(f"vit_gather.py: model.patch_drop is {drop}, not timm's PatchDropout "
                         f"(timm {getattr(timm, '__version__', '?')})")
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    model.train()

    def step(_):
        inputs = torch.randn(BATCH, 3, IMG, IMG, device=dev)
        labels = torch.randint(0, NUM_CLASSES, (BATCH,), device=dev)
        outputs = model(inputs)
        loss = loss_fn(outputs, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # call: backward
        optimizer.step()

    common.run(__file__, step, args, {
        "variant": "indexing" if args.indexing else "gather", "patched": patched, "patch_drop": drop,
        "timm": getattr(timm, "__version__", "?"), "fused_attn": os.environ.get("TIMM_FUSED_ATTN"),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG")})


if __name__ == "__main__":
    main()
