"""tests/e2e/pyprogs/budget.py CASE: syncspy.budget() regions on the miniature torch. Prints
"passed SYNCS" when the region stayed within its budget, the SyncBudgetExceeded message (after
"exceeded SYNCS") when not, "error: NAME: MESSAGE" for another syncspy error. Cases:
  clean      budget(0) around elementwise work: no sync
  over       budget(1) around two torch.nonzero
  allow      budget(N, allow=[the nonzero line]) around the same (N: argv[3], default 0)
  thread     budget(0, threads="this") while another thread syncs inside the region
  all        the same with threads="all"
  nested     budget(3) around budget(1): the inner one exceeded, the outer one not
  steps      budget(0) around a step mark (syncspy.step())
  fork       budget(0) around os.fork(): the child's end of the region is not counted
The "# sync:" comments mark the lines."""
import os
import sys
import threading

import syncspy
import torch

x = torch.randn(256, device="cuda")


def two_nonzero():
    for _ in range(2):
        torch.nonzero(x > 0)  # sync: nonzero


def other_thread(started, release):
    started.set()
    release.wait()
    torch.cuda.synchronize()  # sync: other


def region(case):
    if case == "clean":
        with syncspy.budget(0) as b:
            (x * 2).sum()
    elif case == "over":
        with syncspy.budget(1) as b:
            two_nonzero()
    elif case == "allow":
        line = int(sys.argv[2])
        room = int(sys.argv[3]) if len(sys.argv) > 3 else 0
        with syncspy.budget(room, allow=["pyprogs/budget.py:%d" % line]) as b:
            two_nonzero()
        print("allowed %d" % b.allowed_syncs)
    elif case in ("thread", "all"):
        started, release = threading.Event(), threading.Event()
        t = threading.Thread(target=other_thread, args=(started, release), name="deliberate")
        t.start()
        started.wait()
        with syncspy.budget(0, threads="this" if case == "thread" else "all") as b:
            release.set()
            t.join()  # its sync is made inside the region
            (x * 2).sum()
    elif case == "nested":
        with syncspy.budget(3) as outer:
            try:
                with syncspy.budget(1):
                    two_nonzero()
            except syncspy.SyncBudgetExceeded as e:
                print("inner exceeded %d" % e.syncs)
            torch.nonzero(x > 0)  # sync: third
        b = outer
    elif case == "steps":
        with syncspy.budget(0) as b:
            syncspy.step()
    elif case == "fork":
        with syncspy.budget(0) as b:
            pid = os.fork()
            if pid:
                os.waitpid(pid, 0)
    else:
        raise SystemExit("unknown case " + case)
    return b


def main():
    try:
        b = region(sys.argv[1])
    except syncspy.SyncBudgetExceeded as e:
        print("exceeded %d" % e.syncs)
        print(e)
        return 1
    except syncspy.SyncspyError as e:
        print("error: %s: %s" % (type(e).__name__, e))
        return 2
    print("passed %d" % b.syncs)
    return 0


sys.exit(main())
