/* tests/unit/test_safe_read.c: collectors/safe_read.c copies what is mapped and readable, and
 * answers false, without a fault, for memory that was unmapped or is not readable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collectors/safe_read.h"

static void test_reads_mapped_memory(void **state)
{
    (void)state;
    static const char text[] = "Scaler.hook.<locals>.pack";
    char out[sizeof text];
    assert_true(safe_read(out, (uintptr_t)text, sizeof text));
    assert_string_equal(out, text);
    assert_true(safe_read(out, (uintptr_t)text, 0));
}

static void test_unmapped_and_unreadable_memory_is_false_not_a_fault(void **state)
{
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    char *p =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 7, (size_t)page * 2);
    uint64_t v = 0;
    assert_true(safe_read(&v, (uintptr_t)p, sizeof v));
    assert_int_equal(v, 0x0707070707070707ull);
    /* a read that crosses into a page freed meanwhile (a dict's table resized elsewhere) */
    assert_int_equal(munmap(p + page, (size_t)page), 0);
    errno = 1234;
    assert_false(safe_read(&v, (uintptr_t)(p + page - 4), sizeof v));
    assert_int_equal(errno, 1234);
    assert_false(safe_read(&v, (uintptr_t)(p + page), sizeof v));
    assert_int_equal(mprotect(p, (size_t)page, PROT_NONE), 0);
    assert_false(safe_read(&v, (uintptr_t)p, sizeof v));
    assert_false(safe_read(&v, 0, sizeof v));
    assert_false(safe_read(&v, UINTPTR_MAX - 3, sizeof v));
    munmap(p, (size_t)page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_mapped_memory),
        cmocka_unit_test(test_unmapped_and_unreadable_memory_is_false_not_a_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
