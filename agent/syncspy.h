/* agent/syncspy.h: syncspy's public C API. Link nothing: when libsyncspy.so is preloaded these
 * symbols are found at run time; call them through dlsym(RTLD_DEFAULT, ...) if the program must
 * also run without the agent. */
#ifndef SYNCSPY_H
#define SYNCSPY_H

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a step boundary: ends the current training step and begins the next. Any thread may
 * call it; an explicit mark takes precedence over automatic step detection. */
void syncspy_step(void);

#ifdef __cplusplus
}
#endif
#endif
