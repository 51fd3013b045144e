/* collectors/symbolize.c: addresses -> (module, function, file:line), off the hot path (on the
 * flusher thread, at exit). Reads ELF files itself with pread into private buffers,
 * bounds-checking every offset and size, and holds no whole table: a sorted index of the
 * function symbols (8 bytes each), names read from the file when first asked for. Never maps
 * files (a file truncated on disk while mapped
 * would SIGBUS the host process), never runs their code, never prints. One thread at a time per
 * symbolizer. */

#include "collectors/symbolize.h"

#include "collectors/dwarf_lines.h"
#include "collectors/elf_file.h"
#include "collectors/loader_gate.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNKNOWN_MODULE "[unknown]"
#define DEBUG_ROOT "/usr/lib/debug"
#define MAX_BUILD_ID 64
#define MAX_SEGMENTS 16              /* PT_LOAD ranges kept per object; real ones have <= 5 */
#define MAX_TABLE_BYTES (1ull << 30) /* a symbol table (streamed, never held whole) */
#define BACKSCAN 16                  /* sized symbols looked at before pc (nested symbols) */

/* ---- a small open-addressing map uint64 -> pointer (key 0 is never stored) ------------------ */

struct u64map {
    uint64_t *keys;
    void **vals;
    size_t cap, len; /* cap is 0 or a power of two */
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static void *map_get(const struct u64map *m, uint64_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static void map_insert(struct u64map *m, uint64_t key, void *val)
{
    size_t i = mix64(key) & (m->cap - 1);
    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == 0)
        m->len++;
    m->keys[i] = key;
    m->vals[i] = val;
}

/* Returns 0, or -1 when memory runs out (the map is unchanged then). */
static int map_put(struct u64map *m, uint64_t key, void *val)
{
    if (key == 0)
        return -1;
    if ((m->len + 1) * 2 > m->cap) {
        struct u64map bigger = {.cap = m->cap ? m->cap * 2 : 64};
        bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
        bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
        if (!bigger.keys || !bigger.vals) {
            free(bigger.keys);
            free(bigger.vals);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != 0)
                map_insert(&bigger, m->keys[i], m->vals[i]);
        free(m->keys);
        free(m->vals);
        *m = bigger;
    }
    map_insert(m, key, val);
    return 0;
}

static void map_free(struct u64map *m, bool free_vals)
{
    for (size_t i = 0; free_vals && i < m->cap; i++)
        if (m->keys[i] != 0)
            free(m->vals[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- the demangler: libstdc++'s __cxa_demangle found at run time (the agent never links it) -- */

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;
static cxa_demangle_fn demangler; /* the only global: written once under demangler_once */

static void find_demangler(void)
{
    /* The process usually has libstdc++ already (PyTorch does), maybe RTLD_LOCAL: NOLOAD finds it
     * without loading anything; else load it, which is fine off the hot path. */
    void *sym = NULL;
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        sym = dlsym(h, "__cxa_demangle");
    if (!sym)
        sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!sym && (h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL)) != NULL)
        sym = dlsym(h, "__cxa_demangle");
    memcpy(&demangler, &sym, sizeof demangler);
}

void symbolizer_load_helpers(void)
{
    pthread_once(&demangler_once, find_demangler);
    dwarf_lines_load_zlib();
}

/* A malloc'd demangled name, or NULL when name is not an Itanium C++ name or cannot be read. */
static char *demangle_alloc(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    pthread_once(&demangler_once, find_demangler);
    if (!demangler)
        return NULL;
    int status = -1;
    char *out = demangler(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

const char *sym_demangle(const char *name, char *buf, size_t buflen)
{
    if (!buf || buflen == 0)
        return name;
    char *full = demangle_alloc(name);
    if (!full)
        return name;
    size_t n = strlen(full);
    if (n >= buflen)
        n = buflen - 1; /* truncated: still more useful than the mangled form */
    memcpy(buf, full, n);
    buf[n] = '\0';
    free(full);
    return buf;
}

/* ---- reading ELF files defensively ----------------------------------------------------------- */

struct build_id {
    uint8_t bytes[MAX_BUILD_ID];
    uint8_t len; /* 0: none */
};

/* Finds the GNU build-id note in a note area of len bytes (from a file or from memory). */
static bool parse_build_id(const uint8_t *p, uint64_t len, uint64_t align, struct build_id *out)
{
    uint64_t a = align == 8 ? 8 : 4; /* 8-aligned PT_NOTEs hold .note.gnu.property */
    uint64_t off = 0;
    while (len - off >= 12) {
        uint32_t hdr[3]; /* namesz, descsz, type */
        memcpy(hdr, p + off, sizeof hdr);
        off += 12;
        uint64_t namesz = ((uint64_t)hdr[0] + a - 1) & ~(a - 1);
        uint64_t descsz = ((uint64_t)hdr[1] + a - 1) & ~(a - 1);
        if (namesz > len - off)
            return false;
        const uint8_t *name = p + off;
        off += namesz;
        if (descsz > len - off)
            return false;
        if (hdr[2] == NT_GNU_BUILD_ID && hdr[0] == 4 && memcmp(name, "GNU", 4) == 0 && hdr[1] > 0 &&
            hdr[1] <= MAX_BUILD_ID) {
            memcpy(out->bytes, p + off, hdr[1]);
            out->len = (uint8_t)hdr[1];
            return true;
        }
        off += descsz;
    }
    return false;
}

static void file_build_id(const struct elf_file *f, struct build_id *out)
{
    out->len = 0;
    for (size_t i = 1; i < f->shnum; i++) {
        const Elf64_Shdr *sh = &f->sh[i];
        if (sh->sh_type != SHT_NOTE)
            continue;
        char *notes = elf_read_range(f, sh->sh_offset, sh->sh_size, ELF_MAX_SMALL_BYTES);
        bool found =
            notes && parse_build_id((const uint8_t *)notes, sh->sh_size, sh->sh_addralign, out);
        free(notes);
        if (found)
            return;
    }
}

static bool build_id_eq(const struct build_id *a, const struct build_id *b)
{
    return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* ---- function symbols ------------------------------------------------------------------------ */

/* One function of the index, 8 bytes: libtorch_cpu.so has 350,000 functions (and a 78 MB string
 * table, which stays in the file until a name is asked for). Its address is off above the
 * table's base (the lowest function's st_value: addresses are link-time, module-relative). word
 * holds the name's offset in the string table (the low name_bits) and, above it, the gap from
 * the function's end to the next function's start, from which its length follows; a gap of
 * gap_far says the length is in the table's list of the others (the last function, a function
 * nested in the one before it, one followed by a hole wider than the field: most of a stripped
 * library's .dynsym). In a .symtab nearly every gap is alignment padding of under 32 bytes. */
struct sym_func {
    uint32_t off;
    uint32_t word;
};

/* A length the gap field cannot give: function index -> length, sorted by index. */
struct sym_far_len {
    uint32_t index, len;
};

/* A function while the index is built, 12 bytes: its length apart, the rank above NAME_BITS. */
struct sym_build {
    uint32_t off;
    uint32_t len;  /* end - addr, at most UINT32_MAX (no real function is 4 GiB long) */
    uint32_t name; /* offset in the string table, the rank above NAME_BITS */
};

#define NAME_BITS 29 /* string tables up to 512 MiB (libtorch_cpu.so's: 78 MB) */
#define NAME_MASK ((1u << NAME_BITS) - 1)

/* The functions of one file and where their names are: that file's string table, read again
 * when a name is first asked for, from the same file only (open_same_file). The
 * index is an anonymous mapping of its own: built in place (12 bytes a function), then packed
 * and shrunk, its pages go back to the system at once, whatever malloc's thresholds (the
 * process's peak RSS is what the user sees). */
struct sym_table {
    struct sym_func *funcs;
    size_t nfuncs;
    size_t map_bytes; /* of funcs' mapping */
    uint64_t base;    /* the address funcs[].off counts from */
    unsigned name_bits;
    uint32_t gap_far;
    struct sym_far_len *far; /* malloc'd */
    size_t nfar;
    char *path;
    struct file_id id;
    uint64_t strtab_off, strtab_size;
};

static void sym_table_free(struct sym_table *t)
{
    if (t->map_bytes)
        munmap(t->funcs, t->map_bytes);
    free(t->far);
    free(t->path);
    memset(t, 0, sizeof *t);
}

static size_t page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

/* The index's order: address, then rank (the bits above NAME_BITS), then name offset, then
 * the longer first (a total order: the in-place sort below is not stable). */
static bool func_before(const struct sym_build *a, const struct sym_build *b)
{
    if (a->off != b->off)
        return a->off < b->off;
    if (a->name != b->name)
        return a->name < b->name;
    return a->len > b->len;
}

static void swap_funcs(struct sym_build *a, struct sym_build *b)
{
    struct sym_build t = *a;
    *a = *b;
    *b = t;
}

static void heap_sort_funcs(struct sym_build *v, size_t n)
{
    for (size_t end = n, start = n / 2;;) {
        if (start > 0)
            start--; /* heapify */
        else if (--end > 0)
            swap_funcs(&v[0], &v[end]); /* the largest to the end */
        else
            return;
        for (size_t root = start, child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && func_before(&v[child], &v[child + 1]))
                child++;
            if (!func_before(&v[root], &v[child]))
                break;
            swap_funcs(&v[root], &v[child]);
        }
    }
}

/* Sorts in place (glibc's qsort mallocs a copy as large as the array: 4.7 MB for
 * libtorch_cpu.so's, on top of it): quicksort with a median-of-three pivot, heapsort
 * below depth levels, insertion sort for short runs. */
static void sort_funcs(struct sym_build *v, size_t n, unsigned depth)
{
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort_funcs(v, n);
            return;
        }
        size_t mid = n / 2;
        if (func_before(&v[mid], &v[0]))
            swap_funcs(&v[mid], &v[0]);
        if (func_before(&v[n - 1], &v[0]))
            swap_funcs(&v[n - 1], &v[0]);
        if (func_before(&v[n - 1], &v[mid]))
            swap_funcs(&v[n - 1], &v[mid]);
        struct sym_build pivot = v[mid];
        size_t i = 0, j = n - 1; /* Hoare: v[0] <= pivot <= v[n - 1] bound both scans */
        for (;;) {
            while (func_before(&v[i], &pivot))
                i++;
            while (func_before(&pivot, &v[j]))
                j--;
            if (i >= j)
                break;
            swap_funcs(&v[i++], &v[j--]);
        }
        size_t left = j + 1; /* [0, left) <= pivot <= [left, n), both non-empty */
        if (left < n - left) {
            sort_funcs(v, left, depth);
            v += left;
            n -= left;
        } else {
            sort_funcs(v + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && func_before(&v[k], &v[k - 1]); k--)
            swap_funcs(&v[k], &v[k - 1]);
}

/* Sized before unsized, global before weak before local: 0..6. */
static uint32_t func_rank(const Elf64_Sym *sym)
{
    uint32_t r = sym->st_size ? 0 : 4;
    switch (ELF64_ST_BIND(sym->st_info)) {
    case STB_GLOBAL: return r;
    case STB_WEAK: return r + 1;
    default: return r + 2;
    }
}

/* Keeps one symbol per address (the best ranked) and gives unsized symbols an end: the next
 * symbol's address or the end of their section, whichever comes first. Clears the ranks;
 * returns how many are kept. */
static size_t finish_table(struct sym_build *fn, size_t count)
{
    unsigned depth = 2;
    for (size_t k = count; k > 1; k >>= 1)
        depth += 2;
    sort_funcs(fn, count, depth);
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (n == 0 || fn[n - 1].off != fn[i].off)
            fn[n++] = fn[i];
    for (size_t i = 0; i < n; i++) {
        bool unsized = fn[i].name >> NAME_BITS >= 4;
        if (unsized && i + 1 < n && fn[i].len > fn[i + 1].off - fn[i].off)
            fn[i].len = fn[i + 1].off - fn[i].off;
        fn[i].name &= NAME_MASK;
    }
    return n;
}

/* The gap field of a function of length len at off whose next one starts at next: from its
 * end to there, or gap_far when that is not a gap the field holds (the last one: no next). */
static uint32_t gap_of(uint32_t off, uint32_t len, const uint32_t *next, uint32_t gap_far)
{
    if (!next)
        return gap_far;
    uint64_t room = (uint64_t)*next - off;
    return len <= room && room - len < gap_far ? (uint32_t)(room - len) : gap_far;
}

/* Packs t's n built functions (12 bytes each, at t->funcs) in place into 8-byte ones, the
 * lengths the gaps cannot give into t->far. Returns -1 when memory runs out. */
static int pack_table(struct sym_table *t, size_t n, uint64_t strtab_size)
{
    unsigned bits = 1;
    while (bits < NAME_BITS && (strtab_size - 1) >> bits)
        bits++;
    t->name_bits = bits;
    t->gap_far = (1u << (32 - bits)) - 1;
    const struct sym_build *b = (const struct sym_build *)t->funcs;
    size_t nfar = 0;
    for (size_t i = 0; i < n; i++)
        nfar +=
            gap_of(b[i].off, b[i].len, i + 1 < n ? &b[i + 1].off : NULL, t->gap_far) == t->gap_far;
    if (nfar && !(t->far = malloc(nfar * sizeof *t->far)))
        return -1;
    /* Entry i's 8 bytes overlay the first 8 of built function i's 12, never function i + 1's:
     * each is read before it is written over, through memcpy (the bytes change type). */
    unsigned char *mem = (unsigned char *)t->funcs;
    for (size_t i = 0; i < n; i++) {
        struct sym_build cur;
        uint32_t next;
        memcpy(&cur, mem + i * sizeof cur, sizeof cur);
        if (i + 1 < n)
            memcpy(&next, mem + (i + 1) * sizeof cur + offsetof(struct sym_build, off),
                   sizeof next);
        uint32_t gap = gap_of(cur.off, cur.len, i + 1 < n ? &next : NULL, t->gap_far);
        if (gap == t->gap_far)
            t->far[t->nfar++] = (struct sym_far_len){(uint32_t)i, cur.len};
        struct sym_func packed = {cur.off, cur.name | gap << bits};
        memcpy(mem + i * sizeof packed, &packed, sizeof packed);
    }
    t->nfuncs = n;
    return 0;
}

static uint32_t func_name(const struct sym_table *t, size_t i)
{
    return t->funcs[i].word & ((1u << t->name_bits) - 1);
}

static uint32_t func_len(const struct sym_table *t, size_t i)
{
    uint32_t gap = t->funcs[i].word >> t->name_bits;
    if (gap != t->gap_far)
        return t->funcs[i + 1].off - t->funcs[i].off - gap; /* the last one's is far */
    size_t lo = 0, hi = t->nfar;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->far[mid].index < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nfar && t->far[lo].index == i ? t->far[lo].len : 0;
}

/* sym names a function of f we can name; *out is then filled, its address counted from base
 * (rank in the name's top bits). */
static bool func_of(const struct elf_file *f, const Elf64_Sym *sym, uint64_t strtab_size,
                    uint64_t base, struct sym_build *out)
{
    unsigned type = ELF64_ST_TYPE(sym->st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_value == 0 || sym->st_name == 0 ||
        sym->st_name >= strtab_size || sym->st_shndx == SHN_UNDEF || sym->st_shndx >= f->shnum)
        return false; /* also drops SHN_ABS and SHN_XINDEX: never code we can name */
    const Elf64_Shdr *sec = &f->sh[sym->st_shndx];
    uint64_t end;
    if (sym->st_size != 0) {
        end = sym->st_value + sym->st_size;
        if (end < sym->st_value)
            return false;
    } else {
        end = sec->sh_addr + sec->sh_size;
        if (end < sec->sh_addr || sym->st_value < sec->sh_addr || sym->st_value >= end)
            return false;
    }
    uint64_t len = end - sym->st_value;
    *out = (struct sym_build){(uint32_t)(sym->st_value - base),
                              len > UINT32_MAX ? UINT32_MAX : (uint32_t)len,
                              sym->st_name | func_rank(sym) << NAME_BITS};
    return true;
}

#define SYMS_PER_READ 4096 /* 96 KiB of Elf64_Sym a read: the table is never held whole */

/* The functions scan_funcs found: how many, their lowest and highest address. */
struct func_span {
    size_t count;
    uint64_t lo, hi;
};

/* Streams the nsyms symbols at off and counts the functions among them (into *span, with their
 * addresses' range), storing the first cap of them in out (addresses counted from base) when
 * out is not NULL; a function that is not within 4 GiB above base is then left out (the file
 * changed since it was counted). -1 when a read fails. */
static int scan_funcs(const struct elf_file *f, uint64_t off, uint64_t nsyms, uint64_t strtab_size,
                      uint64_t base, struct sym_build *out, size_t cap, struct func_span *span)
{
    Elf64_Sym *buf = malloc(SYMS_PER_READ * sizeof *buf);
    if (!buf)
        return -1;
    *span = (struct func_span){0, UINT64_MAX, 0};
    for (uint64_t first = 0; first < nsyms; first += SYMS_PER_READ) {
        size_t k = nsyms - first < SYMS_PER_READ ? (size_t)(nsyms - first) : SYMS_PER_READ;
        if (read_at(f->fd, buf, k * sizeof *buf, off + first * sizeof *buf) != 0) {
            free(buf);
            return -1;
        }
        for (size_t j = first == 0 ? 1 : 0; j < k; j++) { /* symbol 0 is the null symbol */
            struct sym_build fn;
            uint64_t at = buf[j].st_value;
            if (!func_of(f, &buf[j], strtab_size, base, &fn) ||
                (out && (at < base || at - base > UINT32_MAX)))
                continue;
            if (out && span->count < cap)
                out[span->count] = fn;
            span->count++;
            span->lo = at < span->lo ? at : span->lo;
            span->hi = at > span->hi ? at : span->hi;
        }
    }
    free(buf);
    return 0;
}

/* Indexes the functions of the first section of type want (SHT_SYMTAB or SHT_DYNSYM) of f, the
 * file at path, in two streamed passes (count, then fill): 12 bytes a function while it is
 * built, the most ever held, then 8. Returns 0 (t filled, maybe with no function), 1 when there
 * is no such section, -1 on a bad or unreadable table, or one whose functions span more than
 * 4 GiB (no object's code does: x86-64 calls reach +-2 GiB). */
static int load_symbols(const struct elf_file *f, const char *path, uint32_t want,
                        struct sym_table *t)
{
    memset(t, 0, sizeof *t);
    const Elf64_Shdr *symsh = NULL;
    for (size_t i = 1; i < f->shnum && !symsh; i++)
        if (f->sh[i].sh_type == want)
            symsh = &f->sh[i];
    if (!symsh)
        return 1;
    if ((symsh->sh_entsize != 0 && symsh->sh_entsize != sizeof(Elf64_Sym)) ||
        symsh->sh_link == SHN_UNDEF || symsh->sh_link >= f->shnum ||
        f->sh[symsh->sh_link].sh_type != SHT_STRTAB)
        return -1;
    const Elf64_Shdr *strsh = &f->sh[symsh->sh_link];
    uint64_t nsyms = symsh->sh_size / sizeof(Elf64_Sym);
    if (!elf_in_file(f, symsh->sh_offset, nsyms * sizeof(Elf64_Sym)) ||
        nsyms * sizeof(Elf64_Sym) > MAX_TABLE_BYTES ||
        !elf_in_file(f, strsh->sh_offset, strsh->sh_size) || strsh->sh_size > NAME_MASK ||
        file_id_of(f->fd, &t->id) != 0 || !(t->path = strdup(path)))
        goto fail;
    struct func_span all, kept;
    if (scan_funcs(f, symsh->sh_offset, nsyms, strsh->sh_size, 0, NULL, 0, &all) != 0)
        goto fail;
    if (all.count) {
        if (all.hi - all.lo > UINT32_MAX)
            goto fail;
        t->base = all.lo;
        t->map_bytes = page_round(all.count * sizeof(struct sym_build));
        t->funcs =
            mmap(NULL, t->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t->funcs == MAP_FAILED) {
            t->map_bytes = 0;
            goto fail;
        }
        struct sym_build *built = (struct sym_build *)t->funcs;
        if (scan_funcs(f, symsh->sh_offset, nsyms, strsh->sh_size, t->base, built, all.count,
                       &kept) != 0)
            goto fail;
        size_t n = finish_table(built, kept.count < all.count ? kept.count : all.count);
        if (pack_table(t, n, strsh->sh_size) != 0)
            goto fail;
        size_t fit = page_round(t->nfuncs * sizeof *t->funcs);
        if (fit < t->map_bytes && mremap(t->funcs, t->map_bytes, fit, 0) != MAP_FAILED)
            t->map_bytes = fit; /* in place: shrinking never moves */
    }
    t->strtab_off = strsh->sh_offset;
    t->strtab_size = strsh->sh_size;
    return 0;
fail:
    sym_table_free(t);
    return -1;
}

#define NAME_FIRST_READ 256       /* most names are shorter; C++ ones reach 1.5 KB */
#define MAX_NAME_BYTES (1u << 16) /* a longer name is cut there */

/* The NUL-terminated string at strtab offset off of t's file, malloc'd: up to its NUL or the end
 * of the table (what a copy of the whole table with a NUL appended would give). NULL when the
 * file is gone, is no longer the file the index was built from, or cannot be read. */
static char *read_name(const struct sym_table *t, uint32_t off)
{
    int fd = open_same_file(t->path, &t->id);
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    if (off >= t->strtab_size)
        goto out;
    uint64_t room = t->strtab_size - off;
    if (room > MAX_NAME_BYTES)
        room = MAX_NAME_BYTES;
    for (size_t have = 0, want = NAME_FIRST_READ;; want *= 2) {
        if (want > room)
            want = (size_t)room;
        char *bigger = realloc(buf, want + 1);
        if (!bigger || read_at(fd, bigger + have, want - have, t->strtab_off + off + have) != 0) {
            free(bigger ? bigger : buf);
            buf = NULL;
            goto out;
        }
        buf = bigger;
        buf[want] = '\0';
        size_t len = strnlen(buf + have, want - have) + have;
        if (len < want || want == room) {
            char *fit = realloc(buf, len + 1);
            buf = fit ? fit : buf;
            goto out;
        }
        have = want;
    }
out:
    close(fd);
    return buf;
}

/* The function containing addr, or -1. The nearest symbol at or before addr wins when addr is
 * inside it; else one of the few before it that contains addr (a symbol nested in a bigger one);
 * a sized symbol never covers addresses past its size (a static function of a stripped library
 * stays unnamed rather than wrongly named). */
static long find_func(const struct sym_table *t, uint64_t addr)
{
    if (t->nfuncs == 0 || addr < t->base)
        return -1;
    uint64_t rel = addr - t->base;
    size_t lo = 0, hi = t->nfuncs; /* first entry with funcs[].off > rel */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->funcs[mid].off <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, seen = 0; i > 0 && seen < BACKSCAN; i--, seen++)
        if (rel - t->funcs[i - 1].off < func_len(t, i - 1))
            return (long)(i - 1);
    return -1;
}

/* ---- modules --------------------------------------------------------------------------------- */

enum load_state { NOT_TRIED, LOADED, FAILED };

struct segment {
    uintptr_t lo, hi;
};

struct sym_module {
    char *name;      /* reported path */
    char *open_path; /* what is opened ("/proc/self/exe" for the main program) */
    uintptr_t bias;  /* dlpi_addr: run-time address - link-time address */
    bool is_main;
    struct segment seg[MAX_SEGMENTS];
    int nseg;
    struct build_id mem_id; /* from the loaded image's PT_NOTE */
    enum load_state elf_state;
    struct sym_table syms;
    char *debug_path;       /* separate debug file (build-id or .gnu_debuglink), or NULL */
    struct u64map names;    /* function index + 1 -> name (malloc'd) */
    struct u64map results;  /* files only: offset + 1 -> struct sym_info * */
    const char *lines_path; /* whose DWARF gives file:line (open_path or debug_path), or NULL */
    enum load_state lines_state;
    struct dwarf_lines *lines;
};

struct module_list {
    struct sym_module **v;
    size_t n, cap;
};

struct symbolizer {
    struct module_list live;  /* objects of this process, in load order */
    struct module_list files; /* files named by symbolizer_resolve_file */
    struct u64map pcs;        /* pc -> struct sym_info * (found modules only) */
    bool lines;
};

/* file:line of rel in m, from the DWARF of the file libdw would read: the object's own, else
 * its separate debug file's (module_load chose). */
static void find_line(struct symbolizer *s, struct sym_module *m, uint64_t rel,
                      struct sym_info *out)
{
    if (!s->lines || !m->lines_path)
        return;
    if (m->lines_state == NOT_TRIED)
        m->lines_state = (m->lines = dwarf_lines_open(m->lines_path)) ? LOADED : FAILED;
    const char *file;
    uint32_t line;
    if (m->lines_state == LOADED && dwarf_lines_find(m->lines, rel, &file, &line) == 0) {
        out->file = file;
        out->line = line;
    }
}

/* ---- separate debug files -------------------------------------------------------------------- */

/* path is acceptable as m's debug file: an ELF file we read, not the object itself, and with the
 * same build-id when both have one. (.gnu_debuglink's CRC is not checked: it means reading the
 * whole file, gigabytes for libtorch; the build-id check covers the files distributions ship.) */
static bool debug_file_ok(const char *path, const struct stat *self, const struct build_id *id)
{
    struct stat st;
    if (stat(path, &st) != 0 || (st.st_dev == self->st_dev && st.st_ino == self->st_ino))
        return false;
    struct elf_file d;
    if (elf_open(&d, path) != 0)
        return false;
    struct build_id did;
    file_build_id(&d, &did);
    elf_close(&d);
    return id->len == 0 || did.len == 0 || build_id_eq(id, &did);
}

/* The debuglink name (a file name, no directory) or NULL; malloc'd. */
static char *read_debuglink(const struct elf_file *f)
{
    const Elf64_Shdr *sh = elf_find_section(f, ".gnu_debuglink");
    char *link = sh ? elf_read_range(f, sh->sh_offset, sh->sh_size, ELF_MAX_SMALL_BYTES) : NULL;
    if (link && (link[0] == '\0' || strchr(link, '/') || strcmp(link, "..") == 0)) {
        free(link);
        link = NULL;
    }
    return link;
}

/* gdb's places: /usr/lib/debug/.build-id/xx/rest.debug, then DIR/LINK, DIR/.debug/LINK and
 * /usr/lib/debug/DIR/LINK, where DIR is the object's real directory. */
static char *find_debug_file(const char *open_path, const struct elf_file *f,
                             const struct build_id *id)
{
    char path[PATH_MAX];
    struct stat self;
    if (fstat(f->fd, &self) != 0)
        return NULL;
    if (id->len >= 2) {
        int n = snprintf(path, sizeof path, DEBUG_ROOT "/.build-id/%02x/", id->bytes[0]);
        for (unsigned i = 1; i < id->len; i++)
            n += snprintf(path + n, sizeof path - (size_t)n, "%02x", id->bytes[i]);
        snprintf(path + n, sizeof path - (size_t)n, ".debug");
        if (debug_file_ok(path, &self, id))
            return strdup(path);
    }
    char *link = read_debuglink(f);
    char *real = link ? realpath(open_path, NULL) : NULL;
    char *slash = real ? strrchr(real, '/') : NULL;
    char *found = NULL;
    if (slash) {
        *slash = '\0'; /* real is now the directory ("" for "/") */
        static const char *const forms[] = {"%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s"};
        for (size_t i = 0; i < sizeof forms / sizeof forms[0] && !found; i++) {
            int n = snprintf(path, sizeof path, forms[i], real, link);
            if (n > 0 && n < (int)sizeof path && debug_file_ok(path, &self, id))
                found = strdup(path);
        }
    }
    free(real);
    free(link);
    return found;
}

/* ---- loading a module's symbols -------------------------------------------------------------- */

/* Reads m's function symbols once: its own .symtab, else the .symtab of its debug file, else its
 * .dynsym. Returns 0 when the file was read (functions may still be missing), -1 when it cannot
 * be (no file, not ELF64 LE, damaged, or not the file that was loaded). */
static int module_load(struct sym_module *m)
{
    if (m->elf_state != NOT_TRIED)
        return m->elf_state == LOADED ? 0 : -1;
    m->elf_state = FAILED;
    struct elf_file f;
    if (elf_open(&f, m->open_path) != 0)
        return -1;
    struct build_id fid;
    file_build_id(&f, &fid);
    if (m->mem_id.len != 0 && !build_id_eq(&m->mem_id, &fid)) {
        elf_close(&f); /* replaced on disk since it was loaded: its symbols would lie */
        return -1;
    }
    m->debug_path = find_debug_file(m->open_path, &f, &fid);
    m->lines_path = dwarf_file_has_dwarf(&f) ? m->open_path : m->debug_path;
    if (load_symbols(&f, m->open_path, SHT_SYMTAB, &m->syms) != 0 || m->syms.nfuncs == 0) {
        sym_table_free(&m->syms);
        struct elf_file d;
        if (m->debug_path && elf_open(&d, m->debug_path) == 0) {
            if (load_symbols(&d, m->debug_path, SHT_SYMTAB, &m->syms) != 0 || m->syms.nfuncs == 0)
                sym_table_free(&m->syms);
            elf_close(&d);
        }
        if (m->syms.nfuncs == 0 && load_symbols(&f, m->open_path, SHT_DYNSYM, &m->syms) != 0)
            sym_table_free(&m->syms);
    }
    elf_close(&f);
    m->elf_state = LOADED;
    return 0;
}

static const char *function_name(struct sym_module *m, uint64_t rel)
{
    long i = find_func(&m->syms, rel);
    if (i < 0)
        return NULL;
    const char *name = map_get(&m->names, (uint64_t)i + 1);
    if (name)
        return name;
    char *raw = read_name(&m->syms, func_name(&m->syms, (size_t)i));
    if (!raw)
        return NULL;
    char *demangled = demangle_alloc(raw);
    /* .symtab spells versioned definitions "__libc_start_main@@GLIBC_2.34": name the function. */
    const char *at = demangled ? NULL : strchr(raw, '@');
    if (at && at > raw)
        demangled = strndup(raw, (size_t)(at - raw));
    char *kept = raw;
    if (demangled) {
        free(raw);
        kept = demangled;
    }
    if (map_put(&m->names, (uint64_t)i + 1, kept) != 0) {
        free(kept);
        return NULL;
    }
    return kept;
}

static void resolve_in_module(struct symbolizer *s, struct sym_module *m, uint64_t rel,
                              struct sym_info *out)
{
    *out = (struct sym_info){.module = m->name, .offset = rel};
    if (module_load(m) != 0)
        return;
    out->function = function_name(m, rel);
    find_line(s, m, rel, out);
}

static void module_free(struct sym_module *m)
{
    map_free(&m->names, true);
    map_free(&m->results, true);
    dwarf_lines_free(m->lines);
    sym_table_free(&m->syms);
    free(m->debug_path);
    free(m->name);
    free(m->open_path);
    free(m);
}

static struct sym_module *module_add(struct module_list *l, const char *name, const char *open_path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        struct sym_module **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return NULL;
        l->v = v;
        l->cap = cap;
    }
    struct sym_module *m = calloc(1, sizeof *m);
    if (!m || !(m->name = strdup(name)) || !(m->open_path = strdup(open_path))) {
        if (m)
            free(m->name);
        free(m);
        return NULL;
    }
    l->v[l->n++] = m;
    return m;
}

/* ---- the snapshot of loaded objects ---------------------------------------------------------- */

static bool in_segments(const struct sym_module *m, uintptr_t lo, uintptr_t len)
{
    for (int i = 0; i < m->nseg; i++)
        if (lo >= m->seg[i].lo && lo < m->seg[i].hi && len <= m->seg[i].hi - lo)
            return true;
    return false;
}

static void main_program_name(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n > 0) {
        buf[n] = '\0';
        return;
    }
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    snprintf(buf, len, "%s", execfn ? execfn : "[main program]");
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct symbolizer *s = arg;
    if (size < offsetof(struct dl_phdr_info, dlpi_phnum) + sizeof info->dlpi_phnum)
        return 0;
    bool is_main = !info->dlpi_name || info->dlpi_name[0] == '\0';
    for (size_t i = 0; i < s->live.n; i++) {
        const struct sym_module *k = s->live.v[i];
        if (k->bias == info->dlpi_addr && k->is_main == is_main &&
            (is_main || strcmp(k->name, info->dlpi_name) == 0))
            return 0; /* known */
    }
    if (is_main && s->live.n != 0 && s->live.v[0]->is_main)
        return 0; /* another nameless object: not the program; nothing to open */
    char exe[PATH_MAX];
    if (is_main)
        main_program_name(exe, sizeof exe);
    struct sym_module *m = module_add(&s->live, is_main ? exe : info->dlpi_name,
                                      is_main ? "/proc/self/exe" : info->dlpi_name);
    if (!m)
        return 0;
    m->bias = info->dlpi_addr;
    m->is_main = is_main;
    for (size_t i = 0; i < info->dlpi_phnum && m->nseg < MAX_SEGMENTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && ph->p_memsz > 0)
            m->seg[m->nseg++] = (struct segment){info->dlpi_addr + ph->p_vaddr,
                                                 info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
    }
    /* The build-id of what is mapped, to refuse a file replaced on disk since; read only where
     * a PT_LOAD maps it. */
    for (size_t i = 0; i < info->dlpi_phnum && m->mem_id.len == 0; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_NOTE && ph->p_memsz <= ELF_MAX_SMALL_BYTES &&
            in_segments(m, at, ph->p_memsz))
            parse_build_id((const uint8_t *)at, ph->p_memsz, ph->p_align, &m->mem_id);
    }
    return 0;
}

