/* collectors/dwarf_lines.c: file:line from DWARF line tables (see dwarf_lines.h). Off the hot
 * path (the flusher thread, exit): may allocate and open files; never maps them, never prints.
 * Every byte goes through a cursor bounded by its section: pread windows for a plain section, a
 * restartable inflate stream for a compressed one. The rules are libdw's (elfutils 0.188), kept
 * where a malformed table changes the answer: the unit comes from .debug_aranges (libdwfl's
 * runs, an address between ranges belongs to the run before it), the row is the last one at or
 * before the address in the unit's table sorted by address (an end of sequence before a row at
 * the same address, else table order) unless it ends a sequence or is the unit's last; a table
 * with one bad record has no rows at all. */
#include "collectors/dwarf_lines.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- DWARF constants (DWARF 5, section 7; GNU extensions) ------------------------------------ */

enum {
    DW_AT_stmt_list = 0x10,
    DW_AT_comp_dir = 0x1b,
    DW_UT_compile = 1,
    DW_UT_type = 2,
    DW_UT_skeleton = 4,
    DW_UT_split_compile = 5,
    DW_UT_split_type = 6,
    DW_LNCT_path = 1,
    DW_LNCT_directory_index = 2,
    DW_LNS_copy = 1,
    DW_LNS_advance_pc,
    DW_LNS_advance_line,
    DW_LNS_set_file,
    DW_LNS_set_column,
    DW_LNS_negate_stmt,
    DW_LNS_set_basic_block,
    DW_LNS_const_add_pc,
    DW_LNS_fixed_advance_pc,
    DW_LNS_set_prologue_end,
    DW_LNS_set_epilogue_begin,
    DW_LNS_set_isa,
    DW_LNE_end_sequence = 1,
    DW_LNE_set_address,
    DW_LNE_define_file,
    DW_LNE_set_discriminator,
};

enum {
    DW_FORM_addr = 0x01,
    DW_FORM_block2 = 0x03,
    DW_FORM_block4,
    DW_FORM_data2,
    DW_FORM_data4,
    DW_FORM_data8,
    DW_FORM_string,
    DW_FORM_block,
    DW_FORM_block1,
    DW_FORM_data1,
    DW_FORM_flag,
    DW_FORM_sdata,
    DW_FORM_strp,
    DW_FORM_udata,
    DW_FORM_ref_addr,
    DW_FORM_ref1,
    DW_FORM_ref2,
    DW_FORM_ref4,
    DW_FORM_ref8,
    DW_FORM_ref_udata,
    DW_FORM_indirect,
    DW_FORM_sec_offset,
    DW_FORM_exprloc,
    DW_FORM_flag_present,
    DW_FORM_strx,
    DW_FORM_addrx,
    DW_FORM_ref_sup4,
    DW_FORM_strp_sup,
    DW_FORM_data16,
    DW_FORM_line_strp,
    DW_FORM_ref_sig8,
    DW_FORM_implicit_const,
    DW_FORM_loclistx,
    DW_FORM_rnglistx,
    DW_FORM_ref_sup8,
    DW_FORM_strx1,
    DW_FORM_strx2,
    DW_FORM_strx3,
    DW_FORM_strx4,
    DW_FORM_addrx1,
    DW_FORM_addrx2,
    DW_FORM_addrx3,
    DW_FORM_addrx4,
    DW_FORM_GNU_addr_index = 0x1f01,
    DW_FORM_GNU_str_index = 0x1f02,
    DW_FORM_GNU_ref_alt = 0x1f20,
    DW_FORM_GNU_strp_alt = 0x1f21,
};

#define NO_LINES UINT64_MAX
#define WINDOW_BYTES (64u << 10)
#define INPUT_BYTES (16u << 10)
#define INFLATE_BUDGET \
    (1ull << 30)      /* bytes inflated per index or lookup (backward seeks restart) */
#define MAX_ATTRS 256 /* attributes of one abbreviation we look through */
#define MAX_PATH_BYTES 8192

/* ---- libz, found at run time (the agent links only libunwind, libdl and libpthread) ---------- */

static struct {
    pthread_once_t once;
    int (*init)(z_streamp, const char *, int);
    int (*inflate)(z_streamp, int);
    int (*reset)(z_streamp);
    int (*end)(z_streamp);
} zlib = {.once = PTHREAD_ONCE_INIT};

static void find_zlib(void)
{
    void *h = dlopen("libz.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libz.so.1", RTLD_LAZY | RTLD_LOCAL); /* off the hot path: loading is fine */
    void *p[4] = {0};
    static const char *const names[4] = {"inflateInit_", "inflate", "inflateReset", "inflateEnd"};
    for (int i = 0; h && i < 4; i++)
        if (!(p[i] = dlsym(h, names[i])))
            return;
    memcpy(&zlib.init, &p[0], sizeof p[0]);
    memcpy(&zlib.inflate, &p[1], sizeof p[1]);
    memcpy(&zlib.reset, &p[2], sizeof p[2]);
    memcpy(&zlib.end, &p[3], sizeof p[3]); /* last: the others are set when this is */
}

void dwarf_lines_load_zlib(void)
{
    pthread_once(&zlib.once, find_zlib);
}

/* ---- sections and cursors -------------------------------------------------------------------- */

enum { SEC_INFO, SEC_ABBREV, SEC_ARANGES, SEC_LINE, SEC_STR, SEC_LINE_STR, NSECS };
static const char *const sec_names[NSECS] = {"info", "abbrev", "aranges",
                                             "line", "str",    "line_str"};

struct dw_sec {
    bool present, zlib;
    uint64_t off, len; /* in the file: the bytes, or the zlib stream */
    uint64_t size;     /* of the data (inflated) */
};

/* Reads one section at pos: a window of its data, refilled by pread or by inflating further
 * (from the start again when pos goes back). Any read past the section's end, I/O error or bad
 * stream sets bad, which stays set; reads then return 0. */
struct cursor {
    int fd;
    const struct dw_sec *sec;
    uint64_t pos;
    uint64_t win_at; /* section offset of win[0] */
    size_t win_len;
    uint8_t *win;
    z_stream *z;
    uint8_t *in;
    uint64_t in_used; /* stream bytes read from the file */
    uint64_t *budget;
    bool bad;
};

