/* tests/unit/test_symbolize.c: the symbolizer against fixtures with known answers (the C++
 * library tests/data/sym/symlib.cpp, its stripped, debuglink, DWARF 4 and compressed copies, this
 * PIE program), file:line against libdw at every address of them (when libdw is installed: the
 * reader was written to answer as it does), a generated library of 200,000 functions (names as
 * built, memory bounded), and damaged ELF files, which must fail cleanly. SYM_FIXTURE_DIR comes
 * from tests/symbolize.mk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectors/symbolize.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#ifndef SYM_FIXTURE_DIR
#error "SYM_FIXTURE_DIR must name the folder of the built fixtures (tests/symbolize.mk)"
#endif

#define LIB_PLAIN "libsymlib.so"
#define LIB_STRIPPED "libsymlib_stripped.so"
#define LIB_DEBUGLINK "libsymlib_dbg.so"
#define LIB_DWARF4 "libsymlib_dwarf4.so"
#define LIB_ZLIB "libsymlib_zlib.so"
#define LIB_ZGNU "libsymlib_zgnu.so"

/* Mirrors struct symlib_fns in symlib.cpp. */
struct symlib_fn {
    void *entry;
    void *ret_addr;
};
struct symlib_fns {
    struct symlib_fn anon_static, file_static, hidden_method, exported;
};

struct fixture_lib {
    void *handle;
    struct symlib_fns fns;
    uintptr_t base;       /* load base, from dladdr */
    uintptr_t asm_nosize; /* exported, zero-size symbol */
    int hidden_line;
};

static const char *fixture_path(const char *file)
{
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", SYM_FIXTURE_DIR, file);
    return p;
}

