# agent/step/autograd_attr.py: the agent's own Python, run inside the target's interpreter (compiled
# from a copy embedded in libsyncspy.so as "<syncspy>", in a namespace of its own, by
# agent/step/pyhook.c when it registers the optimizer step hook). It names the forward line of each
# backward-pass sync (agent/record/autograd.h): in an attribution step it turns on the anomaly engine
# (agent/record/autograd_nodes.h: calibrated once by _Chain, then torch.fx.traceback.format_stack and
# torch.autograd._engine_run_backward replaced by C functions of the agent's), and where that
# engine cannot be used (calibration failed, or the program's own anomaly mode is on) it pushes
# a TorchFunctionMode on the training thread; after each op, every node made since the last op that made one (found by
# walking next_functions from the op's outputs, autograd's sequence numbers telling new from
# old) whose type is wanted (seen syncing, or every type under SYNCSPY_BACKWARD=all) is tagged
# with the op's forward stack (kept by the agent: _syncspy_forward, _syncspy_node) and gets a pre
# hook and a post hook that tell the agent, on the engine's thread, which node runs
# (_syncspy_enter / _syncspy_leave); a backward call made meanwhile is the backward syncs' outer
# context. The mode is popped at the step's end.
#
# It must never change the program: every hook returns None (gradients untouched), catches every
# exception, keeps no reference to a node, tensor or graph (a hook holds one int; the tag lives
# in the node's own metadata dict and dies with the graph), reads outputs without dispatch (a
# Tensor subclass's __torch_function__ sees only the program's calls), and steps aside when
# torch.compile is in use (an active mode would recompile compiled code; the hook looks at
# torch._dynamo's counters). The names given by pyhook.c: _syncspy_forward, _syncspy_node,
# _syncspy_enter, _syncspy_leave, _syncspy_state, _syncspy_tf, the anomaly engine's
# _syncspy_calibrate, _syncspy_probe, _syncspy_take_over, _syncspy_anomaly, format_stack and
# _engine_run_backward, and _syncspy_debug (SYNCSPY_DEBUG's level). The optimizer step hook is C (pyhook.c): it ends the step, and calls
# _attr_pop / _attr_begin only at an attribution step's end and beginning; _attr_startup once,
# when the hook is registered (start-up's nodes watched too).
#
# Why a backward sync has no forward line is told to the agent as it happens (agent/record/autograd.h
# enum backward_cause): each step's state (_syncspy_state: attributed, or why not), and, before
# an attribution step's backward call, the nodes of a wanted type the ops left untagged are hooked
# with their own cause (made in another thread, or by no Python op of the training thread).
import sys

_torch = sys.modules.get("torch")
_KEY = "_syncspy_forward"
_wanted = set()
_state = {"mode": None, "mark": 0, "start": 0, "nodes": None, "kind": 0}
# agent/record/autograd.h enum backward_cause
_ATTRIBUTING, _NOT_THIS_STEP, _COMPILED, _THREAD, _NO_OP, _BROKEN = 0, 1, 2, 6, 7, 8


def _backward_functions():
    fns = set()
    for owner, name in ((_torch.Tensor, "backward"), (_torch.autograd, "backward"),
                        (_torch.autograd, "grad")):
        f = getattr(owner, name, None)
        if f is not None:
            fns.add(f)
    return fns


class _Pre:
    """A node's pre hook: the agent hears the node runs (it holds the forward stack's word only)."""
    __slots__ = ("word",)

    def __init__(self, word):
        self.word = word

    def __call__(self, grad_outputs):
        try:
            _syncspy_enter(self.word)
        except BaseException:
            pass
        return None


def _post(grad_inputs, grad_outputs):
    try:
        _syncspy_leave()
    except BaseException:
        pass
    return None


def _hook(g, word):
    """Tags node g (of a wanted type) with forward stack `word`, its hooks telling the agent
    when it runs; word 0: the stack is captured now (the first tagged node of this op)."""
    name = g.name()
    if name not in _wanted and "*" not in _wanted:
        return word
    word = word or _syncspy_forward()
    node = _syncspy_node(name, word)
    if not node:
        return word
    g.metadata[_KEY] = node
    g.register_prehook(_Pre(node))
    g.register_hook(_post)
    return word


def _grad_fn(t):
    # The node, read without dispatch: a Tensor subclass's __torch_function__ would otherwise
    # receive a getset_descriptor.__get__ call the program never made.
    if type(t) is _Tensor or type(t) is _Parameter:
        return t.grad_fn
    with _NoSubclassTF():
        return t.grad_fn


