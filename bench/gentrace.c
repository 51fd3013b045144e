/* bench/gentrace.c: writes a large trace.bin (output/trace_format.h) for the CLI benchmark:
 *
 *   gentrace OUT_DIR RECORDS [THREADS]
 *
 * writes OUT_DIR/trace.bin holding RECORDS event records (syncs and launches, as
 * SYNCSPY_LAUNCHES=trace writes them) of a training loop: steps of 2,000 launches and 20 syncs
 * spread over THREADS threads (default 8), 64 sync sites with 24-frame stacks (native frames
 * with modules and lines, and Python frames), 200 kernel names, a STEP record per step and the
 * SITE_TOTALS of every site every 50 steps (as the flusher writes them), then an END record.
 * Strings, frames and stacks come before the records that name them. Prints one JSON line.
 *
 *   gentrace --sites N SEED OUT_DIR
 *
 * writes a trace of N sync sites for the CLI's scale benchmark (`syncspy diff` of 10^6 sites):
 * each site one Python frame (a line of one of 1,000 files) under 4 shared outer frames, 100
 * steps, and the sites' totals; no per-event records. SEED varies the counts and moves 1 % of
 * the sites to other lines, so two seeds make runs whose diff has every kind of row. */
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

static void header(uint64_t features)
{
    struct trace_file_header h = {.magic = TRACE_MAGIC,
                                  .version_major = TRACE_VERSION_MAJOR,
                                  .version_minor = TRACE_VERSION_MINOR,
                                  .header_bytes = sizeof h,
                                  .features = features,
                                  .pid = 4242,
                                  .rank = -1,
                                  .start_mono_ns = START_NS,
                                  .start_real_ns = 1700000000000000000ull};
    snprintf(h.schedule, sizeof h.schedule, "every step");
    put(&h, sizeof h);
}

static FILE *open_trace(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        perror("gentrace: mkdir");
        exit(1);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, TRACE_FILE_NAME);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror("gentrace: open");
        exit(1);
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    return f;
}

#define SITES_STEPS 100
#define SITES_FILES 1000
#define SITES_OUTER 4