static struct sym_module *module_for_pc(const struct symbolizer *s, uintptr_t pc)
{
    for (size_t i = s->live.n; i > 0; i--) /* newest first: it owns a reused address range */
        if (in_segments(s->live.v[i - 1], pc, 1))
            return s->live.v[i - 1];
    return NULL;
}

/* ---- the public API ------------------------------------------------------------------------- */

struct symbolizer *symbolizer_new(void)
{
    struct symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->lines = true;
    symbolizer_refresh(s);
    return s;
}

/* Waits for a fork under way (the loader's write lock: collectors/loader_gate.h): the list is
 * what names every frame. */
void symbolizer_refresh(struct symbolizer *s)
{
    if (s && loader_gate_enter(true)) {
        dl_iterate_phdr(scan_object, s);
        loader_gate_leave();
    }
}

void symbolizer_set_lines(struct symbolizer *s, int enabled)
{
    if (s)
        s->lines = enabled != 0;
}

int symbolizer_resolve(struct symbolizer *s, uintptr_t pc, struct sym_info *out)
{
    *out = (struct sym_info){.module = UNKNOWN_MODULE};
    if (!s)
        return -1;
    const struct sym_info *hit = map_get(&s->pcs, pc);
    if (hit) {
        *out = *hit;
        return 0;
    }
    struct sym_module *m = module_for_pc(s, pc);
    if (!m)
        return -1; /* not cached: a later refresh may find it */
    resolve_in_module(s, m, pc - m->bias, out);
    struct sym_info *copy = malloc(sizeof *copy);
    if (copy) {
        *copy = *out;
        if (map_put(&s->pcs, pc, copy) != 0)
            free(copy);
    }
    return 0;
}

