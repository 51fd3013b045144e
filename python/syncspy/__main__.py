"""python -m syncspy ARGS, and the `syncspy` command a wheel installs: runs the syncspy program
with ARGS in place of this Python process (os.execv, so its exit status and its signals are the
program's own, and `syncspy run` sees the terminal this process had).

The program is the C one (cli/) beside the agent it preloads: syncspy/_native/ in a wheel, or
build/ of the source checkout this module lies in (python/syncspy/); the simulated CUDA device
that `syncspy run --sim` preloads is sim/ beside them."""
import os
import signal
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def program():
    """The path of the syncspy program, or None."""
    for p in (os.path.join(_HERE, "_native", "syncspy"),
              os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build", "syncspy")):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def agent():
    """The path of the agent library (libsyncspy.so) that `syncspy run` preloads, or None."""
    prog = program()
    lib = prog and os.path.join(os.path.dirname(prog), "libsyncspy.so")
    return lib if lib and os.path.isfile(lib) else None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    prog = program()
    if prog is None:
        sys.stderr.write("syncspy: the syncspy program is not in %s/_native/ (an installed wheel) nor "
                         "in the build/ folder of a source checkout (make)\n" % _HERE)
        return 125
    sys.stdout.flush()
    sys.stderr.flush()
    # CPython ignores SIGPIPE and SIGXFSZ for itself; an ignored signal stays ignored across
    # exec, so the program (and the command `syncspy run` starts) would inherit that. As
    # subprocess's restore_signals does, give them back their default action.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.execv(prog, ["syncspy"] + args)


if __name__ == "__main__":
    sys.exit(main())