static bool cur_open(struct cursor *c, int fd, const struct dw_sec *sec, uint64_t *budget)
{
    *c = (struct cursor){.fd = fd, .sec = sec, .budget = budget};
    c->win = malloc(WINDOW_BYTES);
    if (!c->win)
        return false;
    if (!sec->zlib)
        return true;
    pthread_once(&zlib.once, find_zlib);
    c->z = calloc(1, sizeof *c->z);
    c->in = malloc(INPUT_BYTES);
    if (!zlib.end || !c->z || !c->in || zlib.init(c->z, ZLIB_VERSION, (int)sizeof *c->z) != Z_OK) {
        free(c->in);
        free(c->z);
        free(c->win);
        *c = (struct cursor){0};
        return false;
    }
    return true;
}

static void cur_close(struct cursor *c)
{
    if (c->z)
        zlib.end(c->z);
    free(c->z);
    free(c->in);
    free(c->win);
    *c = (struct cursor){0};
}

/* The next window of inflated data after the current one; false at the stream's end or on an
 * error. */
static bool inflate_next(struct cursor *c)
{
    c->win_at += c->win_len;
    c->win_len = 0;
    c->z->next_out = c->win;
    c->z->avail_out = WINDOW_BYTES;
    while (c->z->avail_out > 0) {
        if (c->z->avail_in == 0) {
            uint64_t left = c->sec->len - c->in_used;
            uInt n = left < INPUT_BYTES ? (uInt)left : INPUT_BYTES;
            if (n == 0 || read_at(c->fd, c->in, n, c->sec->off + c->in_used) != 0)
                break;
            c->in_used += n;
            c->z->next_in = c->in;
            c->z->avail_in = n;
        }
        int rc = zlib.inflate(c->z, Z_NO_FLUSH);
        if (rc != Z_OK)
            break; /* Z_STREAM_END, or damage */
    }
    c->win_len = WINDOW_BYTES - c->z->avail_out;
    if (c->win_len > *c->budget)
        return false;
    *c->budget -= c->win_len;
    return c->win_len > 0;
}

/* Makes pos readable; false (and bad) when it cannot be. */
static bool cur_fill(struct cursor *c)
{
    if (c->bad || c->pos >= c->sec->size) {
        c->bad = true;
        return false;
    }
    if (!c->z) {
        uint64_t left = c->sec->size - c->pos;
        size_t n = left < WINDOW_BYTES ? (size_t)left : WINDOW_BYTES;
        if (read_at(c->fd, c->win, n, c->sec->off + c->pos) != 0) {
            c->bad = true;
            return false;
        }
        c->win_at = c->pos;
        c->win_len = n;
        return true;
    }
    if (c->pos < c->win_at) { /* back: inflate again from the start */
        if (zlib.reset(c->z) != Z_OK) {
            c->bad = true;
            return false;
        }
        c->z->avail_in = 0;
        c->in_used = 0;
        c->win_at = c->win_len = 0;
    }
    while (c->pos - c->win_at >= c->win_len)
        if (!inflate_next(c)) {
            c->bad = true;
            return false;
        }
    return true;
}

static inline unsigned cur_u8(struct cursor *c)
{
    if (c->pos - c->win_at >= c->win_len && !cur_fill(c))
        return 0;
    return c->win[c->pos++ - c->win_at];
}

static uint64_t cur_uint(struct cursor *c, unsigned nbytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < nbytes; i++)
        v |= (uint64_t)cur_u8(c) << (8 * i);
    return v;
}

static uint64_t cur_uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        unsigned b = cur_u8(c);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80) || c->bad)
            return v;
    }
}

static int64_t cur_sleb(struct cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0, b;
    do {
        b = cur_u8(c);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && !c->bad);
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

static void cur_skip(struct cursor *c, uint64_t n)
{
    if (n > c->sec->size - c->pos || c->pos > c->sec->size)
        c->bad = true;
    else
        c->pos += n;
}

/* Reads a NUL-terminated string: into buf (cut to cap - 1 bytes) when buf is not NULL. Returns
 * its length, or -1 (bad) when the section ends first. */
static long cur_str(struct cursor *c, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        unsigned b = cur_u8(c);
        if (c->bad)
            return -1;
        if (buf && n + 1 < cap)
            buf[n] = (char)b;
        if (b == 0)
            break;
        n++;
    }
    if (buf && cap)
        buf[n < cap ? n : cap - 1] = '\0';
    return (long)n;
}

/* ---- the index ------------------------------------------------------------------------------- */

enum comp_dir_at { COMP_NONE, COMP_INFO, COMP_STR, COMP_LINE_STR };

/* One unit of .debug_info, as far as line lookups need it. */
struct unit {
    uint64_t off;       /* of its header in .debug_info */
    uint64_t stmt_list; /* its line table in .debug_line, or NO_LINES */
    uint64_t comp_dir;  /* where DW_AT_comp_dir's string is (comp_at says in which section) */
    uint8_t version, addr_size, offset_size, comp_at;
};

/* A run of address ranges of one unit, in address order (libdwfl's struct dwfl_arange). */
struct run {
    uint64_t start;
    uint32_t unit;
};

struct strset {
    char **v;
    size_t cap, len; /* cap 0 or a power of two */
};

