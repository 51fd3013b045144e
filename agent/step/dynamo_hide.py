# agent/step/dynamo_hide.py: keeps the agent's optimizer step hook out of what torch.compile traces,
# and finds the user's line of each line of the code torch.compile generates (_syncspy_graphs).
# Embedded in the agent (Makefile: build/gen/dynamo_hide.inc) and run by agent/step/pyhook.c, with the
# GIL, in the agent's own namespace (never the program's), after the hook is registered. It must
# never import anything, raise into the program, or touch Dynamo's state outside a compilation.
#
# Dynamo traces the global optimizer hooks when it compiles an optimizer step (torch.compile of
# opt.step, or of a function that calls it). A C function it cannot trace is a graph break and a
# warning: the agent would change what the compiler did (issue 34). From torch 2.12 Dynamo takes
# any function in torch._dynamo.config.ignore_logging_functions as a no-op: the hook is put there
# for the time of each compilation only (Dynamo's compile start and end callbacks), so that the
# config the program sees, saves or pickles between compilations is its own. Where the hook is
# traced as a no-op the compiled code does not call it: that step end is seen only where the
# optimizer's post hooks run eagerly (they do in a compiled opt.step that ends in no tensor op).
# Before 2.12 the same callbacks take the hook out of torch's table of global post hooks for the
# time of each compilation and put it back at its place after it.
#
# Names given by pyhook.c: _syncspy_hook (the hook), _syncspy_modules (sys.modules),
# _syncspy_compiled (hands the generated code's lines to agent/record/compiled.c), _syncspy_debug
# (SYNCSPY_DEBUG's level).


def _syncspy_dynamo():
    """1: hidden from now on; 0: torch._dynamo not (fully) imported yet, ask again at the next
    import; -1: this torch has no way to hide it, never ask again."""
    cfg = _syncspy_modules.get("torch._dynamo.config")
    cb = _syncspy_modules.get("torch._dynamo.callback")
    handler = getattr(cb, "callback_handler", None) if cb is not None else None
    entries = getattr(cfg, "_config", None) if cfg is not None else None
    if handler is None or not isinstance(entries, dict):
        return 0  # not imported, or still being imported: both modules end with these
    if "ignore_logging_functions" in entries:
        def start(*args, **kwargs):
            cfg.ignore_logging_functions.add(_syncspy_hook)

        def end(*args, **kwargs):
            cfg.ignore_logging_functions.discard(_syncspy_hook)
    else:
        # before 2.12: no list of functions to trace as no-ops. The hook leaves torch's table of
        # global post hooks for the time of the compilation and comes back at its place after it
        # (Dynamo never sees it; a step ended by another thread during a compilation is missed)
        optim = _syncspy_modules.get("torch.optim.optimizer")
        hooks = getattr(optim, "_global_optimizer_post_hooks", None)
        if not isinstance(hooks, dict) or not hasattr(hooks, "move_to_end"):
            return -1
        away = []  # (key, was it first)

        def start(*args, **kwargs):
            if away:
                return
            keys = list(hooks)
            for k in keys:
                if hooks[k] is _syncspy_hook:
                    del hooks[k]
                    away.append((k, k == keys[0]))
                    return

        def end(*args, **kwargs):
            if not away:
                return
            k, first = away.pop()
            hooks[k] = _syncspy_hook
            if first:
                hooks.move_to_end(k, last=False)

    def done(*args, **kwargs):
        end()
        _recompiles()

    handler.register_start_callback(start)
    handler.register_end_callback(done)
    return 1


_failures_seen = {}  # the original code -> how many guard failures it had at the last look


def _recompiles():
    """At the end of each compilation: every function whose guard failures grew since the last
    look was compiled again (one failure per compiled code tried, so one recompilation per
    look), handed to the agent with its first failure's words."""
    try:
        utils = _syncspy_modules.get("torch._dynamo.utils")
        failures = getattr(utils, "guard_failures", None)
        if not isinstance(failures, dict):
            return
        for code, reasons in list(failures.items()):
            n = len(reasons)
            if n <= _failures_seen.get(code, 0):
                continue
            _failures_seen[code] = n
            words = str(reasons[-1]).split("\n", 1)[0]
            head, sep, rest = words.partition(": ")
            if sep and head.replace("/", "").replace("[", "").replace("]", "").isdigit():
                words = rest  # "0/1: tensor 'x' size mismatch ...": the compile id left out
            name = getattr(code, "co_qualname", None) or getattr(code, "co_name", "?")
            _syncspy_recompiled(name, getattr(code, "co_filename", "?"),
                                getattr(code, "co_firstlineno", 0), words)
    except Exception as e:
        if _syncspy_debug >= 1:
            _syncspy_modules["sys"].stderr.write("syncspy: recompilations not read: %r\n" % (e,))


_seen_graphs = set()
_fx_made = [-1]  # FX's count of generated modules at the last look among the objects


