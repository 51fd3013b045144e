/* bench/callgrind_window.c: the window bench/step_end.py counts instructions in, under
 * valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no: cg_window_begin() turns
 * instrumentation and collection on for the calling thread, cg_window_end() turns them off, so
 * the run's total Ir is the calling thread's instructions between the two (no import, no
 * start-up, no exit; other threads never collect). Outside valgrind both do nothing. */
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