int symbolizer_resolve_file(struct symbolizer *s, const char *path, uint64_t offset,
                            struct sym_info *out)
{
    *out = (struct sym_info){.module = UNKNOWN_MODULE, .offset = offset};
    if (!s || !path)
        return -1;
    struct sym_module *m = NULL;
    for (size_t i = 0; i < s->files.n && !m; i++)
        if (strcmp(s->files.v[i]->name, path) == 0)
            m = s->files.v[i];
    if (!m && !(m = module_add(&s->files, path, path)))
        return -1;
    const struct sym_info *hit = map_get(&m->results, offset + 1);
    if (hit) {
        *out = *hit;
        return 0;
    }
    resolve_in_module(s, m, offset, out);
    if (m->elf_state != LOADED)
        return -1;
    struct sym_info *copy = malloc(sizeof *copy);
    if (copy) {
        *copy = *out;
        if (map_put(&m->results, offset + 1, copy) != 0)
            free(copy);
    }
    return 0;
}

void symbolizer_free(struct symbolizer *s)
{
    if (!s)
        return;
    map_free(&s->pcs, true);
    for (size_t i = 0; i < s->live.n; i++)
        module_free(s->live.v[i]);
    for (size_t i = 0; i < s->files.n; i++)
        module_free(s->files.v[i]);
    free(s->live.v);
    free(s->files.v);
    free(s);
}
