/* common/compiler.h: attributes and small helpers shared by every layer that runs inside the
 * target process (entry, agent, collectors, output). No state, no code. */
#ifndef SYNCSPY_COMPILER_H
#define SYNCSPY_COMPILER_H

#define SYNCSPY_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* Thread-locals of the agent use the initial-exec model: one %fs-relative load on the launch
 * fast path instead of a __tls_get_addr call. The agent's TLS is a few dozen bytes, which fits
 * the static TLS surplus even when the library is dlopen'ed. */
#define SYNCSPY_TLS __thread __attribute__((tls_model("initial-exec")))

#endif
