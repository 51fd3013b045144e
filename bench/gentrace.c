/* bench/gentrace.c: writes a large trace.bin (output/trace_format.h) for the CLI benchmark:
 *
 *   gentrace OUT_DIR RECORDS [THREADS]
 *
 * writes OUT_DIR/trace.bin holding RECORDS event records (syncs and launches, as
 * SYNCSPY_LAUNCHES=trace writes them) of a training loop: steps of 2,000 launches and 20 syncs
 * spread over THREADS threads (default 8), 64 sync sites with 24-frame stacks (native frames
 * with modules and lines, and Python frames), 200 kernel names, a STEP record per step and the
 * SITE_TOTALS of every site every 50 steps (as the flusher writes them), then an END record.
 * Strings, frames and stacks come before the records that name them. Prints one JSON line. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "output/trace_format.h"

#define LAUNCHES_PER_STEP 2000
#define SYNCS_PER_STEP 20
#define NSITES 64
#define NFRAMES 24
#define NKERNELS 200
#define START_NS 1000000000ull

static FILE *out;
static uint64_t bytes;
static uint32_t next_string = 1;

static void put(const void *p, size_t n)
{
    if (fwrite(p, 1, n, out) != n) {
        perror("gentrace: write");
        exit(1);
    }
    bytes += n;
}

static void record(void *rec, size_t len, uint32_t type, const void *extra, size_t extra_len)
{
    static const char zeros[8];
    size_t total = len + extra_len, padded = (total + 7) & ~(size_t)7;
    struct trace_record_header *h = rec;
    h->type = type;
    h->bytes = (uint32_t)padded;
    put(rec, len);
    if (extra_len)
        put(extra, extra_len);
    put(zeros, padded - total);
}

static uint32_t string(const char *s)
{
    struct trace_string rec = {.id = next_string++, .length = (uint32_t)strlen(s)};
    record(&rec, sizeof rec, TREC_STRING, s, rec.length);
    return rec.id;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gentrace OUT_DIR RECORDS [THREADS]\n");
        return 2;
    }
    uint64_t want = strtoull(argv[2], NULL, 10);
    uint32_t threads = argc > 3 ? (uint32_t)atoi(argv[3]) : 8;
    if (threads < 1 || threads > 1000)
        threads = 8;
    if (mkdir(argv[1], 0700) != 0 && errno != EEXIST) {
        perror("gentrace: mkdir");
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], TRACE_FILE_NAME);
    out = fopen(path, "wb");
    if (!out) {
        perror("gentrace: open");
        return 1;
    }
    static char buf[1 << 20];
    setvbuf(out, buf, _IOFBF, sizeof buf);

    struct trace_file_header h = {.magic = TRACE_MAGIC, .version_major = TRACE_VERSION_MAJOR,
                                  .version_minor = TRACE_VERSION_MINOR, .header_bytes = sizeof h,
                                  .features = TRACE_FEATURE_PYTHON | TRACE_FEATURE_LAUNCHES,
                                  .pid = 4242, .rank = -1, .start_mono_ns = START_NS,
                                  .start_real_ns = 1700000000000000000ull};
    snprintf(h.schedule, sizeof h.schedule, "every step");
    put(&h, sizeof h);

    uint32_t api_launch = string("cudaLaunchKernel");
    uint32_t api_sync[2] = {string("cudaStreamSynchronize"), string("cudaMemcpy")};
    uint32_t module = string("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so");
    uint32_t pyfile = string("/home/user/project/train.py");
    uint32_t cfile = string("aten/src/ATen/native/cuda/Indexing.cu");

    uint32_t tid[1000];
    for (uint32_t t = 0; t < threads; t++) {
        char name[32];
        snprintf(name, sizeof name, t ? "pt_autograd_%u" : "python", t - 1);
        tid[t] = 1000 + t;
        struct trace_thread rec = {.tid = tid[t], .name = string(name)};
        record(&rec, sizeof rec, TREC_THREAD, NULL, 0);
    }

    uint32_t kernels[NKERNELS];
    for (int k = 0; k < NKERNELS; k++) {
        char name[96];
        snprintf(name, sizeof name, "void at::native::elementwise_kernel<128, 4, kernel_%d>(int, F)", k);
        kernels[k] = string(name);
    }

    /* 64 stacks of 24 frames: 8 native frames in libtorch_cuda, 16 Python frames; the frames
     * are shared between stacks the way call paths share their outer frames. */
    uint32_t next_frame = 1;
    uint32_t frame_ids[NSITES][NFRAMES];
    for (int s = 0; s < NSITES; s++) {
        for (int f = 0; f < NFRAMES; f++) {
            bool shared = f >= 12; /* outer frames: shared by every stack */
            if (shared && s > 0) {
                frame_ids[s][f] = frame_ids[0][f];
                continue;
            }
            char fn[128];
            struct trace_frame rec = {.id = next_frame++};
            if (f < 8) {
                snprintf(fn, sizeof fn, "at::native::op_%d_%d(at::Tensor const&, long)", s, f);
                rec.kind = TRACE_FRAME_NATIVE;
                rec.module = module;
                rec.file = cfile;
                rec.line = (uint32_t)(100 + f);
                rec.offset = 0x100000u + (uint64_t)s * 0x1000 + (uint64_t)f * 0x40;
            } else {
                snprintf(fn, sizeof fn, "Model.layer_%d.forward_%d", s, f);
                rec.kind = TRACE_FRAME_PYTHON;
                rec.file = pyfile;
                rec.line = (uint32_t)(10 + s * 30 + f);
            }
            rec.function = string(fn);
            record(&rec, sizeof rec, TREC_FRAME, NULL, 0);
            frame_ids[s][f] = rec.id;
        }
        struct trace_stack rec = {.id = (uint32_t)s + 1, .nframes = NFRAMES};
        record(&rec, sizeof rec, TREC_STACK, frame_ids[s], sizeof frame_ids[s]);
    }

    uint64_t site_count[NSITES] = {0}, site_blocked[NSITES] = {0}, site_max[NSITES] = {0};
    uint64_t t = START_NS + 1000000, events = 0, nsync = 0, nlaunch = 0, step = 0;
    const uint64_t per_step = LAUNCHES_PER_STEP + SYNCS_PER_STEP;
    uint32_t rng = 12345;
    while (events < want) {
        uint64_t step_start = t, step_syncs = 0, step_blocked = 0, step_launches = 0;
        for (uint64_t i = 0; i < per_step && events < want; i++, events++) {
            rng = rng * 1664525u + 1013904223u;
            uint32_t th = (uint32_t)(i % threads);
            if (i % (per_step / SYNCS_PER_STEP) == per_step / SYNCS_PER_STEP - 1) {
                uint32_t site = (uint32_t)((step * SYNCS_PER_STEP + step_syncs) % NSITES);
                uint64_t dur = 20000 + (rng >> 12) % 500000;
                struct trace_sync rec = {.start_ns = t, .end_ns = t + dur, .stream = 0,
                                         .bytes = site & 1 ? 4 : 0, .step = step, .tid = tid[th],
                                         .stack_id = site + 1, .dir = site & 1 ? TRACE_DIR_D2H : TRACE_DIR_NONE,
                                         .api_name = api_sync[site & 1]};
                record(&rec, sizeof rec, TREC_SYNC, NULL, 0);
                site_count[site]++;
                site_blocked[site] += dur;
                if (dur > site_max[site])
                    site_max[site] = dur;
                step_syncs++;
                step_blocked += dur;
                t += dur;
                nsync++;
            } else {
                struct trace_launch rec = {.time_ns = t, .stream = 0, .step = step, .tid = tid[th],
                                           .api_name = api_launch, .kernel_name = kernels[rng % NKERNELS]};
                record(&rec, sizeof rec, TREC_LAUNCH, NULL, 0);
                step_launches++;
                nlaunch++;
            }
            t += 3000;
        }
        struct trace_step st = {.step = step, .start_ns = step_start, .end_ns = t, .syncs = step_syncs,
                                .blocked_ns = step_blocked, .launches = step_launches, .active = 1,
                                .partial = events >= want && step_launches + step_syncs < per_step};
        record(&st, sizeof st, TREC_STEP, NULL, 0);
        step++;
        if (step % 50 == 0 || events >= want)
            for (int s = 0; s < NSITES; s++) {
                if (!site_count[s])
                    continue;
                struct trace_site_totals rec = {.site_id = (uint32_t)s + 1, .stack_id = (uint32_t)s + 1,
                                                .api_name = api_sync[s & 1], .count = site_count[s],
                                                .blocked_ns = site_blocked[s], .max_ns = site_max[s]};
                record(&rec, sizeof rec, TREC_SITE_TOTALS, NULL, 0);
            }
    }
    struct trace_end end = {.end_mono_ns = t + 1000, .unattributed_syncs = 0};
    record(&end, sizeof end, TREC_END, NULL, 0);
    if (fclose(out) != 0) {
        perror("gentrace: close");
        return 1;
    }
    printf("{\"path\": \"%s\", \"bytes\": %llu, \"records\": %llu, \"syncs\": %llu, \"launches\": %llu, \"steps\": %llu}\n",
           path, (unsigned long long)bytes, (unsigned long long)events, (unsigned long long)nsync,
           (unsigned long long)nlaunch, (unsigned long long)step);
    return 0;
}