struct dwarf_lines {
    char *path;
    struct file_id id;
    struct dw_sec sec[NSECS];
    struct unit *units;
    size_t nunits;
    struct run *runs;
    size_t nruns;
    uint64_t last_end; /* of the last range in address order, included */
    uint64_t info_end; /* past the last unit read */
    struct strset names;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The one copy of str kept in set (NULL when memory runs out). */
static const char *strset_intern(struct strset *set, const char *str)
{
    if ((set->len + 1) * 2 > set->cap) {
        struct strset bigger = {.cap = set->cap ? set->cap * 2 : 64};
        if (!(bigger.v = calloc(bigger.cap, sizeof *bigger.v)))
            return NULL;
        for (size_t i = 0; i < set->cap; i++)
            if (set->v[i]) {
                size_t j = hash_str(set->v[i]) & (bigger.cap - 1);
                while (bigger.v[j])
                    j = (j + 1) & (bigger.cap - 1);
                bigger.v[j] = set->v[i];
            }
        bigger.len = set->len;
        free(set->v);
        *set = bigger;
    }
    size_t i = hash_str(str) & (set->cap - 1);
    for (; set->v[i]; i = (i + 1) & (set->cap - 1))
        if (strcmp(set->v[i], str) == 0)
            return set->v[i];
    if (!(set->v[i] = strdup(str)))
        return NULL;
    set->len++;
    return set->v[i];
}

static bool find_dw_section(const struct elf_file *f, const char *base, struct dw_sec *out)
{
    char name[32];
    snprintf(name, sizeof name, ".debug_%s", base);
    const Elf64_Shdr *sh = elf_find_section(f, name);
    bool gnu = false;
    if (!sh) {
        snprintf(name, sizeof name, ".zdebug_%s", base);
        gnu = (sh = elf_find_section(f, name)) != NULL;
    }
    *out = (struct dw_sec){0};
    if (!sh || !elf_in_file(f, sh->sh_offset, sh->sh_size))
        return false;
    *out = (struct dw_sec){
        .present = true, .off = sh->sh_offset, .len = sh->sh_size, .size = sh->sh_size};
    if (gnu) { /* "ZLIB", the size big-endian in 8 bytes, the stream */
        uint8_t h[12];
        if (sh->sh_size < 12 || read_at(f->fd, h, 12, sh->sh_offset) != 0 || memcmp(h, "ZLIB", 4))
            return out->present = false;
        out->size = 0;
        for (int i = 4; i < 12; i++)
            out->size = out->size << 8 | h[i];
        out->off += 12;
        out->len -= 12;
        out->zlib = true;
    } else if (sh->sh_flags & SHF_COMPRESSED) { /* gABI: an Elf64_Chdr, then the stream */
        Elf64_Chdr ch;
        if (sh->sh_size < sizeof ch || read_at(f->fd, &ch, sizeof ch, sh->sh_offset) != 0 ||
            ch.ch_type != ELFCOMPRESS_ZLIB) /* zstd: libdw 0.188 cannot either */
            return out->present = false;
        out->size = ch.ch_size;
        out->off += sizeof ch;
        out->len -= sizeof ch;
        out->zlib = true;
    }
    return true;
}

bool dwarf_file_has_dwarf(const struct elf_file *f)
{
    static const char *const own[] = {"info", "line", "frame"};
    struct dw_sec s;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (find_dw_section(f, own[i], &s))
            return true;
    return false;
}

/* ---- attribute values ------------------------------------------------------------------------ */

struct form_ctx {
    unsigned version, addr_size, offset_size;
};

/* Reads one value of form: *val gets constants and offsets, and for DW_FORM_string the
 * position of the string. false on a form we do not know (the caller gives up on the entry). */
static bool read_form(struct cursor *c, uint64_t form, const struct form_ctx *u, int64_t implicit,
                      uint64_t *val)
{
    *val = 0;
    for (int depth = 0; depth < 4; depth++) {
        switch (form) {
        case DW_FORM_addr: *val = cur_uint(c, u->addr_size); return true;
        case DW_FORM_block2: cur_skip(c, cur_uint(c, 2)); return true;
        case DW_FORM_block4: cur_skip(c, cur_uint(c, 4)); return true;
        case DW_FORM_block:
        case DW_FORM_exprloc: cur_skip(c, cur_uleb(c)); return true;
        case DW_FORM_block1: cur_skip(c, cur_u8(c)); return true;
        case DW_FORM_data1:
        case DW_FORM_ref1:
        case DW_FORM_flag:
        case DW_FORM_strx1:
        case DW_FORM_addrx1: *val = cur_uint(c, 1); return true;
        case DW_FORM_data2:
        case DW_FORM_ref2:
        case DW_FORM_strx2:
        case DW_FORM_addrx2: *val = cur_uint(c, 2); return true;
        case DW_FORM_strx3:
        case DW_FORM_addrx3: *val = cur_uint(c, 3); return true;
        case DW_FORM_data4:
        case DW_FORM_ref4:
        case DW_FORM_ref_sup4:
        case DW_FORM_strx4:
        case DW_FORM_addrx4: *val = cur_uint(c, 4); return true;
        case DW_FORM_data8:
        case DW_FORM_ref8:
        case DW_FORM_ref_sig8:
        case DW_FORM_ref_sup8: *val = cur_uint(c, 8); return true;
        case DW_FORM_data16: cur_skip(c, 16); return true;
        case DW_FORM_string:
            *val = c->pos;
            cur_str(c, NULL, 0);
            return true;
        case DW_FORM_sdata: *val = (uint64_t)cur_sleb(c); return true;
        case DW_FORM_udata:
        case DW_FORM_ref_udata:
        case DW_FORM_strx:
        case DW_FORM_addrx:
        case DW_FORM_loclistx:
        case DW_FORM_rnglistx:
        case DW_FORM_GNU_addr_index:
        case DW_FORM_GNU_str_index: *val = cur_uleb(c); return true;
        case DW_FORM_strp:
        case DW_FORM_line_strp:
        case DW_FORM_sec_offset:
        case DW_FORM_strp_sup:
        case DW_FORM_GNU_ref_alt:
        case DW_FORM_GNU_strp_alt: *val = cur_uint(c, u->offset_size); return true;
        case DW_FORM_ref_addr:
            *val = cur_uint(c, u->version <= 2 ? u->addr_size : u->offset_size);
            return true;
        case DW_FORM_flag_present: *val = 1; return true;
        case DW_FORM_implicit_const: *val = (uint64_t)implicit; return true;
        case DW_FORM_indirect: form = cur_uleb(c); continue;
        default: return false;
        }
    }
    return false;
}

/* ---- units: each unit's header and first DIE ------------------------------------------------- */

struct attr_spec {
    uint64_t name, form;
    int64_t implicit;
};

/* The attributes of abbreviation code in the table at off; their count, or -1. */
static int find_abbrev(struct cursor *ab, uint64_t off, uint64_t code, struct attr_spec *specs)
{
    ab->pos = off;
    for (;;) {
        uint64_t got = cur_uleb(ab);
        if (got == 0 || ab->bad)
            return -1;
        cur_uleb(ab); /* tag */
        cur_u8(ab);   /* children */
        int n = 0;
        for (;;) {
            uint64_t name = cur_uleb(ab), form = cur_uleb(ab);
            if (ab->bad)
                return -1;
            if (name == 0 && form == 0)
                break;
            int64_t implicit = form == DW_FORM_implicit_const ? cur_sleb(ab) : 0;
            if (got == code && n < MAX_ATTRS)
                specs[n++] = (struct attr_spec){name, form, implicit};
        }
        if (got == code)
            return n;
    }
}

/* stmt_list and comp_dir of the unit whose first DIE is at info's position. */
static void read_unit_die(struct cursor *info, struct cursor *ab, uint64_t abbrev_off,
                          struct attr_spec *specs, struct unit *u)
{
    uint64_t code = cur_uleb(info);
    int n = code ? find_abbrev(ab, abbrev_off, code, specs) : -1;
    struct form_ctx fc = {u->version, u->addr_size, u->offset_size};
    for (int i = 0; i < n && !info->bad; i++) {
        uint64_t v, form = specs[i].form;
        if (!read_form(info, form, &fc, specs[i].implicit, &v)) {
            u->stmt_list = NO_LINES; /* libdw cannot read past it either */
            return;
        }
        if (specs[i].name == DW_AT_stmt_list &&
            (form == DW_FORM_sec_offset || form == DW_FORM_data4 || form == DW_FORM_data8))
            u->stmt_list = v;
        else if (specs[i].name == DW_AT_comp_dir &&
                 (form == DW_FORM_string || form == DW_FORM_strp || form == DW_FORM_line_strp)) {
            u->comp_dir = v;
            u->comp_at = form == DW_FORM_string ? COMP_INFO
                         : form == DW_FORM_strp ? COMP_STR
                                                : COMP_LINE_STR;
        }
    }
    if (info->bad)
        u->stmt_list = NO_LINES;
}

/* Every unit of .debug_info in order, up to the first it cannot read (as libdw, which finds a
 * unit by reading all those before it). */
static bool scan_units(struct dwarf_lines *d, int fd, uint64_t *budget)
{
    struct cursor info, ab;
    if (!cur_open(&info, fd, &d->sec[SEC_INFO], budget))
        return false;
    if (!cur_open(&ab, fd, &d->sec[SEC_ABBREV], budget)) {
        cur_close(&info);
        return false;
    }
    size_t cap = 0;
    struct attr_spec *specs = malloc(MAX_ATTRS * sizeof *specs);
    bool ok = specs != NULL;
    for (uint64_t off = 0; off + 4 < d->sec[SEC_INFO].size && ok;) {
        info.pos = off;
        struct unit u = {.off = off, .stmt_list = NO_LINES, .offset_size = 4};
        uint64_t len = cur_uint(&info, 4);
        if (len == 0xffffffffu) {
            len = cur_uint(&info, 8);
            u.offset_size = 8;
        } else if (len >= 0xfffffff0u) {
            break;
        }
        if (info.bad || len > d->sec[SEC_INFO].size - info.pos)
            break;
        uint64_t next = info.pos + len;
        u.version = (uint8_t)cur_uint(&info, 2);
        if (info.bad || u.version < 2 || u.version > 5)
            break;
        unsigned type = DW_UT_compile;
        uint64_t abbrev_off;
        if (u.version >= 5) {
            type = cur_u8(&info);
            u.addr_size = (uint8_t)cur_u8(&info);
            abbrev_off = cur_uint(&info, u.offset_size);
            if (type == DW_UT_skeleton || type == DW_UT_split_compile)
                cur_skip(&info, 8);
            else if (type == DW_UT_type || type == DW_UT_split_type)
                cur_skip(&info, 8 + u.offset_size);
        } else {
            abbrev_off = cur_uint(&info, u.offset_size);
            u.addr_size = (uint8_t)cur_u8(&info);
        }
        if (info.bad)
            break;
        if (type != DW_UT_split_compile && type != DW_UT_split_type) /* lines: the skeleton's */
            read_unit_die(&info, &ab, abbrev_off, specs, &u);
        if (d->nunits == cap) {
            cap = cap ? cap * 2 : 64;
            struct unit *v = realloc(d->units, cap * sizeof *v);
            if (!v) {
                ok = false;
                break;
            }
            d->units = v;
        }
        d->units[d->nunits++] = u;
        d->info_end = next;
        info.bad = false; /* a bad DIE spoils its unit only */
        off = next;
    }
    free(specs);
    cur_close(&ab);
    cur_close(&info);
    return ok;
}

/* The unit whose bytes hold off (libdw's __libdw_findcu), or -1. */
static long unit_at(const struct dwarf_lines *d, uint64_t off)
{
    if (d->nunits == 0 || off < d->units[0].off || off >= d->info_end)
        return -1;
    size_t lo = 0, hi = d->nunits; /* the last unit starting at or before off */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->units[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return (long)lo;
}

/* ---- address ranges: .debug_aranges into libdwfl's runs -------------------------------------- */

struct arange {
    uint64_t addr, len;
    uint32_t unit, order;
};

static int cmp_arange(const void *pa, const void *pb)
{
    const struct arange *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order; /* stable, as libdw's */
}

/* Reads every set; false when one is bad or names no unit (libdw then has no ranges at all). */
static bool read_aranges(struct dwarf_lines *d, struct cursor *c, struct arange **out, size_t *n)
{
    size_t cap = 0;
    for (uint64_t off = 0; off < d->sec[SEC_ARANGES].size;) {
        c->pos = off;
        unsigned osz = 4;
        uint64_t len = cur_uint(c, 4);
        if (len == 0xffffffffu) {
            len = cur_uint(c, 8);
            osz = 8;
        } else if (len >= 0xfffffff0u) {
            return false;
        }
        uint64_t next = c->pos + len;
        unsigned version = (unsigned)cur_uint(c, 2);
        uint64_t info_off = cur_uint(c, osz);
        unsigned asz = cur_u8(c);
        cur_u8(c); /* segment selector size */
        if (c->bad || version != 2 || (asz != 4 && asz != 8))
            return false;
        long unit = unit_at(d, info_off);
        if (unit < 0)
            return false;
        uint64_t in_set = c->pos - off, tuple = 2 * asz;
        cur_skip(c, (tuple - in_set % tuple) % tuple);
        for (;;) {
            uint64_t addr = cur_uint(c, asz), alen = cur_uint(c, asz);
            if (c->bad)
                return false;
            if (addr == 0 && alen == 0)
                break;
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                struct arange *v = realloc(*out, cap * sizeof *v);
                if (!v)
                    return false;
                *out = v;
            }
            (*out)[*n] = (struct arange){addr, alen, (uint32_t)unit, (uint32_t)*n};
            ++*n;
        }
        off = next;
    }
    return true;
}

static bool build_runs(struct dwarf_lines *d, int fd, uint64_t *budget)
{
    struct cursor c;
    if (!cur_open(&c, fd, &d->sec[SEC_ARANGES], budget))
        return false;
    struct arange *ar = NULL;
    size_t n = 0;
    bool ok = read_aranges(d, &c, &ar, &n);
    cur_close(&c);
    if (ok && n > 0) {
        qsort(ar, n, sizeof *ar, cmp_arange);
        ok = (d->runs = malloc(n * sizeof *d->runs)) != NULL;
        for (size_t i = 0; ok && i < n; i++)
            if (i == 0 || ar[i].unit != ar[i - 1].unit)
                d->runs[d->nruns++] = (struct run){ar[i].addr, ar[i].unit};
        d->last_end = ar[n - 1].addr + ar[n - 1].len;
        struct run *fit = ok ? realloc(d->runs, d->nruns * sizeof *fit) : NULL;
        if (fit)
            d->runs = fit;
    }
    free(ar);
    return ok;
}

/* libdwfl's addrarange: the run whose start is the last at or before addr; past the last run,
 * only up to the last range's end (included). */
static bool find_run(const struct dwarf_lines *d, uint64_t addr, size_t *out)
{
    size_t l = 0, u = d->nruns;
    while (l < u) {
        size_t idx = (l + u) / 2;
        uint64_t start = d->runs[idx].start;
        if (addr < start) {
            u = idx;
            continue;
        }
        if (addr > start) {
            if (idx + 1 < d->nruns) {
                if (addr >= d->runs[idx + 1].start) {
                    l = idx + 1;
                    continue;
                }
            } else if (addr > d->last_end) {
                return false;
            }
        }
        *out = idx;
        return true;
    }
    return false;
}

/* ---- opening ---------------------------------------------------------------------------------- */

void dwarf_lines_free(struct dwarf_lines *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->names.cap; i++)
        free(d->names.v[i]);
    free(d->names.v);
    free(d->units);
    free(d->runs);
    free(d->path);
    free(d);
}