static int gen_sites(uint64_t nsites, uint32_t seed, const char *dir)
{
    out = open_trace(dir);
    header(TRACE_FEATURE_PYTHON);
    uint32_t api = string("cudaStreamSynchronize");
    static uint32_t files[SITES_FILES];
    for (int f = 0; f < SITES_FILES; f++) {
        char name[96];
        snprintf(name, sizeof name, "/home/user/project/model/layer_%d.py", f);
        files[f] = string(name);
    }
    uint32_t next_frame = 1, outer[SITES_OUTER];
    for (int f = 0; f < SITES_OUTER; f++) {
        char fn[64];
        snprintf(fn, sizeof fn, "train.outer_%d", f);
        struct trace_frame rec = {.id = next_frame++,
                                  .kind = TRACE_FRAME_PYTHON,
                                  .file = files[0],
                                  .line = (uint32_t)(900000 + f),
                                  .function = string(fn)};
        record(&rec, sizeof rec, TREC_FRAME, NULL, 0);
        outer[f] = rec.id;
    }
    uint32_t fn = string("Model.forward");
    uint64_t total = 0, blocked = 0;
    uint32_t rng = 12345u + seed * 7919u;
    for (uint64_t s = 0; s < nsites; s++) {
        rng = rng * 1664525u + 1013904223u;
        uint64_t line = s / SITES_FILES + 1;
        if ((rng >> 8) % 100 == 0) /* 1 % of the sites: on another line in this run */
            line += 1000000 + seed;
        struct trace_frame rec = {.id = next_frame++,
                                  .kind = TRACE_FRAME_PYTHON,
                                  .file = files[s % SITES_FILES],
                                  .line = (uint32_t)line,
                                  .function = fn};
        record(&rec, sizeof rec, TREC_FRAME, NULL, 0);
        uint32_t ids[1 + SITES_OUTER] = {rec.id, outer[0], outer[1], outer[2], outer[3]};
        struct trace_stack st = {.id = (uint32_t)s + 1, .nframes = 1 + SITES_OUTER};
        record(&st, sizeof st, TREC_STACK, ids, sizeof ids);
        uint64_t count = 1 + (rng >> 16) % 400, ns = count * (20000 + (rng >> 20) % 1000);
        struct trace_site_totals t = {.site_id = (uint32_t)s + 1,
                                      .stack_id = (uint32_t)s + 1,
                                      .api_name = api,
                                      .count = count,
                                      .blocked_ns = ns,
                                      .max_ns = ns / count};
        record(&t, sizeof t, TREC_SITE_TOTALS, NULL, 0);
        total += count;
        blocked += ns;
    }
    uint64_t t = START_NS + 1000000, per = (blocked / SITES_STEPS) * 2 + 1000;
    for (uint64_t i = 0; i < SITES_STEPS; i++) { /* the syncs spread over the steps exactly */
        uint64_t n = total / SITES_STEPS + (i < total % SITES_STEPS),
                 b = blocked / SITES_STEPS + (i < blocked % SITES_STEPS);
        struct trace_step st = {
            .step = i, .start_ns = t, .end_ns = t + per, .syncs = n, .blocked_ns = b, .active = 1};
        record(&st, sizeof st, TREC_STEP, NULL, 0);
        t += per;
    }
    struct trace_end end = {.end_mono_ns = t + 1000};
    record(&end, sizeof end, TREC_END, NULL, 0);
    if (fclose(out) != 0) {
        perror("gentrace: close");
        return 1;
    }
    printf("{\"path\": \"%s\", \"bytes\": %llu, \"sites\": %llu, \"syncs\": %llu, \"steps\": %d}\n",
           dir, (unsigned long long)bytes, (unsigned long long)nsites, (unsigned long long)total,
           SITES_STEPS);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--sites") == 0)
        return gen_sites(strtoull(argv[2], NULL, 10), (uint32_t)atoi(argv[3]), argv[4]);
    if (argc < 3) {
        fprintf(stderr,
                "usage: gentrace OUT_DIR RECORDS [THREADS] | gentrace --sites N SEED OUT_DIR\n");
        return 2;
    }
    uint64_t want = strtoull(argv[2], NULL, 10);
    uint32_t threads = argc > 3 ? (uint32_t)atoi(argv[3]) : 8;
    if (threads < 1 || threads > 1000)
        threads = 8;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], TRACE_FILE_NAME);
    out = open_trace(argv[1]);
    header(TRACE_FEATURE_PYTHON | TRACE_FEATURE_LAUNCHES);

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
        snprintf(name, sizeof name,
                 "void at::native::elementwise_kernel<128, 4, kernel_%d>(int, F)", k);
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
                struct trace_sync rec = {.start_ns = t,
                                         .end_ns = t + dur,
                                         .stream = 0,
                                         .bytes = site & 1 ? 4 : 0,
                                         .step = step,
                                         .tid = tid[th],
                                         .stack_id = site + 1,
                                         .dir = site & 1 ? TRACE_DIR_D2H : TRACE_DIR_NONE,
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
                struct trace_launch rec = {.time_ns = t,
                                           .stream = 0,
                                           .step = step,
                                           .tid = tid[th],
                                           .api_name = api_launch,
                                           .kernel_name = kernels[rng % NKERNELS]};
                record(&rec, sizeof rec, TREC_LAUNCH, NULL, 0);
                step_launches++;
                nlaunch++;
            }
            t += 3000;
        }
        struct trace_step st = {.step = step,
                                .start_ns = step_start,
                                .end_ns = t,
                                .syncs = step_syncs,
                                .blocked_ns = step_blocked,
                                .launches = step_launches,
                                .active = 1,
                                .partial = events >= want && step_launches + step_syncs < per_step};
        record(&st, sizeof st, TREC_STEP, NULL, 0);
        step++;
        if (step % 50 == 0 || events >= want)
            for (int s = 0; s < NSITES; s++) {
                if (!site_count[s])
                    continue;
                struct trace_site_totals rec = {.site_id = (uint32_t)s + 1,
                                                .stack_id = (uint32_t)s + 1,
                                                .api_name = api_sync[s & 1],
                                                .count = site_count[s],
                                                .blocked_ns = site_blocked[s],
                                                .max_ns = site_max[s]};
                record(&rec, sizeof rec, TREC_SITE_TOTALS, NULL, 0);
            }
    }
    struct trace_end end = {.end_mono_ns = t + 1000, .unattributed_syncs = 0};
    record(&end, sizeof end, TREC_END, NULL, 0);
    if (fclose(out) != 0) {
        perror("gentrace: close");
        return 1;
    }
    printf(
        "{\"path\": \"%s\", \"bytes\": %llu, \"records\": %llu, \"syncs\": %llu, \"launches\": %llu, \"steps\": %llu}\n",
        path, (unsigned long long)bytes, (unsigned long long)events, (unsigned long long)nsync,
        (unsigned long long)nlaunch, (unsigned long long)step);
    return 0;
}