def _tag(out):
    """After an op, on the training thread: every node made since the last op that made one (its
    sequence number at or above the mark: the op's own and those of a composite's inner ops,
    also a custom Function's, made outside any op, whose forward's own ops make no node) is
    tagged with the op's forward stack, walking from the outputs' nodes through next_functions
    down to older nodes. The mark moves only when the walk finds a new node."""
    mark = _state["mark"]
    now = _next_seq()
    if now == mark:
        return  # no node made since the last op (no grad mode, no input that requires grad)
    todo = []
    for o in (out if type(out) in (tuple, list) else (out,)):
        if isinstance(o, _Tensor):
            g = _grad_fn(o)
            if g is not None:
                todo.append(g)
    word = 0
    seen = set()
    while todo:
        g = todo.pop()
        seq = g._sequence_nr()
        if seq < mark or seq >= now or id(g) in seen:
            continue  # older than the op (or AccumulateGrad: a leaf's, no sequence number)
        seen.add(id(g))
        _state["mark"] = now  # the nodes made before now are reached from here or never
        if _KEY not in g.metadata:
            word = _hook(g, word)
        for n, _ in g.next_functions:
            if n is not None:
                todo.append(n)


def _roots(arg):
    return [arg] if isinstance(arg, _Tensor) else [t for t in arg if isinstance(t, _Tensor)] \
        if type(arg) in (tuple, list) else []


def _before_backward(args):
    """Before a backward call in an attribution step, on the training thread: every node of a
    wanted type the ops left untagged gets hooks that tell the agent why it has no forward line:
    made on this thread since the step began by no Python op (its sequence number is in the
    step's range), else in another thread (autograd numbers each thread's nodes apart) or
    before the step."""
    if not args:
        return
    start, now = _state["start"], _next_seq()
    todo = [g for g in (_grad_fn(t) for t in _roots(args[0])) if g is not None]
    seen = set()
    while todo:
        g = todo.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        seq = g._sequence_nr()
        name = g.name()
        if seq < (1 << 62) and _KEY not in g.metadata and (name in _wanted or "*" in _wanted):
            cause = _NO_OP if start <= seq < now else _THREAD
            node = _syncspy_node(name, 1) & 0xffffffff  # the name's id (forward 1: a placeholder)
            if node:
                word = cause << 56 | node
                g.metadata[_KEY] = word
                g.register_prehook(_Pre(word))
                g.register_hook(_post)
        for n, _ in g.next_functions:
            if n is not None:
                todo.append(n)


if _torch is not None:
    from torch.overrides import TorchFunctionMode as _Mode

    _BACKWARDS = _backward_functions()
    _Tensor, _Parameter = _torch.Tensor, _torch.nn.Parameter
    _NoSubclassTF = _torch._C.DisableTorchFunctionSubclass
    _next_seq = _torch._C._autograd._get_sequence_nr

    class _SyncspyMode(_Mode):
        # _syncspy_tf is C (agent/step/pyhook.c): it calls the op, brackets a backward call with
        # _syncspy_caller_begin/_end and hands other ops' results to _tag; being C, it adds no
        # frame to the traceback of an exception the op raises.
        __torch_function__ = _syncspy_tf


def _mode_stack():
    get = getattr(sys.modules.get("torch.overrides"), "_get_current_function_mode_stack", None)
    return get() if get is not None else None


def _pop_ours():
    """Pops the agent's mode when it is on top of this thread's stack; True when it is gone."""
    m = _state["mode"]
    if m is None:
        return True
    stack = _mode_stack()
    if not stack or stack[-1] is not m:
        return False  # the program pushed a mode of its own on top: wait for it
    m.__exit__(None, None, None)
    _state["mode"] = None
    return True


class _Chain:
    """Four C++ nodes of known sequence numbers, and a custom Function's PyNode, made on the CPU
    by the agent (its calibration: agent/record/autograd_nodes.h)."""

    @staticmethod
    def run():
        with _torch._C.DisableTorchFunction(), _torch.enable_grad():
            x = _torch.ones(2, device="cpu", requires_grad=True)
            ys = [x]
            for _ in range(4):
                ys.append(ys[-1] * 2.0)
            fns = tuple(y.grad_fn for y in ys[1:])
            kind = _syncspy_calibrate(fns, tuple(f._sequence_nr() for f in fns))
            if not kind:
                return 0
            found = []

            class _Probe(_torch.autograd.Function):
                @staticmethod
                def forward(ctx, a):
                    return a * 1.0

                @staticmethod
                def backward(ctx, g):
                    found.append(_syncspy_probe(ctx))
                    return g

            _Probe.apply(x).sum().backward()
            return kind if found and found[0] else 0


