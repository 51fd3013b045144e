/* tests/progs/lib/fakedw.c: built as fakedw/libdw.so.1, a "libdw" without the dwfl API, put first
 * on LD_LIBRARY_PATH by a test (issue 13): the symbolizer loads it, finds no dwfl_begin, and
 * unloads it again, from the flusher thread, while it drains. */
int fakedw_is_not_libdw(void);
int fakedw_is_not_libdw(void)
{
    return 0;
}
