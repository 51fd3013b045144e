/* bench/callgrind_window.c: the window bench/step_end.py counts instructions in, under
 * valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no: cg_window_begin() turns
 * instrumentation and collection on for the calling thread, cg_window_end() turns them off, so
 * the run's total Ir is the calling thread's instructions between the two (no import, no
 * start-up, no exit; other threads never collect). Outside valgrind both do nothing. The
 * _all_ pair counts every thread (below). */
#include <valgrind/callgrind.h>

__attribute__((visibility("default"))) void cg_window_begin(void)
{
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
}

__attribute__((visibility("default"))) void cg_window_end(void)
{
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_STOP_INSTRUMENTATION;
}

/* Every thread's instructions (the training thread's, autograd's engine thread's, the flusher's)
 * between the two calls, under valgrind --tool=callgrind --instr-atstart=no (collection on
 * at start): bench/torch_ir.py's window. */
__attribute__((visibility("default"))) void cg_window_all_begin(void)
{
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
}

__attribute__((visibility("default"))) void cg_window_all_end(void)
{
    CALLGRIND_STOP_INSTRUMENTATION;
}
