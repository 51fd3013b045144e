"""Real PyTorch over the simulated device, on every local CPython the wheel supports (TORCH_PYTHONS:
one process per interpreter runs every case): for each operation of tests/torch/progs/op_hints.py
(every case of torch's test_sync_warning, syncing or not, every row of docs/TORCH.md, the
operations of issue 23) the report names the operator that synced beside the user's line, in the
text report, summary.json (`op` per site) and `syncspy check --json`, with that operator's own
hint. torch.cuda.set_sync_debug_mode("warn") is the oracle: every cudaStreamSynchronize torch
warns about is in the report at the case's line (as many as torch's warnings), and anything
beyond is a wait torch does not warn about (a copy from or to pageable memory, a device or event
synchronize, cudaFree); the mode changes none of the counts; the cases torch's test expects not
to sync leave no site at all."""
import json
import subprocess
import unittest

import harness
from harness import marked_lines

PROG = harness.prog("op_hints.py")
CASE_LINES = marked_lines(PROG, "case")
PASS_LINES = marked_lines(PROG, "pass")
ENV = {"SYNCSPY_TOP": "1000", "SYNCSPY_BACKWARD": "all"}

# the waits torch's sync-debug mode does not warn about, by API (DESIGN.md's "sync")
SILENT_WAITS = {"cudaMemcpyAsync", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaFree"}

WARN, SILENT, NONE = "warns", "silent", "none"
# case: (what torch's mode does, the operator syncspy names, the start of its hint)
CASES = {
    # test_sync_warning's expect_sync
    "mask_put": (WARN, "x[bool_mask] = v", "x[mask] = v with a tensor v sizes its index on the host"),
    "cpu_index_put": (WARN, "x[cpu_index] = v", "x[idx] = v with a CPU index copies the index to the device"),
    # the value, not the index, on the host (index_put_ copies it to the device and waits);
    # a Python number is such a value before torch 2.15 (BEFORE)
    "index_put_host_value": (WARN, "x[idx] = host value", "x[idx] = v with v on the host (a CPU tensor, or a Python number before torch 2.15) copies v to the device"),
    "index_put_scalar": (NONE, None, None),
    "mask_get": (WARN, "x[bool_mask]", "x[bool_mask] syncs to size its output"),
    "cpu_index_get": (WARN, "x[cpu_index]", "x[idx] with a CPU index copies the index to the device"),
    "nonzero_method": (WARN, "torch.nonzero", "torch.nonzero syncs to size its output: use torch.nonzero_static"),
    "cond": (WARN, "Tensor.__bool__", "if t: / bool(t) / assert t reads a CUDA tensor on the host"),
    "one_hot": (WARN, "F.one_hot", "one_hot without num_classes reads t.max() on the host: pass num_classes="),
    "repeat_interleave": (WARN, "torch.repeat_interleave", "repeat_interleave with tensor repeats reads their sum on the host to size its output: pass output_size="),
    # test_sync_warning's expect_no_sync
    "mask_put_scalar": (NONE, None, None),
    "index_put_device": (NONE, None, None),
    "index_get_device": (NONE, None, None),
    "one_hot_num_classes": (NONE, None, None),
    "randperm": (NONE, None, None),
    "repeat_interleave_int": (NONE, None, None),
    "repeat_interleave_output_size": (NONE, None, None),
    "any": (NONE, None, None),
    # docs/TORCH.md and issue 23
    "nonzero": (WARN, "torch.nonzero", "torch.nonzero syncs to size its output"),
    "nonzero_tuple": (WARN, "torch.nonzero(as_tuple=True)", "torch.nonzero(as_tuple=True) syncs to size its output"),
    "where_cond": (WARN, "torch.where(cond)", "torch.where(cond) (one argument"),
    "argwhere": (WARN, "torch.argwhere", "torch.argwhere syncs to size its output"),
    "nonzero_static": (NONE, None, None),
    "unique": (WARN, "torch.unique", "torch.unique syncs to size its output"),
    "unique_consecutive": (WARN, "torch.unique_consecutive", "torch.unique_consecutive syncs to size its output"),
    "masked_select": (WARN, "torch.masked_select", "masked_select has a data-dependent size"),
    "item": (WARN, "Tensor.item", ".item() copies a scalar to the host"),
    "float": (WARN, "Tensor.__float__", "float(t) copies a scalar to the host"),
    "int": (WARN, "Tensor.__int__", "int(t) reads a CUDA scalar on the host"),
    "bool": (WARN, "Tensor.__bool__", "if t: / bool(t) / assert t"),
    "is_nonzero": (WARN, "torch.is_nonzero", "if t: / bool(t) / assert t"),
    "all_bool": (WARN, "Tensor.__bool__", "if t: / bool(t) / assert t"),
    "tolist": (WARN, "Tensor.tolist", ".tolist() copies the tensor to the host and waits"),
    "format": (WARN, "Tensor.__format__", "f\"{t:.3f}\" of a CUDA tensor reads it on the host"),
    "print": (WARN, "Tensor.__repr__", "printing a CUDA tensor (print(t), str(t), repr(t)) copies it to the host"),
    "cpu": (WARN, "Tensor.cpu", "x.cpu() copies to pageable host memory and waits: copy into a pinned buffer"),
    "to_cpu": (WARN, "Tensor.to", "x.to(...) between host and device waits"),
    "d2h_pinned": (NONE, None, None),
    "pageable_h2d": (SILENT, "Tensor.to", "x.to(...) between host and device waits when the host tensor is pageable (pin_memory()"),
    "blocking_h2d": (WARN, "Tensor.to", "x.to(...) between host and device waits"),
    "pinned_h2d": (NONE, None, None),
    # issue 35 item 3: a copy from pinned memory that waits only for non_blocking=False (the
    # agent sees the host memory): not the pin_memory advice
    "pinned_blocking_h2d": (WARN, "Tensor.to", "the host tensor is already pinned: x.to(...) waits only because non_blocking is False"),
    "pinned_cuda": (WARN, "Tensor.cuda", "the host tensor is already pinned: x.cuda() waits only because non_blocking is False"),
    # issue 35 item 3: a Python list or range index, a host value made a device tensor, are not
    # an x.to() to pin: their own names and advice
    "list_index_get": (WARN, "x[list index]", "a Python list or range used as an index is made a tensor on the host"),
    "range_index_put": (WARN, "x[list index]", "a Python list or range used as an index is made a tensor on the host"),
    "tensor_ctor": (WARN, "torch.tensor(host data, device)", "torch.tensor(data, device=...) builds the tensor on the host"),
    "as_tensor": (WARN, "torch.as_tensor(host data, device)", "torch.as_tensor(data, device=...) of host data copies it"),
    "cuda_call": (WARN, "Tensor.cuda", "x.cuda() copies from pageable host memory and waits"),
    "synchronize": (SILENT, "torch.cuda.synchronize", "explicit torch.cuda.synchronize"),
    "empty_cache": (SILENT, "torch.cuda.empty_cache", "torch.cuda.empty_cache() returns cached blocks with cudaFree, and cudaFree synchronizes the device"),
    "event_synchronize": (SILENT, "Event.synchronize", "Event.synchronize blocks the host until the event completes"),
    "stream_synchronize": (WARN, "Stream.synchronize", "Stream.synchronize blocks the host"),
    "model_to": (WARN, "Module.to", "model.to(device) copies every parameter from pageable memory"),
    # issue 35 item 3: model.cuda() / model.cpu() as model.to(): the module's op, not each tensor's
    "model_cuda": (WARN, "Module.cuda", "model.cuda() copies every parameter from pageable memory"),
    "model_cpu": (WARN, "Module.cpu", "model.cpu() copies every parameter and buffer to pageable host memory"),
    "bincount": (WARN, "torch.bincount", "bincount reads the input's min and max on the host"),
    "histc": (WARN, "torch.histc", "histc reads the input's min and max on the host"),
    "arange": (WARN, "torch.arange", "torch.arange with a CUDA tensor bound reads it on the host"),
    "slice_by_tensor": (WARN, "Tensor.__index__", "a CUDA tensor used as an index or a size (x[:n]"),
    "allclose": (WARN, "torch.allclose", "torch.allclose returns a Python bool"),
    "ctc_loss": (WARN, "F.ctc_loss", "ctc_loss copies input_lengths and target_lengths to the host"),
    "save": (WARN, "torch.save", "torch.save copies each CUDA storage to the host and waits"),
    "load": (WARN, "torch.load", "torch.load puts each storage saved from CUDA back on the device"),
    "rnn_dropout_state": (WARN, "cuDNN RNN dropout state", "nn.LSTM/GRU/RNN with dropout on cuDNN draws its dropout state's seed"),
    "rnn_dropout_state_kept": (NONE, None, None),
    "cudnn_benchmark": (SILENT, "cudnn.benchmark plan search", "torch.backends.cudnn.benchmark=True "),
    "clip_grad_norm": (WARN, "clip_grad_norm_(error_if_nonfinite=True)", "clip_grad_norm_(error_if_nonfinite=True) reads the total norm on the host"),
    "clip_grad_norm_default": (NONE, None, None),
    "distribution": (WARN, "Distribution(validate_args)", "distribution argument validation checks every parameter"),
    "distribution_unchecked": (NONE, None, None),
    "save_on_cpu": (WARN, "save_on_cpu", "save_on_cpu(pin_memory=False) copies every tensor saved for backward to pageable memory"),
    "save_on_cpu_pinned": (NONE, None, None),
    "grad_scaler": (WARN, "GradScaler.step", "GradScaler.step reads found_inf on the host"),
    "grad_scaler_state": (WARN, "GradScaler.state_dict", "GradScaler.state_dict() reads the scale and the growth tracker on the host"),
    "transformer_mask": (WARN, "nn.Transformer causal-mask check", "nn.TransformerEncoder compares the mask with a causal one on the host"),
    "transformer_is_causal": (NONE, None, None),
    "mask_backward": (WARN, "x[bool_mask]", "x[bool_mask] syncs to size its output"),
    "anomaly_backward": (WARN, "anomaly detection", "autograd anomaly detection"),
    "gather_backward": (NONE, None, None),
    "index_backward": (NONE, None, None),
    "embedding_backward": (NONE, None, None),
}
# what torches before a version do otherwise (the venv's torch decides: harness.torch_version;
# measured on 2.6, 2.8, 2.10, 2.12, 2.14 and 2.15, docs/COMPATIBILITY.md)
BEFORE = [
    ((2, 15), {"index_put_scalar": CASES["index_put_host_value"]}),
    # pack_to_cpu copied into pinned memory with a blocking copy_ (pytorch#175421 made it
    # non-blocking)
    ((2, 12), {"save_on_cpu_pinned": (WARN, "save_on_cpu(pin_memory=True)",
                                      "save_on_cpu(pin_memory=True) of torch before 2.12 copies every tensor")}),
]

# what the case raises on the simulator before torch 2.15: device memory reads as zero after a
# kernel (sim/README.md), and torch 2.14's repeat_interleave checks (repeats >= 0).all() on the
# host (its one sync, which torch warns about), which reads False
SIM_ERRORS_BEFORE_2_15 = {"repeat_interleave": "RuntimeError('repeats can not be negative')"}


def expected(torch_version):
    """CASES as the given torch (a (major, minor) pair) behaves."""
    cases = dict(CASES)
    for before, differences in BEFORE:
        if torch_version < before:
            cases.update(differences)
    return cases


def expected_errors(torch_version):
    return SIM_ERRORS_BEFORE_2_15 if torch_version < (2, 15) else {}


# a sync in autograd's thread: the backward of the node the case's line made (its own group)
BACKWARD = {"mask_backward": ("backward of x[bool_mask]", "the backward of a boolean-mask index")}
# a sync in autograd's thread outside any node (the engine's NaN check): no line of the user's
# holds it, the report's row is the engine's own, named by the operator
ENGINE = {"anomaly_backward"}


def version(python):
    return subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True).stdout.strip()


