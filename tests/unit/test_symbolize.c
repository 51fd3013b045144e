/* tests/unit/test_symbolize.c: the symbolizer against fixtures with known answers (the C++
 * library tests/data/sym/symlib.cpp, its stripped and debuglink copies, this PIE program), and
 * against damaged ELF files, which must fail cleanly. SYM_FIXTURE_DIR comes from
 * tests/symbolize.mk. */
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

#ifndef SYM_FIXTURE_DIR
#error "SYM_FIXTURE_DIR must name the folder of the built fixtures (tests/symbolize.mk)"
#endif

#define LIB_PLAIN "libsymlib.so"
#define LIB_STRIPPED "libsymlib_stripped.so"
#define LIB_DEBUGLINK "libsymlib_dbg.so"

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
    uintptr_t base;        /* load base, from dladdr */
    uintptr_t asm_nosize;  /* exported, zero-size symbol */
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
    expect_frame(s, (uintptr_t)test_main_program + 3, "/test_symbolize", base,
                 "test_main_program");
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
    void *libdw = dlopen("libdw.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!libdw)
        libdw = dlopen("libdw.so.1", RTLD_LAZY);
    if (!libdw)
        skip(); /* file:line is optional without elfutils */
    dlclose(libdw);
    expect_hidden_method_line(LIB_PLAIN);
    expect_hidden_method_line(LIB_DEBUGLINK); /* DWARF from the debuglink file */

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
    assert_int_equal(symbolizer_resolve_file(s, "/", off, &info), -1);       /* a folder */
    assert_int_equal(symbolizer_resolve_file(s, "/dev/zero", off, &info), -1); /* endless */
    assert_int_equal(symbolizer_resolve_file(s, fixture_path("symlib.debug"), off, &info), 0);
    assert_string_equal(info.function, "ns::Widget::hidden_method(int)");
    symbolizer_free(s);
    dlclose(lib.handle);
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
        0, 1, UINT64_MAX,
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
    /* Held for the whole run so that each symbolizer's dlclose does not unload libdw (and
     * valgrind does not re-read its debug info each time): keeps the damaged-file sweep fast. */
    void *libdw = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL);
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
        cmocka_unit_test(test_damaged_files),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (libdw)
        dlclose(libdw);
    return failed;
}