static int load_fixture(const char *file, struct fixture_lib *lib)
{
    memset(lib, 0, sizeof *lib);
    lib->handle = dlopen(fixture_path(file), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle)
        return -1;
    void (*functions)(struct symlib_fns *);
    void *p = dlsym(lib->handle, "symlib_functions");
    memcpy(&functions, &p, sizeof p);
    const int *line = dlsym(lib->handle, "symlib_hidden_line");
    lib->asm_nosize = (uintptr_t)dlsym(lib->handle, "symlib_asm_nosize");
    Dl_info info;
    if (!functions || !line || !lib->asm_nosize || !dladdr(p, &info))
        return -1;
    functions(&lib->fns);
    lib->base = (uintptr_t)info.dli_fbase;
    lib->hidden_line = *line;
    return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Resolves pc and checks module and function (NULL: must be unknown). */
static void expect_frame(struct symbolizer *s, uintptr_t pc, const char *module_suffix,
                         uintptr_t base, const char *function)
{
    struct sym_info info;
    assert_int_equal(symbolizer_resolve(s, pc, &info), 0);
    assert_non_null(info.module);
    assert_true(ends_with(info.module, module_suffix));
    assert_int_equal(info.offset, pc - base);
    if (function)
        assert_string_equal(info.function, function);
    else
        assert_null(info.function);
}

/* Entry + 1 and the return address - 1 of a call inside the function. */
static void expect_function(struct symbolizer *s, const struct fixture_lib *lib,
                            const struct symlib_fn *fn, const char *module, const char *function)
{
    expect_frame(s, (uintptr_t)fn->entry + 1, module, lib->base, function);
    expect_frame(s, (uintptr_t)fn->ret_addr - 1, module, lib->base, function);
}

static void test_demangle(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(sym_demangle("_ZN2ns6Widget13hidden_methodEi", buf, sizeof buf),
                        "ns::Widget::hidden_method(int)");
    assert_string_equal(sym_demangle("_ZN12_GLOBAL__N_114anon_static_fnEi", buf, sizeof buf),
                        "(anonymous namespace)::anon_static_fn(int)");
    assert_string_equal(sym_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi", buf, sizeof buf),
                        "std::vector<int, std::allocator<int> >::push_back(int const&)");
    const char *plain = "cudaStreamSynchronize";
    assert_ptr_equal(sym_demangle(plain, buf, sizeof buf), plain);
    const char *bad = "_Z_not_really";
    assert_ptr_equal(sym_demangle(bad, buf, sizeof buf), bad);
    assert_ptr_equal(sym_demangle(bad, NULL, 0), bad);
    char small[8];
    assert_string_equal(sym_demangle("_ZN2ns6Widget13hidden_methodEi", small, sizeof small),
                        "ns::Wid");
}

static void test_library_symtab(void **state)
{
    (void)state;
    struct fixture_lib lib;
    assert_int_equal(load_fixture(LIB_PLAIN, &lib), 0);
    struct symbolizer *s = symbolizer_new();
    assert_non_null(s);
    expect_function(s, &lib, &lib.fns.anon_static, "/" LIB_PLAIN,
                    "(anonymous namespace)::anon_static_fn(int)");
    expect_function(s, &lib, &lib.fns.file_static, "/" LIB_PLAIN, "file_static_fn(int)");
    expect_function(s, &lib, &lib.fns.hidden_method, "/" LIB_PLAIN,
                    "ns::Widget::hidden_method(int)");
    expect_function(s, &lib, &lib.fns.exported, "/" LIB_PLAIN, "ns::exported_fn(int)");
    /* A FUNC symbol without a size covers up to the next symbol. */
    expect_frame(s, lib.asm_nosize + 2, "/" LIB_PLAIN, lib.base, "symlib_asm_nosize");
    symbolizer_free(s);
    dlclose(lib.handle);
}

static volatile int exe_sink;

static __attribute__((noinline)) void *exe_static_fn(int x)
{
    exe_sink = x;
    void *r = __builtin_extract_return_addr(__builtin_return_address(0));
    exe_sink = x + 1;
    return r;
}

static void test_main_program(void **state)
{
    (void)state;
    Dl_info info;
    assert_true(dladdr((void *)exe_static_fn, &info));
    struct symbolizer *s = symbolizer_new();
    uintptr_t base = (uintptr_t)info.dli_fbase;
    expect_frame(s, (uintptr_t)exe_static_fn + 1, "/test_symbolize", base, "exe_static_fn");
    expect_frame(s, (uintptr_t)test_main_program + 3, "/test_symbolize", base, "test_main_program");
    void *ret = exe_static_fn(1); /* a return address in this function */
    expect_frame(s, (uintptr_t)ret - 1, "/test_symbolize", base, "test_main_program");
    symbolizer_free(s);
}

static void test_unknown_address(void **state)
{
    (void)state;
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(page != MAP_FAILED);
    struct symbolizer *s = symbolizer_new();
    struct sym_info info;
    assert_int_equal(symbolizer_resolve(s, (uintptr_t)page + 8, &info), -1);
    assert_string_equal(info.module, "[unknown]");
    assert_null(info.function);
    assert_null(info.file);
    assert_int_equal(symbolizer_resolve(s, 0, &info), -1);
    assert_string_equal(info.module, "[unknown]");
    assert_int_equal(symbolizer_resolve(NULL, 1, &info), -1);
    symbolizer_free(s);
    munmap(page, 4096);
}

static void test_cache_keeps_strings(void **state)
{
    (void)state;
    struct symbolizer *s = symbolizer_new();
    struct sym_info a, b;
    uintptr_t pc = (uintptr_t)exe_static_fn + 1;
    assert_int_equal(symbolizer_resolve(s, pc, &a), 0);
    assert_int_equal(symbolizer_resolve(s, pc, &b), 0);
    assert_ptr_equal(a.module, b.module);
    assert_ptr_equal(a.function, b.function);
    assert_ptr_equal(a.file, b.file);
    /* Another pc in the same function shares the name. */
    assert_int_equal(symbolizer_resolve(s, pc + 1, &b), 0);
    assert_ptr_equal(a.function, b.function);
    symbolizer_free(s);
}

/* Loaded after the snapshot: unknown until symbolizer_refresh. Then stripped: only .dynsym. */
static void test_refresh_and_stripped_library(void **state)
{
    (void)state;
    struct symbolizer *s = symbolizer_new();
    struct fixture_lib lib;
    assert_int_equal(load_fixture(LIB_STRIPPED, &lib), 0);
    struct sym_info info;
    assert_int_equal(symbolizer_resolve(s, (uintptr_t)lib.fns.exported.entry + 1, &info), -1);
    symbolizer_refresh(s);
    symbolizer_refresh(s); /* twice: nothing is added twice */
    expect_function(s, &lib, &lib.fns.exported, "/" LIB_STRIPPED, "ns::exported_fn(int)");
    /* Not in .dynsym, and the preceding exported symbols have sizes: no name, never a wrong
     * one. */
    expect_function(s, &lib, &lib.fns.hidden_method, "/" LIB_STRIPPED, NULL);
    expect_function(s, &lib, &lib.fns.anon_static, "/" LIB_STRIPPED, NULL);
    expect_function(s, &lib, &lib.fns.file_static, "/" LIB_STRIPPED, NULL);
    symbolizer_free(s);
    dlclose(lib.handle);
}

/* Stripped, with .gnu_debuglink to symlib.debug next to it: names from the debug file. */
static void test_debuglink_symtab(void **state)
{
    (void)state;
    struct fixture_lib lib;
    assert_int_equal(load_fixture(LIB_DEBUGLINK, &lib), 0);
    struct symbolizer *s = symbolizer_new();
    expect_function(s, &lib, &lib.fns.hidden_method, "/" LIB_DEBUGLINK,
                    "ns::Widget::hidden_method(int)");
    expect_function(s, &lib, &lib.fns.anon_static, "/" LIB_DEBUGLINK,
                    "(anonymous namespace)::anon_static_fn(int)");
    symbolizer_free(s);
    dlclose(lib.handle);
}

/* The call inside ns::Widget::hidden_method is on the line symlib_hidden_line names. */
static void expect_hidden_method_line(const char *file)
{
    struct fixture_lib lib;
    assert_int_equal(load_fixture(file, &lib), 0);
    struct symbolizer *s = symbolizer_new();
    struct sym_info info;
    assert_int_equal(symbolizer_resolve(s, (uintptr_t)lib.fns.hidden_method.ret_addr - 1, &info),
                     0);
    assert_string_equal(info.function, "ns::Widget::hidden_method(int)");
    assert_non_null(info.file);
    assert_true(ends_with(info.file, "/symlib.cpp"));
    assert_int_equal(info.line, lib.hidden_line);
    assert_int_equal(symbolizer_resolve(s, (uintptr_t)lib.fns.hidden_method.entry + 1, &info), 0);
    assert_int_equal(info.line, lib.hidden_line);
    symbolizer_free(s);
    dlclose(lib.handle);
}

static void test_file_and_line(void **state)
{
    (void)state;
    expect_hidden_method_line(LIB_PLAIN);
    expect_hidden_method_line(LIB_DEBUGLINK); /* DWARF from the debuglink file */
    expect_hidden_method_line(LIB_DWARF4);    /* directory 0: the unit's DW_AT_comp_dir */
    expect_hidden_method_line(LIB_ZLIB);      /* SHF_COMPRESSED sections */
    expect_hidden_method_line(LIB_ZGNU);      /* .zdebug_ sections */

    struct symbolizer *s = symbolizer_new();
    symbolizer_set_lines(s, 0);
    struct sym_info info;
    assert_int_equal(symbolizer_resolve(s, (uintptr_t)exe_static_fn + 1, &info), 0);
    assert_null(info.file);
    assert_int_equal(info.line, 0);
    symbolizer_free(s);
}

/* ---- files on disk, good and damaged ---------------------------------------------------- */

static unsigned char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void write_whole(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Resolves a few offsets in path with a fresh symbolizer (no stale cache): any result is fine
 * as long as it is coherent and nothing crashes or reads out of bounds (valgrind, ASan). */
static void probe_file(const char *path, const uint64_t *offsets, size_t n)
{
    struct symbolizer *s = symbolizer_new();
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        struct sym_info info;
        int rc = symbolizer_resolve_file(s, path, offsets[i], &info);
        assert_true(rc == 0 || rc == -1);
        assert_non_null(info.module);
        assert_int_equal(info.offset, offsets[i]);
        if (info.function)
            assert_true(strlen(info.function) < 100000);
        if (info.file)
            assert_true(strlen(info.file) < 100000);
        if (rc != 0)
            assert_null(info.function);
    }
    symbolizer_free(s);
}

static void test_resolve_file(void **state)
{
    (void)state;
    struct fixture_lib lib;
    assert_int_equal(load_fixture(LIB_PLAIN, &lib), 0);
    uint64_t off = (uintptr_t)lib.fns.hidden_method.ret_addr - 1 - lib.base;
    struct symbolizer *s = symbolizer_new();
    struct sym_info info;
    assert_int_equal(symbolizer_resolve_file(s, fixture_path(LIB_PLAIN), off, &info), 0);
    assert_true(ends_with(info.module, "/" LIB_PLAIN));
    assert_string_equal(info.function, "ns::Widget::hidden_method(int)");
    assert_int_equal(info.offset, off);
    assert_int_equal(symbolizer_resolve_file(s, fixture_path(LIB_STRIPPED), off, &info), 0);
    assert_null(info.function);
    assert_int_equal(symbolizer_resolve_file(s, "/nonexistent/lib.so", off, &info), -1);
    assert_null(info.function);
    assert_int_equal(symbolizer_resolve_file(s, "/", off, &info), -1);         /* a folder */
    assert_int_equal(symbolizer_resolve_file(s, "/dev/zero", off, &info), -1); /* endless */
    assert_int_equal(symbolizer_resolve_file(s, fixture_path("symlib.debug"), off, &info), 0);
    assert_string_equal(info.function, "ns::Widget::hidden_method(int)");
    symbolizer_free(s);
    dlclose(lib.handle);
}

/* ---- file:line against libdw ---------------------------------------------------------------- */

typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Line Dwfl_Line;
typedef struct Elf Elf;

/* libdwfl.h's Dwfl_Callbacks (stable since elfutils 0.130); no libdw-dev needed. */
struct oracle_callbacks {
    int (*find_elf)(Dwfl_Module *, void **, const char *, uint64_t, char **, Elf **);
    int (*find_debuginfo)(Dwfl_Module *, void **, const char *, uint64_t, const char *,
                          const char *, uint32_t, char **);
    int (*section_address)(Dwfl_Module *, void **, const char *, uint64_t, const char *, uint32_t,
                           const void *, uint64_t *);
    char **debuginfo_path;
};

/* libdw asked for file:line of a file, as the symbolizer did before it had its own reader. */
struct oracle {
    void *handle;
    Dwfl *(*begin)(const struct oracle_callbacks *);
    void (*end)(Dwfl *);
    Dwfl_Module *(*report_offline)(Dwfl *, const char *, const char *, int);
    int (*report_end)(Dwfl *, void *, void *);
    Elf *(*getelf)(Dwfl_Module *, uint64_t *);
    Dwfl_Line *(*getsrc)(Dwfl_Module *, uint64_t);
    const char *(*lineinfo)(Dwfl_Line *, uint64_t *, int *, int *, uint64_t *, uint64_t *);
    struct oracle_callbacks cb;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    uint64_t bias;
};

static const char *oracle_debug_file;

static int oracle_find_elf(Dwfl_Module *m, void **u, const char *n, uint64_t b, char **f, Elf **e)
{
    (void)m, (void)u, (void)n, (void)b, (void)f, (void)e;
    return -1;
}

static int oracle_find_debuginfo(Dwfl_Module *m, void **u, const char *n, uint64_t b, const char *f,
                                 const char *l, uint32_t c, char **out)
{
    (void)m, (void)u, (void)n, (void)b, (void)f, (void)l, (void)c;
    int fd = oracle_debug_file ? open(oracle_debug_file, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0 && out)
        *out = strdup(oracle_debug_file);
    return fd;
}

#define ORACLE_SYM(field, name)            \
    do {                                   \
        void *p_ = dlsym(o->handle, name); \
        if (!p_)                           \
            return false;                  \
        memcpy(&o->field, &p_, sizeof p_); \
    } while (0)

static bool oracle_open(struct oracle *o, const char *path, const char *debug_file)
{
    memset(o, 0, sizeof *o);
    if (!(o->handle = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL)))
        return false;
    ORACLE_SYM(begin, "dwfl_begin");
    ORACLE_SYM(end, "dwfl_end");
    ORACLE_SYM(report_offline, "dwfl_report_offline");
    ORACLE_SYM(report_end, "dwfl_report_end");
    ORACLE_SYM(getelf, "dwfl_module_getelf");
    ORACLE_SYM(getsrc, "dwfl_module_getsrc");
    ORACLE_SYM(lineinfo, "dwfl_lineinfo");
    ORACLE_SYM(cb.section_address, "dwfl_offline_section_address");
    o->cb.find_elf = oracle_find_elf;
    o->cb.find_debuginfo = oracle_find_debuginfo;
    oracle_debug_file = debug_file;
    o->dwfl = o->begin(&o->cb);
    o->mod = o->dwfl ? o->report_offline(o->dwfl, "m", path, -1) : NULL;
    return o->mod && o->report_end(o->dwfl, NULL, NULL) == 0 && o->getelf(o->mod, &o->bias);
}

