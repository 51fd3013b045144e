/* collectors/cfi.h: a small reader of the call frame information (.eh_frame through the module's
 * .eh_frame_hdr) of the loaded objects, x86_64 only: for a pc, the rule that finds its frame's
 * CFA, return address and saved RBP, or "unsupported". Cold path of the stack cache
 * (native_stack.c): reads mapped memory of loaded objects only; no malloc, no locks, no stdio. */
#ifndef SYNCSPY_CFI_H
#define SYNCSPY_CFI_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__)
#define CFI_SUPPORTED 1
#else
#define CFI_SUPPORTED 0
#endif

enum cfi_base { CFI_CFA_RSP, CFI_CFA_RBP };

struct cfi_rule {
    uint8_t cfa_base; /* CFI_CFA_RSP or CFI_CFA_RBP */
    bool rbp_saved;   /* the caller's RBP is at CFA + rbp_off; else RBP is unchanged */
    bool end;         /* the return address column is undefined: the outermost frame */
    int32_t cfa_off;  /* CFA = base register + cfa_off */
    int32_t ra_off;   /* the return address is at CFA + ra_off (normally -8) */
    int32_t rbp_off;
};

/* The rule in effect at pc (a return address minus one for a caller's frame, the pc itself for
 * the innermost one). Returns 0, or -1 when there is no FDE or its program uses anything this
 * reader does not model (expressions, val_* rules, register rules for RBP or the return
 * address, a CFA on another register, signal frames). Async-signal-safe (_dl_find_object). */
int cfi_rule_at(uintptr_t pc, struct cfi_rule *out);

#endif