def _nodes_engine():
    """Whether the anomaly engine can be used: calibrated once (on the first attribution step),
    then torch.fx.traceback.format_stack and torch.autograd._engine_run_backward replaced by the
    agent's C functions (they delegate to the originals)."""
    if _state["nodes"] is not None:
        return _state["nodes"]
    _state["nodes"] = False
    try:
        import torch.fx.traceback as fxt
        import torch.autograd as ag
        orig, run_bw = fxt.format_stack, ag._engine_run_backward
        # on a thread of its own: autograd's sequence numbers are per thread, and the program's
        # (what its nodes' _sequence_nr() and the profiler read) must not move by its nodes
        box = []
        import threading
        th = threading.Thread(target=lambda: box.append(_Chain.run()), name="syncspy-calibration")
        th.start()
        th.join()
        kind = box[0] if box else 0
        if not kind or (kind == 1 and _torch.is_anomaly_enabled()):
            raise RuntimeError("anomaly engine calibration failed")
        _syncspy_take_over(orig, fxt.__dict__, True, run_bw)
        _state["kind"] = kind
        if kind == 1:  # stacks from anomaly mode; 2: from the sequence number hook (C)
            fxt.format_stack = format_stack
        ag._engine_run_backward = _engine_run_backward
        _state["nodes"] = True
    except BaseException:
        if _syncspy_debug >= 1:
            import traceback
            sys.stderr.write("syncspy: backward attribution's anomaly engine off (the mode is used): "
                             + "".join(traceback.format_exc(limit=3)).replace("\n", " | ") + "\n")
    return _state["nodes"]


def _attr_startup():
    """When the step hook is registered (start-up, before the first optimizer step): the anomaly
    engine calibrated now, so that start-up's nodes can be watched too (agent/step/pyhook.c turns the
    sequence number hook on until the first step's end). Its kind: 2 the sequence number hook, 1
    anomaly mode (not used in start-up: the program could see it on), 0 none or not now (torch
    still being imported: calibrated at the first attribution step as before)."""
    try:
        spec = getattr(_torch, "__spec__", None)
        if _torch is None or getattr(spec, "_initializing", False):
            return 0
        return _state["kind"] if _nodes_engine() else 0
    except BaseException:
        return 0


def _broken():
    """Something about this torch is not as expected: attribution off for good (-1 to the hook)."""
    try:
        _syncspy_state(_BROKEN)
    except BaseException:
        pass
    if _syncspy_debug >= 1:
        import traceback
        sys.stderr.write("syncspy: backward attribution off: "
                         + "".join(traceback.format_exc(limit=3)).replace("\n", " | ") + "\n")
    return -1


def _attr_pop():
    """At the end of an attribution step, on the training thread (agent/step/pyhook.c's optimizer step
    hook, which calls this Python only when there is work: the mode to pop, a step to attribute):
    1 when the mode is popped, 0 while the program's own mode is on top of it (asked again at the
    next step's end), -1 when attribution is off for good."""
    try:
        if _state["nodes"]:
            _syncspy_anomaly(0)
        return 1 if _pop_ours() else 0
    except BaseException:
        return _broken()


def _attr_begin(names):
    """The step now beginning is attributed (agent/record/autograd.c autograd_plan decided; the state,
    torch.compile's counters were looked at by the hook): the mode pushed for the node types
    `names` ("a,b", "*": every one; "!a,b": torch.compile is in use, only the sequence number
    hook may attribute). 1: pushed (_attr_pop at the step's end), 0: nothing to tag, -1:
    attribution off for good, -2: off for good because of torch.compile."""
    try:
        compiled = names.startswith("!")  # torch.compile in use: the sequence number hook or none
        _wanted.clear()
        _wanted.update(n for n in names.lstrip("!").split(",") if n)
        if not _wanted:
            return 0
        if compiled and (not _nodes_engine() or _state["kind"] != 2):
            return -2  # the anomaly engine and the mode would both make Dynamo recompile
        if _nodes_engine() and _syncspy_anomaly(1):
            _syncspy_state(_ATTRIBUTING)
            return 1
        m = _SyncspyMode()
        m.__enter__()
        _state["mode"] = m
        _state["mark"] = _state["start"] = _next_seq()
        _syncspy_state(_ATTRIBUTING)
        return 1
    except BaseException:
        return _broken()
