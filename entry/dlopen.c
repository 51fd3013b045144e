/* entry/dlopen.c: dlopen, watched, never changed. A program that loads libcudart itself
 * (Python's ctypes.CDLL, dlopen + dlsym) calls it through that handle, never through the shim's
 * symbols: under SYNCSPY_CUPTI=auto the agent, which subscribes to CUPTI at the first call the
 * shim sees, recorded nothing and said nothing (issue 22 item 10). So when a libcudart is being
 * loaded before any CUDA call reached the shim, CUPTI starts first (entry/cupti.h: it subscribes
 * then where the driver gate is open already, else waits for the program's driver).
 *
 * dlopen searches the DT_RPATH/DT_RUNPATH of its *caller* (glibc finds it from the return
 * address): a C wrapper calling libc's dlopen would search syncspy's instead. The symbol is
 * therefore a trampoline that calls the hook and then jumps to libc's dlopen with the caller's
 * arguments and return address untouched, so libc sees the program's caller. Where there is no
 * trampoline for the architecture, dlopen is not interposed at all. Runs on the caller's thread,
 * possibly inside another library's constructor: no allocation here, errno kept. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "agent/process/lifecycle.h"
#include "common/compiler.h"
#include "entry/cupti.h"
#include "entry/real.h"

/* "libcudart.so", "libcudart.so.13", "/x/libcudart.so.13.0.48" */
static bool names_cudart(const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    return !strncmp(base, "libcudart.so", 12);
}

/* Called by the trampoline with dlopen's first argument: libc's dlopen, to jump to. */
__attribute__((used, visibility("hidden"))) void *syncspy_dlopen_target(const char *file);
void *syncspy_dlopen_target(const char *file)
{
    int saved = errno;
    if (file && names_cudart(file) && atomic_load(&agent_state) == STATE_RUNNING &&
        !agent_cuda_seen())
        cupti_start_early(&agent_cfg, file);
    errno = saved;
    return real_get(REAL_dlopen);
}

#if defined(__x86_64__)
/* rdi, rsi (file, mode) kept across the hook; the stack is 16-byte aligned at its call. With no
 * libc dlopen (never: it is REQUIRED) the answer is NULL. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        ".p2align 4\n"
        "dlopen:\n"
        "    .byte 0xf3, 0x0f, 0x1e, 0xfa\n" /* endbr64: a no-op where CET is off */
        "    push %rdi\n"
        "    push %rsi\n"
        "    sub $8, %rsp\n"
        "    call syncspy_dlopen_target\n"
        "    add $8, %rsp\n"
        "    pop %rsi\n"
        "    pop %rdi\n"
        "    test %rax, %rax\n"
        "    jz 1f\n"
        "    jmp *%rax\n"
        "1:  xor %eax, %eax\n"
        "    ret\n"
        ".size dlopen, .-dlopen\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, %function\n"
        ".p2align 4\n"
        "dlopen:\n"
        "    stp x29, x30, [sp, #-32]!\n"
        "    mov x29, sp\n"
        "    stp x0, x1, [sp, #16]\n"
        "    bl syncspy_dlopen_target\n"
        "    mov x16, x0\n"
        "    ldp x0, x1, [sp, #16]\n"
        "    ldp x29, x30, [sp], #32\n"
        "    cbz x16, 1f\n"
        "    br x16\n"
        "1:  mov x0, #0\n"
        "    ret\n"
        ".size dlopen, .-dlopen\n");
#endif
