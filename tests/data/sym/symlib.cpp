// tests/data/sym/symlib.cpp: fixture library for test_symbolize. Holds functions the symbolizer
// must name: local (static, anonymous namespace), hidden (not in .dynsym), exported, and one
// asm function without a size. Each named function returns the return address of a call it
// makes, so the test gets a real "return address" inside it. Built -g -O1, not stripped; the
// build also makes a stripped copy and a copy whose .symtab lives in a .gnu_debuglink file.
#include <cstdint>
#include <cstring>

#define SYMLIB_API extern "C" __attribute__((visibility("default")))

static volatile int symlib_sink;

// Hidden, never inlined: the call instruction in each caller is what the test symbolizes.
extern "C" __attribute__((noinline, visibility("hidden"))) void *symlib_capture_ra(void)
{
    return __builtin_extract_return_addr(__builtin_return_address(0));
}

namespace {
__attribute__((noinline)) void *anon_static_fn(int x) { symlib_sink = x; void *r = symlib_capture_ra(); symlib_sink = x + 1; return r; }
} // namespace

static __attribute__((noinline)) void *file_static_fn(int x) { symlib_sink = x * 2; void *r = symlib_capture_ra(); symlib_sink = x; return r; }

namespace ns {
struct Widget {
    __attribute__((visibility("hidden"), noinline)) void *hidden_method(int x);
};

SYMLIB_API const int symlib_hidden_line = __LINE__ + 1;
void *Widget::hidden_method(int x) { symlib_sink = x * 3; void *r = symlib_capture_ra(); symlib_sink = x; return r; }

__attribute__((visibility("default"), noinline)) void *exported_fn(int x) { symlib_sink = x * 4; void *r = symlib_capture_ra(); symlib_sink = x; return r; }
} // namespace ns

// What the test needs: each function's entry address and a return address inside it.
struct symlib_fn {
    void *entry;
    void *ret_addr;
};
struct symlib_fns {
    symlib_fn anon_static, file_static, hidden_method, exported;
};

SYMLIB_API void symlib_asm_nosize(void);

SYMLIB_API void symlib_functions(symlib_fns *out)
{
    ns::Widget w;
    // Itanium C++ ABI: a pointer to a non-virtual member function holds the function's address.
    void *(ns::Widget::*pmf)(int) = &ns::Widget::hidden_method;
    struct { void *ptr; std::intptr_t adj; } raw;
    static_assert(sizeof raw == sizeof pmf, "Itanium pointer-to-member layout");
    std::memcpy(&raw, &pmf, sizeof raw);

    out->anon_static = {reinterpret_cast<void *>(&anon_static_fn), anon_static_fn(1)};
    out->file_static = {reinterpret_cast<void *>(&file_static_fn), file_static_fn(2)};
    out->hidden_method = {raw.ptr, w.hidden_method(3)};
    out->exported = {reinterpret_cast<void *>(&ns::exported_fn), ns::exported_fn(4)};
}

// Built with -fno-toplevel-reorder, so this lands after every function above: a FUNC symbol
// without .size, which the symbolizer may extend only up to the next symbol or section end.
asm(".text\n"
    ".globl symlib_asm_nosize\n"
    ".type symlib_asm_nosize, @function\n"
    "symlib_asm_nosize:\n"
    "    nop\n    nop\n    nop\n    nop\n    ret\n");
