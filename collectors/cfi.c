/* collectors/cfi.c: the CFI reader (see cfi.h). The module of a pc comes from glibc's
 * _dl_find_object (lock-free, async-signal-safe since 2.35), its FDE from a binary search of the
 * .eh_frame_hdr table, then the CIE's and FDE's programs run up to pc. Reads only the mapped
 * .eh_frame of loaded objects: no malloc, no locks, no stdio. */
#include "collectors/cfi.h"

#if CFI_SUPPORTED
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_indirect 0x80
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define STATE_STACK 8

/* A bounded reader over [p, end): a read past the end sets bad and returns 0. */
struct cur {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t rd_fixed(struct cur *c, int size)
{
    if (c->bad || c->end - c->p < size) {
        c->bad = true;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, (size_t)size); /* little-endian */
    c->p += size;
    return v;
}

static uint64_t rd_uleb(struct cur *c)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t b = (uint8_t)rd_fixed(c, 1);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80) || c->bad)
            return v;
    }
    c->bad = true;
    return 0;
}

static int64_t rd_sleb(struct cur *c)
{
    uint64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        b = (uint8_t)rd_fixed(c, 1);
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && shift < 64 && !c->bad);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A DW_EH_PE-encoded pointer: absptr, (u|s)leb128, (u|s)data2/4/8; applied pcrel or datarel
 * (relative to the .eh_frame_hdr), optionally indirect. Others mark the reader bad. */
static uint64_t rd_encoded(struct cur *c, uint8_t enc, uintptr_t datarel)
{
    uintptr_t field = (uintptr_t)c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: v = rd_fixed(c, 8); break;
    case 0x01: v = rd_uleb(c); break;
    case 0x02: v = rd_fixed(c, 2); break;
    case 0x03: v = rd_fixed(c, 4); break;
    case 0x04: v = rd_fixed(c, 8); break;
    case 0x09: v = (uint64_t)rd_sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_fixed(c, 4); break;
    case 0x0c: v = rd_fixed(c, 8); break;
    default: c->bad = true; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += field; break;
    case 0x30: v += datarel; break;
    default: c->bad = true; return 0;
    }
    if ((enc & DW_EH_PE_indirect) && !c->bad)
        v = v ? *(const uint64_t *)(uintptr_t)v : 0;
    return v;
}

/* The FDE of pc from an .eh_frame_hdr (version 1, a datarel sdata4 table), or NULL. */
static const uint8_t *hdr_find_fde(const uint8_t *hdr, uintptr_t pc)
{
    if (hdr[0] != 1 || hdr[3] != 0x3b)
        return NULL;
    struct cur c = {hdr + 4, hdr + 4 + 16, false};
    (void)rd_encoded(&c, hdr[1], (uintptr_t)hdr); /* eh_frame_ptr */
    uint64_t count = hdr[2] == DW_EH_PE_omit ? 0 : rd_encoded(&c, hdr[2], (uintptr_t)hdr);
    if (c.bad || count == 0)
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)c.p;
    uint64_t lo = 0, hi = count; /* the last entry whose start is <= pc */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)hdr + (intptr_t)table[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if ((uintptr_t)hdr + (intptr_t)table[2 * lo] > pc)
        return NULL;
    return hdr + table[2 * lo + 1];
}

/* One CFI record: its body [body, end) after the length (and for 64-bit ones the extended
 * length). False for a zero terminator or a malformed length. */
static bool record_span(const uint8_t *rec, const uint8_t **body, const uint8_t **end)
{
    uint32_t len32;
    memcpy(&len32, rec, 4);
    if (len32 == 0 || len32 == 0xffffffffu)
        return false; /* the terminator, or a 64-bit record (never in .eh_frame on x86_64) */
    *body = rec + 4;
    *end = rec + 4 + len32;
    return true;
}

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    bool has_z;
    const uint8_t *insns, *end;
};

/* The CIE's augmentation "z" and its letters R, P, L (S: a signal frame, unsupported). */
static bool cie_augmentation(struct cur *c, const char *aug, struct cie *ci, uintptr_t datarel)
{
    if (aug[0] != 'z')
        return aug[0] == '\0';
    ci->has_z = true;
    uint64_t alen = rd_uleb(c);
    const uint8_t *after = c->p + alen;
    for (const char *a = aug + 1; *a && !c->bad; a++) {
        if (*a == 'R') {
            ci->fde_enc = (uint8_t)rd_fixed(c, 1);
        } else if (*a == 'L') {
            (void)rd_fixed(c, 1);
        } else if (*a == 'P') {
            uint8_t enc = (uint8_t)rd_fixed(c, 1);
            (void)rd_encoded(c, enc & (uint8_t)~DW_EH_PE_indirect, datarel); /* never followed */
        } else {
            return false; /* S (a signal frame), B, or unknown */
        }
    }
    if (c->bad || after > c->end)
        return false;
    c->p = after;
    return true;
}