def _syncspy_graphs():
    """Asked by the agent (a pending call) when a sync ran in code torch.compile generated that
    it cannot name: the user's line of each line of the generated code not looked at yet, handed
    to the agent. Inductor keeps each output code's line -> node stack trace map
    (PyCodeCache.linemaps, also for code loaded from its cache). FX generates a module's code
    lazily, at its first call, and keeps no list of modules: they are found among the
    interpreter's objects (gc), only when FX made a module since the last look."""
    try:
        rows = _inductor_rows()
        gc = _syncspy_modules.get("gc")
        fx = _syncspy_modules.get("torch.fx.graph_module")
        module_type = getattr(fx, "GraphModule", None)
        made = getattr(getattr(fx, "_loader", None), "next_id", None)
        if gc is not None and module_type is not None and (made is None or made != _fx_made[0]):
            _fx_made[0] = made
            for o in gc.get_objects():
                if not issubclass(type(o), module_type):  # type(): a dead weak proxy's isinstance raises
                    continue
                code = getattr(getattr(type(o), "forward", None), "__code__", None)
                key = getattr(code, "co_filename", None)
                if not isinstance(key, str) or not key.startswith("<eval_with_key>") or key in _seen_graphs:
                    continue
                _seen_graphs.add(key)
                rows.extend(_graph_rows(key, o, code.co_firstlineno))
        if rows:
            kept = _syncspy_compiled(tuple(rows))
            if _syncspy_debug >= 2:
                _syncspy_modules["sys"].stderr.write(
                    "syncspy: %d of %d lines of generated code named by their user line\n" % (kept, len(rows)))
    except Exception as e:
        if _syncspy_debug >= 1:
            _syncspy_modules["sys"].stderr.write("syncspy: generated code not named: %r\n" % (e,))


def _inductor_rows():
    """The rows of each Inductor output code not looked at yet: its linemap's entries are
    (first line of a node's code, the node's stack trace), a node's code running to the next
    one's (as PyCodeCache.stack_frames_for_code reads it); a backward graph's nodes carry their
    forward node's trace."""
    cache = _syncspy_modules.get("torch._inductor.codecache")
    maps = getattr(getattr(cache, "PyCodeCache", None), "linemaps", None)
    rows = []
    if not isinstance(maps, dict):
        return rows
    for path, entry in list(maps.items()):
        if not isinstance(path, str) or path in _seen_graphs:
            continue
        _seen_graphs.add(path)
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            continue
        lines, traces = entry
        for i, first in enumerate(lines):
            trace = traces[i] if i < len(traces) else None
            where = _user_line(trace) if isinstance(trace, str) else None
            if where is None or not isinstance(first, int) or first < 1:
                continue
            last = lines[i + 1] - 1 if i + 1 < len(lines) else 1 << 30
            if last < first:
                continue
            row = (path, first, last) + where + (False,)
            prev = rows[-1] if rows else None
            if prev is not None and prev[0] == path and prev[2] == first - 1 and prev[3:] == row[3:]:
                rows[-1] = prev[:2] + (last,) + prev[3:]
            else:
                rows.append(row)
    return rows


def _user_line(stack_trace):
    """The innermost frame of a node's stack trace ('File "p", line n, in f' lines, each followed
    by its code), its line checked against the file as it is now: compiled code loaded from
    Inductor's cache keeps the stack traces of the run that compiled it, whose lines move when
    the file is edited above them; the code's line is then found again (the nearest line with
    the same code), or the frame is left unnamed when the code is gone."""
    at = stack_trace.rfind('File "')
    if at < 0:
        return None
    path, sep, rest = stack_trace[at + 6:].partition('", line ')
    number, sep2, function = rest.partition(", in ")
    function, _, after = function.partition("\n")
    function = function.strip()
    if not (sep and sep2 and number.isdigit() and path and function):
        return None
    line = _current_line(path, int(number), after.split("\n", 1)[0].strip())
    return (path, line, function) if line else None


def _current_line(path, line, code):
    """line when the file holds `code` there (or it cannot be told), else the nearest line that
    does, else 0."""
    cache = _syncspy_modules.get("linecache")
    if not code or cache is None or path.startswith("<"):
        return line
    lines = cache.getlines(path)
    if not lines or (0 < line <= len(lines) and lines[line - 1].strip() == code):
        return line
    found = [i + 1 for i, text in enumerate(lines) if text.strip() == code]
    return min(found, key=lambda i: abs(i - line)) if found else 0


def _graph_rows(key, module, first_line):
    """(key, first, last, path, line, function, backward) for the generated lines of `module`
    whose node has a stack trace (FX's line -> node map, its lines counted from the function's
    first), runs of lines from one user line merged."""
    lines = getattr(module, "_lineno_map", None)
    if not isinstance(lines, dict):
        return []
    nodes = list(module.graph.nodes)
    rows = []
    for rel in sorted(lines):
        index = lines[rel]
        if index is None or not 0 <= index < len(nodes):
            continue
        meta = getattr(nodes[index], "meta", None) or {}
        trace = meta.get("stack_trace")
        where = _user_line(trace) if isinstance(trace, str) else None
        if where is None:
            continue
        line = rel + first_line
        row = (key, line, line) + where + (bool(meta.get("autograd_backward")),)
        last = rows[-1] if rows else None
        if last is not None and last[2] == line - 1 and last[3:] == row[3:]:
            rows[-1] = last[:2] + (line,) + last[3:]
        else:
            rows.append(row)
    return rows
