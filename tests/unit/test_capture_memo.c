/* Unit tests: a thread's capture memo (agent/record/capture_memo.h) answers only for a capture
 * equal to one it was given, in every part of the key, keeps two a set, and ignores stacks
 * too deep for an entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/record/capture_memo.h"

#define DEPTH 40
#define NPY 12

static struct capture_memo memo;
static uintptr_t native[DEPTH];
static struct py_raw_frame py[NPY];
static char sites[8]; /* the memo keeps site pointers and never reads through them */
#define SITE(k) ((struct site *)&sites[k])

static int setup(void **state)
{
    (void)state;
    memset(&memo, 0, sizeof memo);
    for (int i = 0; i < DEPTH; i++)
        native[i] = 0x7f0000001000u + (uintptr_t)i * 0x40;
    for (int i = 0; i < NPY; i++)
        py[i] = (struct py_raw_frame){.code = 0x5500000000u + (uintptr_t)i * 0x100,
                                      .lasti = (uint32_t)(10 + i),
                                      .group_end = i % 3 == 2,
                                      .frame = 0x7ffd00000000u + (uintptr_t)i * 0x50};
    return 0;
}

static struct site *find(uint32_t api, uint32_t gen)
{
    return capture_memo_find(&memo, api, gen, native, DEPTH, py, NPY);
}

static void test_empty_finds_nothing(void **state)
{
    (void)state;
    assert_null(find(1, 0));
}

static void test_same_capture_finds_its_site(void **state)
{
    (void)state;
    capture_memo_put(&memo, 1, 0, native, DEPTH, py, NPY, SITE(0));
    assert_ptr_equal(find(1, 0), SITE(0));
    /* the frames' own addresses are not the key: the same lines run again in new frames */
    for (int i = 0; i < NPY; i++)
        py[i].frame += 0x1000;
    assert_ptr_equal(find(1, 0), SITE(0));
}

static void test_every_part_of_the_key_counts(void **state)
{
    (void)state;
    capture_memo_put(&memo, 1, 0, native, DEPTH, py, NPY, SITE(0));
    assert_null(find(2, 0)); /* another API */
    assert_null(find(1, 1)); /* an evaluation-loop range learnt since */
    assert_null(capture_memo_find(&memo, 1, 0, native, DEPTH - 1, py, NPY));
    assert_null(capture_memo_find(&memo, 1, 0, native, DEPTH, py, NPY - 1));
    const int at[] = {0, DEPTH / 2, DEPTH - 1};
    for (size_t k = 0; k < 3; k++) {
        native[at[k]] += 4;
        assert_null(find(1, 0));
        native[at[k]] -= 4;
    }
    const int pat[] = {0, NPY - 1};
    for (size_t k = 0; k < 2; k++) {
        py[pat[k]].lasti++; /* another line of the same function */
        assert_null(find(1, 0));
        py[pat[k]].lasti--;
        py[pat[k]].code += 8; /* another function */
        assert_null(find(1, 0));
        py[pat[k]].code -= 8;
        py[pat[k]].group_end = !py[pat[k]].group_end; /* another evaluation call's grouping */
        assert_null(find(1, 0));
        py[pat[k]].group_end = !py[pat[k]].group_end;
    }
    assert_ptr_equal(find(1, 0), SITE(0));
}

/* Captures that differ in the API only, and the set each one falls in. */
static uint32_t set_of(uint32_t api)
{
    return capture_memo_set_of(api, native, DEPTH, py, NPY);
}

static void test_two_of_a_set_stay_a_third_replaces_the_older(void **state)
{
    (void)state;
    uint32_t a = 0, b = 1, c;
    while (set_of(b) != set_of(a))
        b++;
    c = b + 1;
    while (set_of(c) != set_of(a))
        c++;
    capture_memo_put(&memo, a, 0, native, DEPTH, py, NPY, SITE(0));
    capture_memo_put(&memo, b, 0, native, DEPTH, py, NPY, SITE(1));
    assert_ptr_equal(find(a, 0), SITE(0));
    assert_ptr_equal(find(b, 0), SITE(1));
    capture_memo_put(&memo, c, 0, native, DEPTH, py, NPY, SITE(2));
    assert_null(find(a, 0));
    assert_ptr_equal(find(b, 0), SITE(1));
    assert_ptr_equal(find(c, 0), SITE(2));
}

static void test_other_sets_never_replace(void **state)
{
    (void)state;
    capture_memo_put(&memo, 0, 0, native, DEPTH, py, NPY, SITE(0));
    int others = 0;
    for (uint32_t api = 1; api < 200; api++) {
        if (set_of(api) == set_of(0))
            continue;
        capture_memo_put(&memo, api, 0, native, DEPTH, py, NPY, SITE(1 + api % 7));
        others++;
    }
    assert_true(others > 100);
    assert_ptr_equal(find(0, 0), SITE(0));
    /* sixteen captures spread over the sets are all kept: eight sync lines of a loop, twice */
    memset(&memo, 0, sizeof memo);
    uint32_t in_set[CAPTURE_MEMO_SETS] = {0};
    uint32_t kept[2 * CAPTURE_MEMO_SETS], n = 0;
    for (uint32_t api = 0; n < 2 * CAPTURE_MEMO_SETS && api < 10000; api++)
        if (in_set[set_of(api)] < CAPTURE_MEMO_WAYS) {
            in_set[set_of(api)]++;
            kept[n++] = api;
            capture_memo_put(&memo, api, 0, native, DEPTH, py, NPY, SITE(api % 8));
        }
    assert_int_equal(n, 2 * CAPTURE_MEMO_SETS);
    for (uint32_t i = 0; i < n; i++)
        assert_ptr_equal(find(kept[i], 0), SITE(kept[i] % 8));
}

static void test_too_deep_is_not_kept(void **state)
{
    (void)state;
    static uintptr_t deep[CAPTURE_MEMO_NATIVE + 1];
    static struct py_raw_frame many[CAPTURE_MEMO_PY + 1];
    capture_memo_put(&memo, 1, 0, deep, CAPTURE_MEMO_NATIVE + 1, py, NPY, SITE(0));
    assert_null(capture_memo_find(&memo, 1, 0, deep, CAPTURE_MEMO_NATIVE + 1, py, NPY));
    capture_memo_put(&memo, 1, 0, native, DEPTH, many, CAPTURE_MEMO_PY + 1, SITE(1));
    assert_null(capture_memo_find(&memo, 1, 0, native, DEPTH, many, CAPTURE_MEMO_PY + 1));
    capture_memo_put(&memo, 1, 0, deep, CAPTURE_MEMO_NATIVE, many, CAPTURE_MEMO_PY, SITE(2));
    assert_ptr_equal(
        capture_memo_find(&memo, 1, 0, deep, CAPTURE_MEMO_NATIVE, many, CAPTURE_MEMO_PY), SITE(2));
    capture_memo_put(&memo, 1, 0, native, DEPTH, py, NPY, NULL); /* no site: nothing kept */
    assert_null(find(1, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_empty_finds_nothing, setup),
        cmocka_unit_test_setup(test_same_capture_finds_its_site, setup),
        cmocka_unit_test_setup(test_every_part_of_the_key_counts, setup),
        cmocka_unit_test_setup(test_two_of_a_set_stay_a_third_replaces_the_older, setup),
        cmocka_unit_test_setup(test_other_sets_never_replace, setup),
        cmocka_unit_test_setup(test_too_deep_is_not_kept, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