static bool cie_parse(const uint8_t *rec, struct cie *ci, uintptr_t datarel)
{
    const uint8_t *body, *end;
    if (!record_span(rec, &body, &end))
        return false;
    struct cur c = {body, end, false};
    if (rd_fixed(&c, 4) != 0)
        return false; /* not a CIE */
    uint8_t version = (uint8_t)rd_fixed(&c, 1);
    if (version != 1 && version != 3)
        return false;
    const char *aug = (const char *)c.p;
    size_t alen = strnlen(aug, (size_t)(end - c.p));
    if (c.p + alen >= end)
        return false;
    c.p += alen + 1;
    *ci = (struct cie){.fde_enc = 0x00};
    ci->code_align = rd_uleb(&c);
    ci->data_align = rd_sleb(&c);
    uint64_t ra = version == 1 ? rd_fixed(&c, 1) : rd_uleb(&c);
    if (c.bad || ra != REG_RA || !cie_augmentation(&c, aug, ci, datarel))
        return false;
    ci->insns = c.p;
    ci->end = end;
    return true;
}

/* The rules of the three registers this reader follows. */
enum rk { RK_SAME, RK_UNDEF, RK_OFFSET };
struct regrule {
    uint8_t kind;
    int32_t off;
};
struct row {
    uint8_t cfa_reg;
    int64_t cfa_off;
    struct regrule rbp, ra;
};

struct prog {
    struct row row, init; /* init: the row after the CIE's program (restore) */
    struct row stack[STATE_STACK];
    int depth;
    uint64_t loc; /* the address the row describes from */
    const struct cie *ci;
    uintptr_t datarel;
};

static struct regrule *reg_of(struct row *r, uint64_t reg)
{
    return reg == REG_RBP ? &r->rbp : reg == REG_RA ? &r->ra : NULL;
}

static bool set_offset(struct prog *pg, uint64_t reg, int64_t off)
{
    struct regrule *rr = reg_of(&pg->row, reg);
    if (rr) {
        if (off < INT32_MIN || off > INT32_MAX)
            return false;
        *rr = (struct regrule){RK_OFFSET, (int32_t)off};
    }
    return reg != REG_RSP;
}

static bool set_kind(struct prog *pg, uint64_t reg, uint8_t kind)
{
    struct regrule *rr = reg_of(&pg->row, reg);
    if (rr)
        *rr = (struct regrule){kind, 0};
    return reg != REG_RSP || kind == RK_SAME;
}

static bool restore_reg(struct prog *pg, uint64_t reg)
{
    struct regrule *rr = reg_of(&pg->row, reg), *ir = reg_of(&pg->init, reg);
    if (rr)
        *rr = *ir;
    return true;
}

static bool def_cfa(struct prog *pg, uint64_t reg, int64_t off)
{
    if (reg != REG_RSP && reg != REG_RBP)
        return false;
    pg->row.cfa_reg = (uint8_t)reg;
    pg->row.cfa_off = off;
    return true;
}

/* The extended opcodes (low 6 bits zero in the primary ones). */
static bool run_extended(struct prog *pg, struct cur *c, uint8_t op, bool *advanced,
                         uint64_t *delta)
{
    int64_t daf = pg->ci->data_align;
    uint64_t reg;
    switch (op) {
    case 0x00: return true; /* nop */
    case 0x01:              /* set_loc */
        *advanced = true;
        *delta = rd_encoded(c, pg->ci->fde_enc, pg->datarel) - pg->loc;
        return !c->bad;
    case 0x02:
        *advanced = true;
        *delta = rd_fixed(c, 1) * pg->ci->code_align;
        return true;
    case 0x03:
        *advanced = true;
        *delta = rd_fixed(c, 2) * pg->ci->code_align;
        return true;
    case 0x04:
        *advanced = true;
        *delta = rd_fixed(c, 4) * pg->ci->code_align;
        return true;
    case 0x05: reg = rd_uleb(c); return set_offset(pg, reg, (int64_t)rd_uleb(c) * daf);
    case 0x06: return restore_reg(pg, rd_uleb(c));
    case 0x07: return set_kind(pg, rd_uleb(c), RK_UNDEF);
    case 0x08: return set_kind(pg, rd_uleb(c), RK_SAME);
    case 0x09: /* register: fine for the registers not followed */
        reg = rd_uleb(c);
        (void)rd_uleb(c);
        return reg != REG_RBP && reg != REG_RA && reg != REG_RSP;
    case 0x0a:
        if (pg->depth == STATE_STACK)
            return false;
        pg->stack[pg->depth++] = pg->row;
        return true;
    case 0x0b: { /* restore_state: the CFA too (as GCC and libgcc read it) */
        if (pg->depth == 0)
            return false;
        pg->row = pg->stack[--pg->depth];
        return true;
    }
    case 0x0c: reg = rd_uleb(c); return def_cfa(pg, reg, (int64_t)rd_uleb(c));
    case 0x0d: return def_cfa(pg, rd_uleb(c), pg->row.cfa_off);
    case 0x0e: pg->row.cfa_off = (int64_t)rd_uleb(c); return true;
    case 0x11: reg = rd_uleb(c); return set_offset(pg, reg, rd_sleb(c) * daf);
    case 0x12: reg = rd_uleb(c); return def_cfa(pg, reg, rd_sleb(c) * daf);
    case 0x13: pg->row.cfa_off = rd_sleb(c) * daf; return true;
    case 0x2e: (void)rd_uleb(c); return true; /* GNU_args_size */
    default: return false; /* expressions, val_*, GNU_negative_offset_extended, vendor ops */
    }
}