static void oracle_close(struct oracle *o)
{
    if (o->dwfl)
        o->end(o->dwfl);
    if (o->handle)
        dlclose(o->handle);
}

/* The [lo, hi) of path's .text, from its section headers. */
static void text_range(const char *path, uint64_t *lo, uint64_t *hi)
{
    size_t len;
    unsigned char *elf = read_whole(path, &len);
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    Elf64_Shdr names, sh;
    memcpy(&names, elf + eh.e_shoff + eh.e_shstrndx * sizeof sh, sizeof names);
    *lo = *hi = 0;
    for (unsigned i = 1; i < eh.e_shnum; i++) {
        memcpy(&sh, elf + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (strcmp((const char *)elf + names.sh_offset + sh.sh_name, ".text") == 0) {
            *lo = sh.sh_addr;
            *hi = sh.sh_addr + sh.sh_size;
        }
    }
    free(elf);
    assert_true(*hi > *lo);
}

/* Every address of path's .text: the same file:line as libdw, or none where it has none. */
static void expect_lines_as_libdw(const char *path, const char *debug_file)
{
    struct oracle o;
    if (!oracle_open(&o, path, debug_file)) {
        oracle_close(&o);
        skip(); /* libdw is not installed: nothing to compare with */
    }
    uint64_t lo, hi;
    text_range(path, &lo, &hi);
    struct symbolizer *s = symbolizer_new();
    unsigned named = 0;
    for (uint64_t off = lo; off < hi; off++) {
        int line = 0;
        Dwfl_Line *l = o.getsrc(o.mod, o.bias + off);
        const char *file = l ? o.lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
        struct sym_info info;
        assert_int_equal(symbolizer_resolve_file(s, path, off, &info), 0);
        if (file && line > 0) {
            if (!info.file || strcmp(info.file, file) != 0 || info.line != (uint32_t)line)
                fail_msg("%s+%#llx: libdw %s:%d, symbolizer %s:%u", path, (unsigned long long)off,
                         file, line, info.file ? info.file : "-", info.line);
            named++;
        } else if (info.file) {
            fail_msg("%s+%#llx: libdw none, symbolizer %s:%u", path, (unsigned long long)off,
                     info.file, info.line);
        }
    }
    assert_true(named > (hi - lo) / 2);
    symbolizer_free(s);
    oracle_close(&o);
}

static void test_lines_as_libdw(void **state)
{
    (void)state;
    expect_lines_as_libdw(fixture_path(LIB_PLAIN), NULL);
    expect_lines_as_libdw(fixture_path(LIB_DWARF4), NULL);
    expect_lines_as_libdw(fixture_path(LIB_ZLIB), NULL);
    expect_lines_as_libdw(fixture_path(LIB_ZGNU), NULL);
    expect_lines_as_libdw(fixture_path(LIB_DEBUGLINK), fixture_path("symlib.debug"));
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    expect_lines_as_libdw(self, NULL);
}

/* ---- a generated library of many functions: the names as built, the memory bounded -------- */

#define BULK_FUNCS 120000u
#define BULK_BASE 0x10000u
#define BULK_STRIDE 64u
#define BULK_SIZE 48u
#define BULK_LONG 12345u /* this one's name is 5,000 bytes long */
#define BULK_ALIASED(i) ((i) % 11 == 0 && (i) % 7 != 0)
/* Function i runs over the start of the next one (a length the index keeps apart from its
 * 8-byte entries: no gap to the next function gives it). */
#define BULK_NESTING(i) ((i) % 29 == 0 && (i) % 7 != 0)
#define BULK_NESTING_SIZE (BULK_STRIDE + 16u)

/* Function i's name as written into .strtab (cap >= 8192). */
static void bulk_raw_name(unsigned i, char *buf, size_t cap)
{
    char fn[32];
    int n = snprintf(fn, sizeof fn, "fn%u", i);
    if (i % 17 == 0)
        snprintf(buf, cap, "_ZN4bulk%d%sEv", n, fn); /* bulk::fn<i>() */
    else if (i % 13 == 0)
        snprintf(buf, cap, "bulk_%s@@BULK_1.0", fn);
    else {
        size_t pad = i == BULK_LONG ? 5000 : i % 300; /* across the first 256-byte read */
        int k = snprintf(buf, cap, "bulk_%s_", fn);
        memset(buf + k, 'x', pad);
        buf[k + pad] = '\0';
    }
}

/* The name the symbolizer must give function i. */
static void bulk_name(unsigned i, char *buf, size_t cap)
{
    if (i % 17 == 0)
        snprintf(buf, cap, "bulk::fn%u()", i);
    else if (i % 13 == 0)
        snprintf(buf, cap, "bulk_fn%u", i);
    else
        bulk_raw_name(i, buf, cap);
}

static void put_sym(FILE *f, uint32_t name, unsigned bind, uint64_t value, uint64_t size)
{
    Elf64_Sym sym = {.st_name = name,
                     .st_info = ELF64_ST_INFO(bind, STT_FUNC),
                     .st_shndx = 1,
                     .st_value = value,
                     .st_size = size};
    assert_int_equal(fwrite(&sym, sizeof sym, 1, f), 1);
}

/* Writes the library: every seventh function without a size, every other eleventh with a local
 * alias at its address (the global one names it: a sized alias would win over an unsized
 * global), every other 29th longer than the distance to the next, the symbols in a scrambled
 * order. Returns the string
 * table's size. */
static uint64_t write_bulk_library(const char *path)
{
    static char name[8192];
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    Elf64_Ehdr eh = {.e_type = ET_DYN,
                     .e_machine = EM_X86_64,
                     .e_version = EV_CURRENT,
                     .e_ehsize = sizeof eh,
                     .e_shentsize = sizeof(Elf64_Shdr),
                     .e_shnum = 5,
                     .e_shstrndx = 4};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    assert_int_equal(fwrite(&eh, sizeof eh, 1, f), 1);
    /* .strtab first (offset sizeof eh): "\0", then each name, each alias */
    uint32_t *name_at = malloc(BULK_FUNCS * sizeof *name_at), *alias_at = calloc(BULK_FUNCS, 4);
    assert_non_null(name_at);
    assert_non_null(alias_at);
    uint64_t strsz = 1;
    fputc(0, f);
    for (unsigned i = 0; i < BULK_FUNCS; i++) {
        bulk_raw_name(i, name, sizeof name);
        name_at[i] = (uint32_t)strsz;
        strsz += fwrite(name, 1, strlen(name) + 1, f);
        if (BULK_ALIASED(i)) {
            int n = snprintf(name, sizeof name, "bulk_local_alias_%u", i);
            alias_at[i] = (uint32_t)strsz;
            strsz += fwrite(name, 1, (size_t)n + 1, f);
        }
    }
    uint64_t symoff = sizeof eh + strsz, nsyms = 1;
    Elf64_Sym null_sym = {0};
    fwrite(&null_sym, sizeof null_sym, 1, f);
    for (unsigned k = 0; k < BULK_FUNCS; k++) {
        unsigned i = (unsigned)(((uint64_t)k * 7919u) % BULK_FUNCS); /* 7919 is prime */
        uint64_t at = BULK_BASE + (uint64_t)i * BULK_STRIDE;
        put_sym(f, name_at[i], STB_GLOBAL, at,
                i % 7 == 0        ? 0
                : BULK_NESTING(i) ? BULK_NESTING_SIZE
                                  : BULK_SIZE);
        nsyms++;
        if (BULK_ALIASED(i)) {
            put_sym(f, alias_at[i], STB_LOCAL, at, BULK_SIZE);
            nsyms++;
        }
    }
    static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
    uint64_t shstroff = symoff + nsyms * sizeof(Elf64_Sym);
    fwrite(shstr, 1, sizeof shstr, f);
    Elf64_Shdr sh[5] = {
        {0},
        {.sh_name = 1,
         .sh_type = SHT_PROGBITS,
         .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
         .sh_addr = BULK_BASE,
         .sh_size = (uint64_t)BULK_FUNCS * BULK_STRIDE},
        {.sh_name = 7,
         .sh_type = SHT_SYMTAB,
         .sh_offset = symoff,
         .sh_size = nsyms * sizeof(Elf64_Sym),
         .sh_link = 3,
         .sh_entsize = sizeof(Elf64_Sym)},
        {.sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = sizeof eh, .sh_size = strsz},
        {.sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = shstroff, .sh_size = sizeof shstr},
    };
    eh.e_shoff = shstroff + sizeof shstr;
    fwrite(sh, sizeof sh, 1, f);
    fseek(f, 0, SEEK_SET);
    fwrite(&eh, sizeof eh, 1, f);
    assert_int_equal(fclose(f), 0);
    free(name_at);
    free(alias_at);
    return strsz;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

static void test_large_symbol_table(void **state)
{
    (void)state;
    char path[] = "/tmp/syncspy-test-bulk-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    uint64_t strtab_bytes = write_bulk_library(path);
    long before = rss_kib();
    struct symbolizer *s = symbolizer_new();
    static char want[8192];
    unsigned probes[] = {0, 1, 7, 11, 13, 17, 29, 77, 221, BULK_LONG, BULK_FUNCS - 1};
    for (unsigned k = 0; k < 2000 + sizeof probes / sizeof probes[0]; k++) {
        unsigned i = k < 2000 ? (unsigned)(((uint64_t)k * 104729u) % BULK_FUNCS) : probes[k - 2000];
        uint64_t at = BULK_BASE + (uint64_t)i * BULK_STRIDE;
        struct sym_info info;
        bulk_name(i, want, sizeof want);
        assert_int_equal(symbolizer_resolve_file(s, path, at + 1, &info), 0);
        assert_non_null(info.function);
        assert_string_equal(info.function, want);
        /* past the size: unnamed, unless the symbol has none (it then runs to the next one) */
        assert_int_equal(symbolizer_resolve_file(s, path, at + BULK_SIZE + 2, &info), 0);
        if (i % 7 == 0 || BULK_NESTING(i))
            assert_string_equal(info.function, want);
        else
            assert_null(info.function);
        if (BULK_NESTING(i) && i + 1 < BULK_FUNCS) { /* the next one is named by its own symbol */
            assert_int_equal(symbolizer_resolve_file(s, path, at + BULK_STRIDE + 1, &info), 0);
            bulk_name(i + 1, want, sizeof want);
            assert_string_equal(info.function, want);
        }
    }
    long grew_kib = rss_kib() - before;
    /* The index is 8 bytes a function (1 MB here) and the names looked up are kept; the string
     * table (17 MB) never is. Under TSan every byte touched also has 4 bytes of shadow: there
     * the bound is the table's size (a copy of it would be that plus its shadow). */
#if defined(__SANITIZE_THREAD__)
    const uint64_t bound = strtab_bytes;
#else
    const uint64_t bound = strtab_bytes / 4;
#endif
    if (!RUNNING_ON_VALGRIND && /* its own memory is in the process's RSS */
        (grew_kib < 0 || (uint64_t)grew_kib * 1024 > bound))
        fail_msg("RSS grew by %ld KiB for a %llu-byte string table", grew_kib,
                 (unsigned long long)strtab_bytes);
    symbolizer_free(s);
    unlink(path);
}

static void test_damaged_files(void **state)
{
    (void)state;
    struct fixture_lib lib;
    assert_int_equal(load_fixture(LIB_PLAIN, &lib), 0);
    uint64_t offsets[] = {
        (uintptr_t)lib.fns.hidden_method.ret_addr - 1 - lib.base,
        (uintptr_t)lib.fns.exported.entry + 1 - lib.base,
        lib.asm_nosize + 1 - lib.base,
        0,
        1,
        UINT64_MAX,
    };
    size_t n_offsets = sizeof offsets / sizeof offsets[0];
    dlclose(lib.handle);

    size_t len;
    unsigned char *good = read_whole(fixture_path(LIB_PLAIN), &len);
    unsigned char *bad = malloc(len + 4096);
    assert_non_null(bad);
    char path[] = "/tmp/syncspy-test-sym-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);

    Elf64_Ehdr eh;
    memcpy(&eh, good, sizeof eh);
    assert_true(eh.e_shoff > 0 && eh.e_shoff < len);

    /* Truncated: every length through the ELF header, then spread over the file, then the
     * section header table byte by byte in strides. */
    for (size_t cut = 0; cut < len; cut += cut < 80 ? 1 : cut < eh.e_shoff ? len / 64 : 7) {
        write_whole(path, good, cut);
        probe_file(path, offsets, n_offsets);
    }
    /* Corrupted: a few random bytes in the ELF header, the section headers or anywhere. */
    for (int i = 0; i < 300; i++) {
        memcpy(bad, good, len);
        int nbytes = 1 + (int)(rng() % 4);
        for (int k = 0; k < nbytes; k++) {
            size_t at;
            switch (rng() % 3) {
            case 0: at = 16 + rng() % (sizeof eh - 16); break;
            case 1: at = eh.e_shoff + rng() % (len - eh.e_shoff); break;
            default: at = rng() % len; break;
            }
            bad[at] = (rng() & 1) ? (unsigned char)rng() : 0xff;
        }
        write_whole(path, bad, len);
        probe_file(path, offsets, n_offsets);
    }
    /* Random bytes behind a valid ELF64 identification. */
    for (int i = 0; i < 100; i++) {
        size_t n = 64 + rng() % 4096;
        for (size_t k = 0; k < n; k++)
            bad[k] = (unsigned char)rng();
        memcpy(bad, good, EI_NIDENT);
        write_whole(path, bad, n);
        probe_file(path, offsets, n_offsets);
    }
    /* Other classes and byte orders are refused. */
    memcpy(bad, good, len);
    bad[EI_CLASS] = ELFCLASS32;
    write_whole(path, bad, len);
    struct symbolizer *s = symbolizer_new();
    struct sym_info info;
    assert_int_equal(symbolizer_resolve_file(s, path, offsets[0], &info), -1);
    symbolizer_free(s);
    bad[EI_CLASS] = ELFCLASS64;
    bad[EI_DATA] = ELFDATA2MSB;
    write_whole(path, bad, len);
    s = symbolizer_new();
    assert_int_equal(symbolizer_resolve_file(s, path, offsets[0], &info), -1);
    symbolizer_free(s);

    unlink(path);
    free(bad);
    free(good);
}

int main(void)
{
    const char *filter = getenv("SYM_TEST_FILTER"); /* e.g. SYM_TEST_FILTER=test_damaged_files */
    if (filter)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_library_symtab),
        cmocka_unit_test(test_main_program),
        cmocka_unit_test(test_unknown_address),
        cmocka_unit_test(test_cache_keeps_strings),
        cmocka_unit_test(test_refresh_and_stripped_library),
        cmocka_unit_test(test_debuglink_symtab),
        cmocka_unit_test(test_file_and_line),
        cmocka_unit_test(test_resolve_file),
        cmocka_unit_test(test_lines_as_libdw),
        cmocka_unit_test(test_large_symbol_table),
        cmocka_unit_test(test_damaged_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