struct dwarf_lines *dwarf_lines_open(const char *path)
{
    struct elf_file f;
    if (elf_open(&f, path) != 0)
        return NULL;
    struct dwarf_lines *d = calloc(1, sizeof *d);
    bool ok = d && (d->path = strdup(path)) && file_id_of(f.fd, &d->id) == 0;
    for (int i = 0; ok && i < NSECS; i++)
        find_dw_section(&f, sec_names[i], &d->sec[i]);
    uint64_t budget = INFLATE_BUDGET;
    ok = ok && d->sec[SEC_INFO].present && d->sec[SEC_ABBREV].present &&
         d->sec[SEC_ARANGES].present && d->sec[SEC_LINE].present && scan_units(d, f.fd, &budget) &&
         build_runs(d, f.fd, &budget) && d->nruns > 0;
    elf_close(&f);
    if (!ok) {
        dwarf_lines_free(d);
        return NULL;
    }
    struct unit *fit = realloc(d->units, d->nunits * sizeof *fit);
    if (fit)
        d->units = fit;
    return d;
}

/* ---- a line table ----------------------------------------------------------------------------- */

struct line_header {
    uint64_t unit_end, tables_at, program_at;
    unsigned version, offset_size, addr_size;
    uint8_t min_inst, max_ops, default_is_stmt, line_range, opcode_base;
    int8_t line_base;
    uint8_t std_len[256]; /* arguments of standard opcode k, for 1 <= k < opcode_base */
};