/* Runs [c->p, c->end) while the row's location is <= pc. False: unsupported. */
static bool run_program(struct prog *pg, struct cur *c, uint64_t pc)
{
    while (c->p < c->end && !c->bad) {
        uint8_t op = (uint8_t)rd_fixed(c, 1);
        bool advanced = false, ok = true;
        uint64_t delta = 0;
        switch (op & 0xc0) {
        case 0x40:
            advanced = true;
            delta = (op & 0x3f) * pg->ci->code_align;
            break;
        case 0x80: ok = set_offset(pg, op & 0x3f, (int64_t)rd_uleb(c) * pg->ci->data_align); break;
        case 0xc0: ok = restore_reg(pg, op & 0x3f); break;
        default: ok = run_extended(pg, c, op, &advanced, &delta); break;
        }
        if (!ok || c->bad)
            return false;
        if (advanced) {
            if (pg->loc + delta > pc)
                return true; /* the row in effect at pc is the current one */
            pg->loc += delta;
        }
    }
    return !c->bad;
}

static bool row_to_rule(const struct row *r, struct cfi_rule *out)
{
    if (r->cfa_off < INT32_MIN || r->cfa_off > INT32_MAX)
        return false;
    *out = (struct cfi_rule){.cfa_base = r->cfa_reg == REG_RBP ? CFI_CFA_RBP : CFI_CFA_RSP,
                             .cfa_off = (int32_t)r->cfa_off};
    if (r->ra.kind == RK_UNDEF) {
        out->end = true;
        return true;
    }
    if (r->ra.kind != RK_OFFSET || r->rbp.kind == RK_UNDEF)
        return false;
    out->ra_off = r->ra.off;
    out->rbp_saved = r->rbp.kind == RK_OFFSET;
    out->rbp_off = r->rbp.off;
    return true;
}

/* The FDE's range, its CIE, and the rule at pc. */
static int fde_rule(const uint8_t *fde, uintptr_t pc, uintptr_t datarel, struct cfi_rule *out)
{
    const uint8_t *body, *end;
    if (!record_span(fde, &body, &end))
        return -1;
    struct cur c = {body, end, false};
    uint32_t cie_ptr = (uint32_t)rd_fixed(&c, 4);
    struct cie ci;
    if (cie_ptr == 0 || !cie_parse(body - cie_ptr, &ci, datarel))
        return -1;
    uint64_t start = rd_encoded(&c, ci.fde_enc, datarel);
    uint64_t range = rd_encoded(&c, ci.fde_enc & 0x0f, datarel);
    if (c.bad || pc < start || pc - start >= range)
        return -1;
    if (ci.has_z) {
        uint64_t alen = rd_uleb(&c);
        if (c.bad || alen > (uint64_t)(c.end - c.p))
            return -1;
        c.p += alen;
    }
    struct prog pg = {
        .row = {.cfa_reg = REG_RSP, .cfa_off = 8}, .loc = start, .ci = &ci, .datarel = datarel};
    struct cur cc = {ci.insns, ci.end, false};
    if (!run_program(&pg, &cc, UINT64_MAX))
        return -1;
    pg.init = pg.row;
    pg.depth = 0;
    if (!run_program(&pg, &c, pc))
        return -1;
    return row_to_rule(&pg.row, out) ? 0 : -1;
}

int cfi_rule_at(uintptr_t pc, struct cfi_rule *out)
{
    struct dl_find_object dlfo;
    if (_dl_find_object((void *)pc, &dlfo) != 0 || !dlfo.dlfo_eh_frame)
        return -1;
    const uint8_t *hdr = dlfo.dlfo_eh_frame;
    const uint8_t *fde = hdr_find_fde(hdr, pc);
    return fde ? fde_rule(fde, pc, (uintptr_t)hdr, out) : -1;
}

#else

int cfi_rule_at(uintptr_t pc, struct cfi_rule *out)
{
    (void)pc;
    (void)out;
    return -1;
}

#endif
