# tests/public.mk: `make test-public` runs public training scripts, unmodified, under syncspy
# beside torch's own sync detector (tests/public/: pinned commits of pytorch/examples,
# karpathy/nanoGPT, karpathy/minGPT and huggingface/pytorch-image-models, extracted from the
# snapshots the session's fetch tool leaves under PUBLIC_MIRROR, default /work/.mirror, into
# $(BUILD)/public/ at test time; none of their code is in this repository). Without the snapshots
# it fails, saying what to fetch. .ci/run runs it where the snapshots are. Included by the top
# Makefile (BUILD; TORCH_PYTHON from tests/torch.mk).

PUBLIC_MIRROR ?= /work/.mirror

test-public: test-build torch-venv torch-vision-venv
	@BUILD=$(BUILD) TORCH_PYTHON=$(TORCH_PYTHON) PUBLIC_MIRROR=$(PUBLIC_MIRROR) \
	    python3 tests/torch/runner.py --dir tests/public

.PHONY: test-public