struct entry_format;

/* The cursors and buffers of one lookup (malloc'd: the strings are paths). */
struct lookup {
    struct dwarf_lines *d;
    const struct unit *u;
    struct cursor line, str[2]; /* str[0]: .debug_str, str[1]: .debug_line_str, opened lazily */
    int fd;
    uint64_t budget;
    char path[MAX_PATH_BYTES], name[MAX_PATH_BYTES], dir[MAX_PATH_BYTES];
    struct entry_format *ef;
};

static bool read_header(struct lookup *lk, struct line_header *h)
{
    struct cursor *c = &lk->line;
    c->pos = lk->u->stmt_list;
    *h = (struct line_header){.offset_size = 4, .addr_size = lk->u->addr_size, .max_ops = 1};
    uint64_t len = cur_uint(c, 4);
    if (len == 0xffffffffu) {
        len = cur_uint(c, 8);
        h->offset_size = 8;
    }
    if (c->bad || len > c->sec->size - c->pos)
        return false;
    h->unit_end = c->pos + len;
    h->version = (unsigned)cur_uint(c, 2);
    if (h->version < 2 || h->version > 5)
        return false;
    if (h->version >= 5 && (cur_u8(c) != h->addr_size || cur_u8(c) != 0))
        return false; /* address size, segment selector size */
    uint64_t header_len = cur_uint(c, h->offset_size);
    if (c->bad || header_len > h->unit_end - c->pos)
        return false;
    h->program_at = c->pos + header_len;
    h->min_inst = (uint8_t)cur_u8(c);
    if (h->version >= 4 && (h->max_ops = (uint8_t)cur_u8(c)) == 0)
        return false;
    h->default_is_stmt = (uint8_t)cur_u8(c);
    h->line_base = (int8_t)cur_u8(c);
    h->line_range = (uint8_t)cur_u8(c);
    h->opcode_base = (uint8_t)cur_u8(c);
    for (unsigned k = 1; k < h->opcode_base; k++)
        h->std_len[k] = (uint8_t)cur_u8(c);
    h->tables_at = c->pos;
    return !c->bad && c->pos <= h->program_at && h->opcode_base > DW_LNE_set_discriminator;
}