def python_frames(site):
    return [f for f in site["frames"] if f.get("python") and f["file"] == PROG]


def case_of(site):
    """(case, pass) of a site from the program's frames in its stack (any section)."""
    lines = [f["line"] for f in python_frames(site)]
    case = next((c for c, n in CASE_LINES.items() if n in lines), None)
    run = next((p for p, n in PASS_LINES.items() if n in lines), None)
    return case, run


class Run:
    """One run of the battery on one CPython."""

    def __init__(self, python):
        self.version = version(python)
        self.cases = expected(harness.torch_version(python))
        self.errors = expected_errors(harness.torch_version(python))
        self.r = harness.run(PROG, env=ENV, python=python, timeout=600)
        self.rows = {row["case"]: row for row in
                     (json.loads(line) for line in self.r.stdout.splitlines() if line.startswith("{"))}
        self.summary = self.r.summary() if self.r.returncode == 0 else None
        self.check = None
        if self.summary:
            p = harness.cli("check", self.r.process_dirs()[0], "--max-syncs-per-step", "0", "--json")
            self.check = json.loads(p.stdout) if p.stdout.startswith("{") else p.stderr

    def counts(self, case, run, own=None):
        """{api: count} of a case's syncs in one pass (own: only the sites in its own thread
        (False: only a backward pass's))."""
        out = {}
        for s in self.summary["sites"]:
            if case_of(s) != (case, run):
                continue
            if own is not None and own != (s.get("backward_node") is None):
                continue
            out[s["api"]] = out.get(s["api"], 0) + s["count"]
        return out

    def engine_counts(self, run_name=None):
        """{api: count} of the syncs the engine makes outside any node (the anomaly check)."""
        out = {}
        for s in self.summary["sites"]:
            if s.get("op") == "anomaly detection":
                out[s["api"]] = out.get(s["api"], 0) + s["count"]
        return out


