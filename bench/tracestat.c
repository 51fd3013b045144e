/* bench/tracestat.c: counts the records of a trace.bin by type and prints the last DROPS
 * record, as JSON (for `make bench`'s flusher check; a reader independent of output/). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/trace_format.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tracestat TRACE.BIN\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || (size_t)sb.st_size < sizeof(struct trace_file_header)) {
        fprintf(stderr, "tracestat: cannot read %s\n", argv[1]);
        return 1;
    }
    size_t size = (size_t)sb.st_size;
    const unsigned char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return 1;
    madvise((void *)p, size, MADV_SEQUENTIAL);
    const struct trace_file_header *h = (const void *)p;
    uint64_t counts[16] = {0}, other = 0;
    struct trace_drops drops = {0};
    size_t off = h->header_bytes, records = 0;
    while (off + sizeof(struct trace_record_header) <= size) {
        struct trace_record_header rh;
        memcpy(&rh, p + off, sizeof rh);
        if (rh.bytes < 8 || rh.bytes % 8 || off + rh.bytes > size)
            break;
        if (rh.type < 16)
            counts[rh.type]++;
        else
            other++;
        if (rh.type == TREC_DROPS && rh.bytes >= sizeof drops)
            memcpy(&drops, p + off, sizeof drops);
        off += rh.bytes;
        records++;
    }
    printf(
        "{\"bytes\": %zu, \"records\": %zu, \"strings\": %llu, \"frames\": %llu, \"stacks\": %llu, "
        "\"syncs\": %llu, \"launches\": %llu, \"steps\": %llu, \"site_totals\": %llu, "
        "\"threads\": %llu, \"drops_records\": %llu, \"end\": %llu, \"unknown\": %llu, "
        "\"syncs_dropped\": %llu, \"launches_dropped\": %llu, \"unread_bytes\": %zu}\n",
        size, records, (unsigned long long)counts[TREC_STRING],
        (unsigned long long)counts[TREC_FRAME], (unsigned long long)counts[TREC_STACK],
        (unsigned long long)counts[TREC_SYNC], (unsigned long long)counts[TREC_LAUNCH],
        (unsigned long long)counts[TREC_STEP], (unsigned long long)counts[TREC_SITE_TOTALS],
        (unsigned long long)counts[TREC_THREAD], (unsigned long long)counts[TREC_DROPS],
        (unsigned long long)counts[TREC_END], (unsigned long long)other,
        (unsigned long long)drops.syncs_dropped, (unsigned long long)drops.launches_dropped,
        size - off);
    return 0;
}