/* A string of a line table's entry: where it is and which section. */
struct str_ref {
    int sec; /* SEC_LINE (in the table), SEC_STR, SEC_LINE_STR; -1: none */
    uint64_t at;
};

static bool str_ref_ok(struct lookup *lk, struct str_ref r)
{
    return r.sec == SEC_LINE || (lk->d->sec[r.sec].present && r.at < lk->d->sec[r.sec].size);
}

/* Reads the string r names into buf; false when it cannot. */
static bool read_str(struct lookup *lk, struct str_ref r, char *buf, size_t cap)
{
    struct cursor *c = &lk->line;
    if (r.sec != SEC_LINE) {
        c = &lk->str[r.sec == SEC_LINE_STR];
        if (!c->win && !cur_open(c, lk->fd, &lk->d->sec[r.sec], &lk->budget))
            return false;
    }
    uint64_t saved = c->pos;
    c->pos = r.at;
    bool ok = cur_str(c, buf, cap) >= 0 && (size_t)strlen(buf) + 1 < cap;
    c->pos = saved;
    return ok;
}

/* The entry formats of a DWARF 5 directory or file table: which one is the path, which the
 * directory index. */
struct entry_format {
    unsigned n;
    uint64_t forms[256];
    int path, dir;
};

static bool read_entry_format(struct cursor *c, struct entry_format *ef)
{
    ef->n = cur_u8(c);
    ef->path = ef->dir = -1;
    for (unsigned i = 0; i < ef->n; i++) {
        uint64_t type = cur_uleb(c);
        ef->forms[i] = cur_uleb(c);
        if (type == DW_LNCT_path)
            ef->path = (int)i;
        else if (type == DW_LNCT_directory_index)
            ef->dir = (int)i;
    }
    return !c->bad;
}

/* One DWARF 5 entry: its path and directory index (UINT64_MAX when it has none). */
static bool read_entry(struct lookup *lk, const struct line_header *h,
                       const struct entry_format *ef, struct str_ref *path, uint64_t *dir)
{
    struct form_ctx fc = {5, h->addr_size, h->offset_size};
    *path = (struct str_ref){-1, 0};
    *dir = UINT64_MAX;
    for (unsigned m = 0; m < ef->n; m++) {
        uint64_t form = ef->forms[m], v;
        if (!read_form(&lk->line, form, &fc, 0, &v))
            return false;
        if ((int)m == ef->path) {
            if (form == DW_FORM_string || form == DW_FORM_strp || form == DW_FORM_line_strp)
                *path = (struct str_ref){form == DW_FORM_string ? SEC_LINE
                                         : form == DW_FORM_strp ? SEC_STR
                                                                : SEC_LINE_STR,
                                         v};
        } else if ((int)m == ef->dir &&
                   (form == DW_FORM_data1 || form == DW_FORM_data2 || form == DW_FORM_data4 ||
                    form == DW_FORM_data8 || form == DW_FORM_udata || form == DW_FORM_sdata)) {
            *dir = v;
        }
    }
    return !lk->line.bad && path->sec >= 0 && str_ref_ok(lk, *path);
}

/* A count of entries libdw accepts: none without formats, at most one per byte left. */
static bool entry_count_ok(struct cursor *c, const struct line_header *h,
                           const struct entry_format *ef, uint64_t count)
{
    if (c->bad || (ef->n == 0 && count != 0))
        return false;
    return ef->n == 0 || count <= (h->program_at - c->pos) / ef->n;
}

/* What one walk of the tables finds: the number of files (with DWARF < 5's "???" at 0), the
 * name and directory of file want_file, the name of directory want_dir. */
struct tables {
    uint64_t nfiles, ndirs;
    struct str_ref file, dir;
    uint64_t file_dir;
    bool file_is_null, dir_is_comp;
};

/* Walks the directory and file tables, checking them as libdw does (a bad one spoils the table). */
static bool walk_tables(struct lookup *lk, const struct line_header *h, uint64_t want_file,
                        uint64_t want_dir, struct tables *t)
{
    struct cursor *c = &lk->line;
    c->pos = h->tables_at;
    *t = (struct tables){.file = {-1, 0},
                         .dir = {-1, 0},
                         .file_is_null = want_file == 0,
                         .dir_is_comp = h->version < 5 && want_dir == 0};
    if (h->version < 5) {
        t->ndirs = 1; /* 0 is the unit's DW_AT_comp_dir */
        for (;;) {
            uint64_t at = c->pos;
            long n = cur_str(c, NULL, 0);
            if (n <= 0)
                break;
            if (t->ndirs++ == want_dir)
                t->dir = (struct str_ref){SEC_LINE, at};
        }
        t->nfiles = 1; /* 0 is "???" */
        for (;;) {
            uint64_t at = c->pos;
            long n = cur_str(c, NULL, 0);
            if (n <= 0)
                break;
            uint64_t dir = cur_uleb(c);
            cur_uleb(c); /* mtime */
            cur_uleb(c); /* length */
            if (dir >= t->ndirs)
                return false;
            if (t->nfiles++ == want_file) {
                t->file = (struct str_ref){SEC_LINE, at};
                t->file_dir = dir;
                t->file_is_null = false;
            }
        }
        return !c->bad && c->pos == h->program_at;
    }
    struct entry_format *ef = lk->ef;
    if (!read_entry_format(c, ef) || (ef->n > 0 && ef->path < 0))
        return false;
    t->ndirs = cur_uleb(c);
    if (!entry_count_ok(c, h, ef, t->ndirs))
        return false;
    for (uint64_t i = 0; i < t->ndirs; i++) {
        struct str_ref path;
        uint64_t dir;
        if (!read_entry(lk, h, ef, &path, &dir))
            return false;
        if (i == want_dir)
            t->dir = path;
    }
    if (!read_entry_format(c, ef) || (ef->n > 0 && (ef->path < 0 || ef->dir < 0)))
        return false;
    uint64_t nfiles = cur_uleb(c);
    if (!entry_count_ok(c, h, ef, nfiles))
        return false;
    for (uint64_t i = 0; i < nfiles; i++) {
        struct str_ref path;
        uint64_t dir;
        if (!read_entry(lk, h, ef, &path, &dir) || dir == UINT64_MAX || dir >= t->ndirs)
            return false;
        if (i == want_file) {
            t->file = path;
            t->file_dir = dir;
            t->file_is_null = false;
        }
    }
    t->nfiles = nfiles ? nfiles : 1; /* entry 0 takes the place of "???" */
    return !c->bad && c->pos == h->program_at;
}