class EveryOpItsOwnHint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = [Run(p) for p in harness.PYTHONS]

    def each(self):
        for run in self.runs:
            with self.subTest(python=run.version):
                self.assertEqual(run.r.returncode, 0, run.r.stderr[-3000:])
                yield run

    def test_every_case_ran(self):
        self.assertEqual(sorted(CASES), sorted(CASE_LINES))
        self.assertIn(harness.PYTHON, harness.PYTHONS)
        for run in self.each():
            self.assertEqual(sorted(run.rows), sorted(CASES))
            self.assertEqual({c: r["error"] for c, r in run.rows.items() if r["error"]}, run.errors)

    def test_torch_warns_where_expected(self):
        for run in self.each():
            warned = sorted(c for c, r in run.rows.items() if r["torch_warnings"])
            self.assertEqual(warned, sorted(c for c, (kind, _, _) in run.cases.items() if kind == WARN))

    def test_every_warned_sync_is_at_its_line_and_more_is_a_real_wait(self):
        for run in self.each():
            for case, (kind, _, _) in run.cases.items():
                with self.subTest(case=case):
                    got = run.engine_counts() if case in ENGINE else run.counts(case, "warn")
                    if case in ENGINE:  # three passes, each as many as torch warned of in one
                        self.assertEqual(got, {"cudaStreamSynchronize": 3 * run.rows[case]["torch_warnings"]})
                        continue
                    # as many stream synchronizes as torch's warnings; beyond them only waits
                    # torch's mode does not watch
                    self.assertEqual(got.get("cudaStreamSynchronize", 0), run.rows[case]["torch_warnings"], got)
                    self.assertLessEqual(set(got) - {"cudaStreamSynchronize"}, SILENT_WAITS, got)
                    if kind == NONE:
                        self.assertEqual(got, {})
                        self.assertEqual(run.counts(case, "plain"), {})
                        self.assertEqual(run.counts(case, "warmup"), {})
                    else:
                        self.assertTrue(got, case)
                        # the mode changes nothing: the same syncs without it
                        self.assertEqual(run.counts(case, "plain"), got)

    def test_no_site_but_the_cases_and_the_set_up(self):
        for run in self.each():
            for s in run.summary["sites"]:
                case, _ = case_of(s)
                if case or s.get("op") == "anomaly detection":
                    continue
                # the module-level set-up (model.to, the CPU index), in start-up
                frames = python_frames(s)
                self.assertTrue(frames and frames[-1]["function"] == "<module>" and
                                s["startup_count"] == s["count"], harness.frames_text(s))

    def test_each_case_its_own_op_and_hint_in_the_report(self):
        for run in self.each():
            for case, (kind, op, hint) in run.cases.items():
                if kind == NONE or case in ENGINE:
                    continue
                with self.subTest(case=case):
                    g = harness.group_at(run.r.stderr, "op_hints.py", CASE_LINES[case])
                    self.assertIsNotNone(g, run.r.stderr[-3000:])
                    self.assertTrue(g["at"].endswith("op: " + op), g["at"])
                    self.assertTrue((g["hint"] or "").startswith(hint), g["hint"])
            for case, (op, hint) in BACKWARD.items():
                with self.subTest(case=case, backward=True):
                    g = harness.group_at(run.r.stderr, "op_hints.py", CASE_LINES[case], backward=True)
                    self.assertIsNotNone(g, run.r.stderr[-3000:])
                    self.assertTrue(g["at"].endswith("op: " + op), g["at"])
                    self.assertTrue(g["hint"].startswith(hint), g["hint"])
            # the engine's own check: a row of its own, named
            text = run.r.stderr
            self.assertIn("hint: autograd anomaly detection", text)
            self.assertIn("[matched: torch::autograd::Engine::evaluate_function]", text)

    def test_each_site_names_its_op_in_summary_json(self):
        for run in self.each():
            for s in run.summary["sites"]:
                self.assertTrue(s.get("op"), s)  # every site names its op (DESIGN.md)
                case, _ = case_of(s)
                if not case or case in ENGINE:
                    continue
                with self.subTest(case=case):
                    kind, op, hint = run.cases[case]
                    if s.get("backward_node"):
                        op, hint = BACKWARD[case]
                    self.assertEqual(s["op"], op, harness.frames_text(s))
                    self.assertTrue(s["hint"].startswith(hint), s["hint"])

    def test_check_json_names_the_op(self):
        for run in self.each():
            self.assertIsInstance(run.check, dict, run.check)
            lines = run.check["processes"][0]["sites"]
            seen = set()
            for line in lines:
                case = next((c for c, n in CASE_LINES.items() if n == line["line"] and line["file"] == PROG), None)
                if not case or case in ENGINE:
                    continue
                kind, op, hint = run.cases[case]
                if line["kind"] == "backward":
                    op, hint = BACKWARD[case]
                with self.subTest(case=case, kind=line["kind"]):
                    self.assertEqual(line["op"], op)
                    self.assertTrue(line["hint"].startswith(hint), line["hint"])
                seen.add(case)
            self.assertEqual(seen, {c for c, (k, _, _) in run.cases.items() if k != NONE} - ENGINE)

    def test_no_case_gets_another_ops_hint(self):
        # a hint belongs to one operator: two cases share one only when they are the same op
        # (or the bool family: if t:, bool(t), torch.is_nonzero)
        by_hint = {}
        for run in self.each():
            for s in run.summary["sites"]:
                if s.get("hint"):
                    by_hint.setdefault(s["hint"], set()).add(s["op"])
        shared = {h: ops for h, ops in by_hint.items() if len(ops) > 1}
        self.assertEqual(shared, {h: ops for h, ops in shared.items()
                                  if ops == {"Tensor.__bool__", "torch.is_nonzero"}})


if __name__ == "__main__":
    unittest.main()
