"""syncspy._agent: the agent's exported C functions (agent/syncspy.h), found in the process with
ctypes (dlsym(RTLD_DEFAULT) through ctypes.CDLL(None)) when libsyncspy.so is preloaded. Nothing
here loads the agent: without LD_PRELOAD every lookup finds nothing."""
import ctypes

THIS_THREAD = 0
ALL_THREADS = 1
TALLY_VERSION = 1  # SYNCSPY_TALLY_VERSION this module speaks


class Tally(ctypes.Structure):
    """struct syncspy_tally"""
    _fields_ = [("thread", ctypes.c_uint32), ("tid", ctypes.c_uint32), ("site", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32), ("syncs", ctypes.c_uint64),
                ("blocked_ns", ctypes.c_uint64), ("name", ctypes.c_char * 16)]


class CountsStruct(ctypes.Structure):
    """struct syncspy_counts"""
    _fields_ = [("syncs", ctypes.c_uint64), ("blocked_ns", ctypes.c_uint64),
                ("step", ctypes.c_uint64), ("recording", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32)]


_SIGNATURES = {
    "syncspy_counts": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(CountsStruct), ctypes.c_size_t]),
    "syncspy_step": (None, []),
    "syncspy_start": (ctypes.c_int, [ctypes.c_uint64]),
    "syncspy_stop": (ctypes.c_int, []),
    "syncspy_tally_begin": (ctypes.c_int, []),
    "syncspy_tally_end": (None, []),
    "syncspy_recording": (ctypes.c_int, []),
    "syncspy_unrecorded_steps": (ctypes.c_uint64, []),
    "syncspy_tallies": (ctypes.c_size_t, [ctypes.c_int, ctypes.POINTER(Tally), ctypes.c_size_t]),
    "syncspy_site_describe": (ctypes.c_int, [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]),
}

_UNRESOLVED = object()
_functions = _UNRESOLVED


def functions():
    """{name: ctypes function} of the agent's API in this process ({} without the agent),
    looked up once. A name missing from it is an older agent's."""
    global _functions
    if _functions is _UNRESOLVED:
        found = {}
        try:
            process = ctypes.CDLL(None)
        except OSError:
            process = None
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(process, name)
            except AttributeError:
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            found[name] = fn
        _functions = found
    return _functions


def loaded():
    return "syncspy_step" in functions()


def tallies(scope=ALL_THREADS):
    """The agent's tallies now: a list of (thread, tid, site, syncs, blocked_ns, name)."""
    fn = functions()["syncspy_tallies"]
    cap = 256
    while True:
        buf = (Tally * cap)()
        n = fn(scope, buf, cap)
        if n <= cap:
            return [(t.thread, t.tid, t.site, t.syncs, t.blocked_ns,
                     t.name.decode("utf-8", "replace")) for t in buf[:n]]
        cap = n + 64  # threads synced meanwhile: more room


def describe(site):
    """The site's fields (agent/syncspy.h syncspy_site_describe) as a dict, or None."""
    buf = ctypes.create_string_buffer(8192)
    n = functions()["syncspy_site_describe"](site, buf, len(buf))
    if n < 0:
        return None
    fields = buf.value.decode("utf-8", "replace").split("\t")
    if len(fields) != 8:
        return None
    api, kind, file, line, function, module, node, hint = fields
    return {"api": api, "kind": kind, "file": file, "line": int(line) if line.isdigit() else 0,
            "function": function, "module": module, "node": node, "hint": hint}