/* ---- the line program ------------------------------------------------------------------------ */

struct row {
    uint64_t addr, order;
    uint32_t file;
    int64_t line;
    bool end_seq;
};

/* r comes after cur in libdw's order of the table: address, an end of sequence before other rows
 * at its address, then table order (r is the later one). */
static bool row_after(const struct row *r, const struct row *cur)
{
    return r->addr > cur->addr || (r->addr == cur->addr && (!r->end_seq || cur->end_seq));
}

struct program_result {
    struct row best, last; /* the last row at or before the address; the table's last row */
    bool has_best;
    uint64_t ndefined;    /* files added by DW_LNE_define_file */
    uint64_t want_define; /* the index among them wanted, or UINT64_MAX */
    struct str_ref define_name;
    uint64_t define_dir;
};

struct machine {
    uint64_t addr;
    uint32_t op_index, file, column, isa;
    int64_t line;
    unsigned is_stmt;
};

static void machine_reset(struct machine *m, const struct line_header *h)
{
    *m = (struct machine){.file = 1, .line = 1, .is_stmt = h->default_is_stmt};
}

/* A row of the matrix; false when libdw would find it out of range (the table is then bad). */
static bool emit_row(const struct machine *m, bool end_seq, uint64_t target,
                     struct program_result *res, uint64_t *order)
{
    if (m->op_index > 0xff || m->isa > 0xff || m->column > 0xffff || m->is_stmt > 1 ||
        m->line < INT32_MIN || m->line > INT32_MAX)
        return false;
    struct row r = {m->addr, (*order)++, m->file, m->line, end_seq};
    if (r.order == 0 || row_after(&r, &res->last))
        res->last = r;
    if (r.addr <= target && (!res->has_best || row_after(&r, &res->best))) {
        res->best = r;
        res->has_best = true;
    }
    return true;
}

static void advance_pc(struct machine *m, const struct line_header *h, uint32_t op_advance)
{
    uint32_t ops = m->op_index + op_advance; /* libdw's unsigned int arithmetic */
    m->addr += (uint32_t)(h->min_inst * (ops / h->max_ops));
    m->op_index = ops % h->max_ops;
}

/* An extended opcode (its length byte first); false when the table is bad. */
static bool extended_op(struct lookup *lk, const struct line_header *h, struct machine *m,
                        uint64_t target, struct program_result *res, uint64_t *order,
                        uint64_t ndirs)
{
    struct cursor *c = &lk->line;
    if (h->unit_end - c->pos < 2)
        return false;
    unsigned len = cur_u8(c); /* one byte, as libdw reads it */
    if (h->unit_end - c->pos < len)
        return false;
    unsigned op = cur_u8(c);
    switch (op) {
    case DW_LNE_end_sequence:
        if (!emit_row(m, true, target, res, order))
            return false;
        machine_reset(m, h);
        return true;
    case DW_LNE_set_address:
        m->op_index = 0;
        if ((h->addr_size != 4 && h->addr_size != 8) || h->unit_end - c->pos < h->addr_size)
            return false;
        m->addr = cur_uint(c, h->addr_size);
        return true;
    case DW_LNE_define_file: {
        uint64_t at = c->pos;
        if (cur_str(c, NULL, 0) < 0)
            return false;
        uint64_t dir = cur_uleb(c);
        cur_uleb(c);
        cur_uleb(c);
        if (dir >= ndirs)
            return false;
        if (res->ndefined++ == res->want_define) {
            res->define_name = (struct str_ref){SEC_LINE, at};
            res->define_dir = dir;
        }
        return true;
    }
    case DW_LNE_set_discriminator:
        if (h->std_len[op] != 1)
            return false;
        cur_uleb(c);
        return true;
    default:
        c->pos += (uint64_t)((int64_t)len - 1); /* len 0 steps back onto the sub-opcode, as libdw */
        return true;
    }
}

