/* agent/background/control.h: recording steps on request. `syncspy start DIR [--steps N]` and `syncspy stop
 * DIR` (another terminal, another node) put a request (output/control_format.h) into the
 * process folder; the flusher thread polls for it (control_poll), checks it is safe to read, and
 * hands it to the steps (agent/step/steps.h), which apply it at the next step boundary; the flusher
 * then acknowledges it in control.ack. syncspy_start()/syncspy_stop() (agent/syncspy.h, Python's
 * syncspy.start()/stop()) make the same requests from inside the process. No signal is taken
 * from the program; nothing here runs on a recording path. */
#ifndef SYNCSPY_CONTROL_H
#define SYNCSPY_CONTROL_H

#include <stdint.h>

/* On the flusher thread, at each wake-up (it polls at most every CONTROL_POLL_NS): acknowledges
 * a request applied since the last call, then takes a new request if none waits. Bounded: one
 * openat, one fstat, one read of at most CONTROL_BYTES_MAX bytes, one small file written. */
void control_poll(uint64_t now_ns);

/* In a forked child: the parent's acknowledgments and refusals are its own. */
void control_atfork_child(void);

#endif