/* A standard opcode below DW_LNS_set_isa; false when the table is bad. */
static bool standard_op(struct cursor *c, const struct line_header *h, struct machine *m,
                        unsigned op, uint64_t target, struct program_result *res, uint64_t *order)
{
    static const uint8_t nargs[13] = {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
    if (h->std_len[op] != nargs[op] || (nargs[op] && c->pos >= h->unit_end))
        return false;
    switch (op) {
    case DW_LNS_copy: return emit_row(m, false, target, res, order);
    case DW_LNS_advance_pc: advance_pc(m, h, (uint32_t)cur_uleb(c)); return true;
    case DW_LNS_advance_line: m->line += (int32_t)cur_sleb(c); return true;
    case DW_LNS_set_file: m->file = (uint32_t)cur_uleb(c); return true;
    case DW_LNS_set_column: m->column = (uint32_t)cur_uleb(c); return true;
    case DW_LNS_negate_stmt: m->is_stmt = (uint8_t)(1 - m->is_stmt); return true;
    case DW_LNS_set_basic_block:
    case DW_LNS_set_prologue_end:
    case DW_LNS_set_epilogue_begin: return true;
    case DW_LNS_const_add_pc:
        if (h->line_range == 0)
            return false;
        advance_pc(m, h, (255u - h->opcode_base) / h->line_range);
        return true;
    case DW_LNS_fixed_advance_pc:
        if (h->unit_end - c->pos < 2)
            return false;
        m->addr += cur_uint(c, 2);
        m->op_index = 0;
        return true;
    case DW_LNS_set_isa: m->isa = (uint32_t)cur_uleb(c); return true;
    default: return false;
    }
}

/* Runs the program and keeps the rows that decide the answer for target. */
static bool run_program(struct lookup *lk, const struct line_header *h, uint64_t ndirs,
                        uint64_t target, struct program_result *res)
{
    struct cursor *c = &lk->line;
    struct machine m;
    machine_reset(&m, h);
    uint64_t order = 0;
    c->pos = h->program_at;
    while (c->pos < h->unit_end && !c->bad) {
        unsigned op = cur_u8(c);
        bool ok = true;
        if (op >= h->opcode_base) {
            if (h->line_range == 0)
                return false;
            unsigned adj = op - h->opcode_base;
            m.line += h->line_base + (int)(adj % h->line_range);
            advance_pc(&m, h, adj / h->line_range);
            ok = emit_row(&m, false, target, res, &order);
        } else if (op == 0) {
            ok = extended_op(lk, h, &m, target, res, &order, ndirs);
        } else if (op <= DW_LNS_set_isa) {
            ok = standard_op(c, h, &m, op, target, res, &order);
        } else {
            for (unsigned n = h->std_len[op]; n > 0 && ok; n--) {
                ok = c->pos < h->unit_end;
                cur_uleb(c);
            }
        }
        if (!ok)
            return false;
    }
    return !c->bad;
}

/* ---- lookups ---------------------------------------------------------------------------------- */

/* The directory named by t->dir (or the unit's comp_dir) joined with name into buf, as libdw
 * composes a file's name; false when a string cannot be read. */
static bool join_path(struct lookup *lk, const struct tables *t, const char *name, char *buf)
{
    if (name[0] == '/') {
        snprintf(buf, MAX_PATH_BYTES, "%s", name);
        return true;
    }
    char *dir = lk->dir;
    bool have_dir = false;
    if (t->dir_is_comp) {
        const struct unit *u = lk->u;
        if (u->comp_at == COMP_INFO) {
            struct cursor info;
            if (!cur_open(&info, lk->fd, &lk->d->sec[SEC_INFO], &lk->budget))
                return false;
            info.pos = u->comp_dir;
            have_dir = cur_str(&info, dir, MAX_PATH_BYTES) >= 0;
            cur_close(&info);
            if (!have_dir)
                return false;
        } else if (u->comp_at != COMP_NONE) {
            struct str_ref r = {u->comp_at == COMP_STR ? SEC_STR : SEC_LINE_STR, u->comp_dir};
            have_dir = str_ref_ok(lk, r) && read_str(lk, r, dir, MAX_PATH_BYTES);
        }
    } else {
        if (t->dir.sec < 0 || !read_str(lk, t->dir, dir, MAX_PATH_BYTES))
            return false;
        have_dir = true;
    }
    int n = have_dir ? snprintf(buf, MAX_PATH_BYTES, "%s/%s", dir, name)
                     : snprintf(buf, MAX_PATH_BYTES, "%s", name);
    return n > 0 && n < MAX_PATH_BYTES;
}

/* The name of file index file of the table (header or DW_LNE_define_file entries) into buf. */
static bool file_name(struct lookup *lk, const struct line_header *h, uint64_t ndirs,
                      uint64_t nfiles, uint64_t target, uint32_t file, char *buf)
{
    struct tables t;
    char *name = lk->name;
    if (file < nfiles) {
        if (!walk_tables(lk, h, file, UINT64_MAX, &t))
            return false;
        if (t.file_is_null) {
            snprintf(buf, MAX_PATH_BYTES, "???");
            return true;
        }
        uint64_t dir = t.file_dir;
        if (!read_str(lk, t.file, name, MAX_PATH_BYTES) || !walk_tables(lk, h, file, dir, &t))
            return false;
        return join_path(lk, &t, name, buf);
    }
    struct program_result res = {.want_define = file - nfiles};
    if (!run_program(lk, h, ndirs, target, &res) || res.define_name.sec < 0 ||
        !read_str(lk, res.define_name, name, MAX_PATH_BYTES) ||
        !walk_tables(lk, h, UINT64_MAX, res.define_dir, &t))
        return false;
    return join_path(lk, &t, name, buf);
}

static int find_in_unit(struct lookup *lk, uint64_t addr, const char **file, uint32_t *line)
{
    struct line_header h;
    struct tables t;
    struct program_result res = {.want_define = UINT64_MAX, .define_name = {-1, 0}};
    if (!read_header(lk, &h) || !walk_tables(lk, &h, UINT64_MAX, UINT64_MAX, &t) ||
        !run_program(lk, &h, t.ndirs, addr, &res))
        return -1;
    /* dwfl_module_getsrc: none before the first row, in a gap (an end of sequence), or at or
     * after the table's last row (libdw marks it an end of sequence). */
    if (!res.has_best || res.best.end_seq || res.best.order == res.last.order ||
        res.best.file >= t.nfiles + res.ndefined || res.best.line <= 0)
        return -1;
    if (!file_name(lk, &h, t.ndirs, t.nfiles, addr, res.best.file, lk->path))
        return -1;
    *file = strset_intern(&lk->d->names, lk->path);
    *line = (uint32_t)res.best.line;
    return *file ? 0 : -1;
}

int dwarf_lines_find(struct dwarf_lines *d, uint64_t addr, const char **file, uint32_t *line)
{
    size_t r;
    if (!d || !find_run(d, addr, &r))
        return -1;
    const struct unit *u = &d->units[d->runs[r].unit];
    if (u->stmt_list == NO_LINES || u->stmt_list >= d->sec[SEC_LINE].size)
        return -1;
    struct lookup *lk = calloc(1, sizeof *lk);
    struct entry_format *ef = malloc(sizeof *ef);
    int rc = -1;
    if (lk && ef && (lk->fd = open_same_file(d->path, &d->id)) >= 0) {
        *lk = (struct lookup){.d = d, .u = u, .budget = INFLATE_BUDGET, .fd = lk->fd, .ef = ef};
        if (cur_open(&lk->line, lk->fd, &d->sec[SEC_LINE], &lk->budget)) {
            rc = find_in_unit(lk, addr, file, line);
            cur_close(&lk->line);
        }
        for (int i = 0; i < 2; i++)
            if (lk->str[i].win)
                cur_close(&lk->str[i]);
        close(lk->fd);
    }
    free(ef);
    free(lk);
    return rc;
}
