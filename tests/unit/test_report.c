/* tests/unit/test_report.c: the human report rendered from hand-built processes: group order,
 * per-step numbers, humanized times, user-frame grouping past runtime frames, hints with their
 * evidence, the top limit, and the merged table of several processes. The rules themselves
 * (user frame, hint table) are tested in test_hints.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/record/autograd.h"
#include "output/backward.h"
#include "output/fd_writer.h"
#include "output/report.h"

/* Renders into a memfd and returns the text (caller frees). */
static char *render_colour(const struct rep_process *procs, size_t n, int top, const char *summary,
                           bool colour)
{
    int fd = memfd_create("report", 0);
    assert_true(fd >= 0);
    struct report_opts opts = {.top = top, .summary_path = summary, .color = colour};
    assert_int_equal(report_render_text(procs, n, &opts, fd), 0);
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(pread(fd, text, (size_t)len, 0), len);
    close(fd);
    if (getenv("SHOW_REPORT"))
        fputs(text, stderr);
    return text;
}

static char *render(const struct rep_process *procs, size_t n, int top, const char *summary)
{
    return render_colour(procs, n, top, summary, false);
}

/* a before b, both present */
static void assert_order(const char *text, const char *a, const char *b)
{
    const char *pa = strstr(text, a), *pb = strstr(text, b);
    if (!pa || !pb || pa >= pb)
        fail_msg("expected \"%s\" before \"%s\" in:\n%s", a, b, text);
}

static void assert_has(const char *text, const char *s)
{
    if (!strstr(text, s))
        fail_msg("expected \"%s\" in:\n%s", s, text);
}

/* s in text once runs of spaces are squeezed to one (table rows, without their widths) */
static void assert_row(const char *text, const char *s)
{
    char *sq = malloc(strlen(text) + 1), *o = sq;
    for (const char *p = text; *p; p++)
        if (!(*p == ' ' && o > sq && o[-1] == ' '))
            *o++ = *p;
    *o = '\0';
    if (!strstr(sq, s))
        fail_msg("expected row \"%s\" in:\n%s", s, text);
    free(sq);
}

static void assert_lacks(const char *text, const char *s)
{
    if (strstr(text, s))
        fail_msg("did not expect \"%s\" in:\n%s", s, text);
}

#include "report_fixtures.h"

#define NFR(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

static void test_single_process(void **state)
{
    (void)state;
    struct rep_process p = make_proc(4242, -1);
    char *t = render(&p, 1, 10, "./syncspy-out/pid4242/summary.json");
    assert_has(t, "syncspy: pid 4242: 24 step marks (schedule: wait=1,warmup=1,active=3,repeat=4)\n"
                  "  20 steps counted (the schedule records 20 of 25)\n");
    /* 826 ms / 20 = 41.3 ms; 461.4 ms / 20 = 23.1 ms; 76/20 = 3.80; 4200/20 = 210 */
    assert_has(
        t,
        "step 41.3 ms median (mean 41.3 ms, sd 0 ns) | 3.80 syncs/step | blocked 23.1 ms/step (55.9%) | 210 "
        "launches/step");
    /* heaviest group first: ignore_background (15.0 ms/step), then loss_fn (8.07 ms/step) */
    assert_order(t, "MaskedLoss.ignore_background", "loss_fn");
    assert_row(t, " 1 15.0 ms 36.3% 1.00 15.0 ms 20.0 ms cudaStreamSynchronize\n");
    /* loss_fn: 161.4 ms over 50 syncs: 8.07 ms/step, 2.50 syncs/step, mean 3.23 ms */
    assert_row(t, " 2 8.07 ms 19.5% 2.50 3.23 ms 6.10 ms cudaStreamSynchronize x40, "
                  "cudaMemcpy x10\n");
    /* grouped at the user frame, runtime frames summarized, params stripped */
    assert_has(t, "   at loss_fn ");
    assert_lacks(t, "loss_fn(float*");
    assert_has(t, "train.cpp:42");
    assert_has(t, "(train)\n");
    assert_has(t, "compute_loss");
    /* python frames: stdlib/torch frames skipped, file:line and [py] */
    assert_lacks(t, "via ");
    assert_has(t, "   at MaskedLoss.ignore_background  ");
    assert_has(t, "/home/u/proj/train.py:61");
    assert_has(t, "[py]");
    assert_lacks(t, "module.py:1501");
    /* hints and their evidence */
    assert_has(t, "hint: torch.nonzero syncs to size its output");
    assert_has(
        t,
        "/home/u/proj/train.py:61   [py]  op: torch.nonzero\n"); /* the operator beside the line */
    assert_has(t, "[matched: aten::nonzero]");
    assert_has(t, "hint: .item()");
    assert_has(t, "[matched: aten::_local_scalar_dense]");
    assert_has(t, "hint: cudaFree synchronizes the device");
    assert_has(t, "[matched: cudaFree]");
    /* unnamed frames: ?? with module+offset */
    assert_has(t, "(libfoo.so+0xabc)");
    assert_has(t, "200 ns");
    /* cudaFree group: 812 ns blocked over 20 steps = 40.6 ns/step */
    assert_has(t, "41 ns");
    assert_has(t, "syncspy: summary in ./syncspy-out/pid4242/summary.json\n");
    assert_lacks(t, "more site");
    free(t);
}

/* How the header says which optimizer's steps the steps are. */
static void test_optimizers_header(void **state)
{
    (void)state;
    struct rep_process p = make_proc(4242, -1);
    p.schedule = NULL;
    p.step_source = "optimizer.step()";
    p.optimizers = p.optimizers_max = 1;
    char *t = render(&p, 1, 10, NULL);
    assert_has(t, "syncspy: pid 4242: 24 optimizer steps\n");
    free(t);
    p.optimizers = p.optimizers_max = 2; /* a GAN's D and G in every step */
    t = render(&p, 1, 10, NULL);
    assert_has(t, "syncspy: pid 4242: 24 training steps (2 optimizers step in each: a step ends at "
                  "the last one's step())\n");
    free(t);
    p.optimizers = 1; /* B in some steps only, beside A */
    t = render(&p, 1, 10, NULL);
    assert_has(t, "syncspy: pid 4242: 24 training steps (up to 2 optimizers step in one: a step "
                  "ends at each step() of the first one)\n");
    free(t);
}

/* The step still open at exit (teardown after the last mark) does not dilute per-step rates. */
static void test_partial_step_left_out_of_rates(void **state)
{
    (void)state;
    static const struct rep_step st[] = {
        {0, 10000000, 2, 4000000, 100, false},
        {1, 10000000, 2, 4000000, 100, false},
        {2, 1000000, 1, 500000, 0, true},
    };
    static const struct rep_frame fr[] = {
        {"loss_fn", "/home/u/train", "train.cpp", 42, 0x10, false}};
    static const struct rep_site site[] = {{"cudaMemcpy", 5, 8500000, 2000000, 1, fr,
                                            .split = {.partial_count = 1, .partial_ns = 500000}}};
    struct rep_process p = {.pid = 5,
                            .rank = -1,
                            .schedule = "every step",
                            .steps_seen = 3,
                            .steps = st,
                            .nsteps = 3,
                            .sites = site,
                            .nsites = 1,
                            .active_steps = 3,
                            .syncs = 5,
                            .blocked_ns = 8500000,
                            .launches = 200,
                            .wall_ns = 21000000};
    char *t = render(&p, 1, 10, NULL);
    assert_has(t, "syncspy: pid 5: 2 step marks\n"
                  "  2 steps counted, the time after the last is shown apart\n");
    /* 20 ms / 2 complete steps; 4 syncs / 2; 8 ms blocked / 2; 200 launches / 2 */
    assert_has(
        t,
        "step 10.0 ms median (mean 10.0 ms, sd 0 ns) | 2.00 syncs/step | blocked 4.00 ms/step (40.0%) | 100 launches/step\n");
    /* the time after the last step: its own line, with its heaviest line */
    assert_has(t, "  after the last step (not in the rates): 1.00 ms, 1 sync, blocked 500 us\n"
                  "    1 x cudaMemcpy, 500 us, at loss_fn  train.cpp:42\n");
    /* the site's 5 syncs less the one of the partial step, over 2 steps: the header's figure */
    assert_row(t, " 1 4.00 ms 40.0% 2.00 2.00 ms 2.00 ms cudaMemcpy\n");
    free(t);
    /* a run with no mark at all: its only step is partial and is the basis */
    static const struct rep_step only[] = {{0, 1000000, 1, 500000, 3, true}};
    struct rep_process q = p;
    q.steps = only;
    q.nsteps = 1;
    q.active_steps = 1;
    q.syncs = 1;
    q.blocked_ns = 500000;
    q.launches = 3;
    q.wall_ns = 1000000;
    static const struct rep_site one[] = {{"cudaMemcpy", 1, 500000, 500000, 1, fr}};
    q.sites = one;
    q.steps_seen = 1;
    t = render(&q, 1, 10, NULL);
    assert_has(t, "syncspy: pid 5: no step found: whole-run totals\n"
                  "  wall 1.00 ms | 1 sync | blocked 500 us (50.0%) | 3 launches\n");
    assert_has(t, "no step mark came");
    assert_lacks(t, "after the last step");
    free(t);
}

static struct rep_process backward_proc(const struct rep_site *sites_, size_t n)
{
    static const struct rep_step st[] = {{1, 10000000, 2, 4000000, 100, false},
                                         {2, 10000000, 2, 4000000, 100, false}};
    return (struct rep_process){.pid = 9,
                                .rank = -1,
                                .schedule = "every step",
                                .steps_seen = 8,
                                .steps = st,
                                .nsteps = 2,
                                .sites = sites_,
                                .nsites = n,
                                .active_steps = 8,
                                .syncs = 16,
                                .blocked_ns = 16000000,
                                .launches = 800,
                                .wall_ns = 80000000};
}

/* A backward-pass sync is grouped by the forward line that created its node, apart from that
 * line's own sync; the same sync in the steps without attribution joins it; the node, the
 * thread and the backward() caller are named; the hint is the forward op's. */
static void test_backward_group(void **state)
{
    (void)state;
    static const struct rep_site s[] = {
        {"cudaStreamSynchronize", 2, 2000000, 1000000, NFR(backward_frames), backward_frames},
        {"cudaStreamSynchronize", 6, 6000000, 1000000, NFR(backward_unseen_frames),
         backward_unseen_frames},
        {"cudaStreamSynchronize", 8, 4000000, 500000, NFR(mask_forward_frames),
         mask_forward_frames},
    };
    struct rep_process p = backward_proc(s, 3);
    char *t = render(&p, 1, 10, NULL);
    /* 8 syncs of the backward group over 8 steps, 8 ms: first; the forward line's own: second */
    assert_row(
        t,
        " 1 1.00 ms 10.0% 1.00 1.00 ms 1.00 ms cudaStreamSynchronize\n"
        " backward of MaskedLoss.cross_entropy /home/u/proj/train.py:22 [py] op: backward of x[bool_mask]\n"
        " MaskedLoss.forward /home/u/proj/train.py:40 [py]\n"
        " main /home/u/proj/train.py:90 [py]\n"
        " node IndexBackward0, in autograd's thread; backward() called at main /home/u/proj/train.py:93\n"
        " in at::native::nonzero_cuda (libtorch_cuda.so)\n");
    assert_has(t, "hint: the backward of a boolean-mask index");
    assert_has(t, "[matched: IndexBackward0]");
    assert_row(t, " 2 500 us 5.0% 1.00 500 us 500 us cudaStreamSynchronize\n");
    assert_row(t, " at MaskedLoss.cross_entropy /home/u/proj/train.py:22 [py] op: x[bool_mask]\n");
    assert_has(t, "hint: x[bool_mask] syncs");
    /* torch's own Python frame of the forward stack is not shown; the caller's section is not
     * a frame list of its own */
    assert_lacks(t, "_tensor.py:50");
    assert_lacks(t, "Tensor.backward");
    assert_lacks(t, "   3 ");
    free(t);
}

/* Two ops at one line: the row names the heaviest beside the line and lists the other with its
 * own rate and hint (issue 35 item 1). */
static void test_every_op_of_a_line(void **state)
{
    (void)state;
    static const struct rep_frame item[] = {
        {"at::_ops::_local_scalar_dense::call(at::Tensor const&)", TORCH, "", 0, 0x10, false},
        {"torch::autograd::THPVariable_item(_object*, _object*)", TORCH, "", 0, 0x20, false},
        {"main", "", "/home/u/proj/train.py", 12, 0, true},
    };
    static const struct rep_frame cond[] = {
        {"at::_ops::_local_scalar_dense::call(at::Tensor const&)", TORCH, "", 0, 0x10, false},
        {"torch::autograd::THPVariable_is_nonzero(_object*, _object*)", TORCH, "", 0, 0x30, false},
        {"main", "", "/home/u/proj/train.py", 12, 0, true},
    };
    static const struct rep_site s[] = {
        {"cudaStreamSynchronize", 8, 4000000, 500000, NFR(item), item},
        {"cudaStreamSynchronize", 16, 2000000, 500000, NFR(cond), cond}};
    struct rep_process p = backward_proc(s, 2);
    char *t = render(&p, 1, 10, NULL);
    assert_row(t, " at main /home/u/proj/train.py:12 [py] op: Tensor.item\n");
    assert_has(t, "      also op: Tensor.__bool__  2.00 syncs/step, 250 us/step\n"
                  "        hint: if t: / bool(t) / assert t reads a CUDA tensor on the host");
    assert_lacks(t, "also op: Tensor.item");
    free(t);
}

/* A sync a training framework made (Lightning, Hugging Face's Trainer): the row is the user's
 * call of it, and the framework's own line that made the wait is shown under it; torch's own
 * frames are never such a line (issue 35 item 2). */
static void test_framework_line(void **state)
{
    (void)state;
    static const struct rep_frame f[] = {
        {"at::_ops::_local_scalar_dense::call(at::Tensor const&)", TORCH, "", 0, 0x10, false},
        {"torch::autograd::THPVariable_item(_object*, _object*)", TORCH, "", 0, 0x20, false},
        {"Trainer._inner_training_loop", "",
         "/venv/lib/python3.11/site-packages/transformers/trainer.py", 2480, 0, true},
        {"Trainer.train", "", "/venv/lib/python3.11/site-packages/transformers/trainer.py", 2123, 0,
         true},
        {"main", "", "/home/u/proj/train.py", 88, 0, true},
    };
    static const struct rep_site s[] = {{"cudaStreamSynchronize", 8, 4000000, 500000, NFR(f), f}};
    struct rep_process p = backward_proc(s, 1);
    char *t = render(&p, 1, 10, NULL);
    assert_row(t, " at main /home/u/proj/train.py:88 [py] op: Tensor.item\n");
    assert_has(
        t,
        "      in the framework: Trainer._inner_training_loop  .../transformers/trainer.py:2480\n");
    free(t);
    static const struct rep_frame g[] = {
        {"at::_ops::nonzero::call(at::Tensor const&)", TORCH, "", 0, 0x9999, false},
        {"Tensor.__getitem__", "", "/venv/lib/python3.11/site-packages/torch/_tensor.py", 50, 0,
         true},
        {"main", "", "/home/u/proj/train.py", 90, 0, true},
    };
    static const struct rep_site s2[] = {{"cudaStreamSynchronize", 8, 4000000, 500000, NFR(g), g}};
    p = backward_proc(s2, 1);
    t = render(&p, 1, 10, NULL);
    assert_lacks(t, "in the framework");
    free(t);
}

/* A sync in code torch.compile generated whose user line is not known (its graph was not found):
 * the row is the compiled function's call, never the generated code, and says so. */
static void test_unnamed_generated_code(void **state)
{
    (void)state;
    static const struct rep_frame f[] = {
        {"at::_ops::nonzero::call(at::Tensor const&)", TORCH, "", 0, 0x9999, false},
        {"forward", "", "<eval_with_key>.5", 14, 0, true},
        {"GraphModule._call_impl", "",
         "/venv/lib/python3.11/site-packages/torch/fx/graph_module.py", 800, 0, true},
        {"Net.forward", "", "/home/u/proj/train.py", 54, 0, true},
        {"<module>", "", "/home/u/proj/train.py", 90, 0, true},
    };
    static const struct rep_site s[] = {{"cudaStreamSynchronize", 8, 4000000, 500000, NFR(f), f}};
    struct rep_process p = backward_proc(s, 1);
    char *t = render(&p, 1, 10, NULL);
    assert_row(t, " at Net.forward /home/u/proj/train.py:54 [py] op: torch.nonzero\n");
    assert_has(
        t,
        "      in torch.compile's generated code (<eval_with_key>.5:14) whose user line is not known: "
        "the line above called the compiled code\n");
    assert_lacks(t, "at forward");
    free(t);
    /* named (module: the code it came from): no such line */
    static const struct rep_frame g[] = {
        {"at::_ops::nonzero::call(at::Tensor const&)", TORCH, "", 0, 0x9999, false},
        {"masked_loss", "<eval_with_key>.5", "/home/u/proj/train.py", 45, 0, true},
        {"Net.forward", "", "/home/u/proj/train.py", 54, 0, true},
    };
    static const struct rep_site s2[] = {{"cudaStreamSynchronize", 8, 4000000, 500000, NFR(g), g}};
    p = backward_proc(s2, 1);
    t = render(&p, 1, 10, NULL);
    assert_row(t, " at masked_loss /home/u/proj/train.py:45 [compiled] op: torch.nonzero\n");
    assert_lacks(t, "whose user line is not known");
    free(t);
}

/* Without any recorded forward line the backward sync stays apart, named by its node, with why;
 * with two forward lines for one native stack it is split between them (issue 24 item 2). */
static void test_backward_unseen(void **state)
{
    (void)state;
    static const struct rep_site alone[] = {
        {"cudaStreamSynchronize", 6, 6000000, 1000000, NFR(backward_unseen_frames),
         backward_unseen_frames},
    };
    struct rep_process p = backward_proc(alone, 1);
    char *t = render(&p, 1, 10, NULL);
    assert_has(t, "   backward of IndexBackward0, in autograd's thread (its forward line was not "
                  "recorded)\n");
    assert_has(t, "      why (0.75/step): not recorded with the syncs (a file of an older syncspy");
    assert_has(t, "   in at::native::nonzero_cuda");
    assert_has(t, "hint: the backward of a boolean-mask index");
    assert_has(t, "[matched: torch::autograd::generated::IndexBackward0::apply]");
    free(t);

    static struct rep_frame other[sizeof backward_frames / sizeof backward_frames[0]];
    memcpy(other, backward_frames, sizeof other);
    other[7].line = 33; /* MaskedLoss.cross_entropy: another masked index */
    assert_string_equal(other[7].function, "MaskedLoss.cross_entropy");
    struct rep_site two[] = {
        {"cudaStreamSynchronize", 2, 2000000, 1000000, NFR(backward_frames), backward_frames},
        {"cudaStreamSynchronize", 2, 2000000, 1000000, NFR(other), other},
        {"cudaStreamSynchronize", 4, 4000000, 1000000, NFR(backward_unseen_frames),
         backward_unseen_frames},
    };
    p = backward_proc(two, 3);
    p.attribution_steps = 2;
    t = render(&p, 1, 10, NULL);
    assert_has(t, "backward of MaskedLoss.cross_entropy  /home/u/proj/train.py:22");
    assert_has(t, "backward of MaskedLoss.cross_entropy  /home/u/proj/train.py:33");
    assert_lacks(t, "not recorded");
    assert_row(t, " 1 500 us 5.0% 0.50 1.00 ms 1.00 ms cudaStreamSynchronize\n");
    assert_row(t, " 2 500 us 5.0% 0.50 1.00 ms 1.00 ms cudaStreamSynchronize\n");
    assert_has(t,
               "~0.25/step of these estimated: the same node's syncs at the same native stack in "
               "steps without attribution, split as in the 2 attribution steps: ~0.25/step here, "
               "~0.25/step from /home/u/proj/train.py:33\n");
    free(t);
}

/* The split follows the proportion seen in the attribution steps (1:3 here, counts and times
 * each their own), its parts add up to the sync's count (the rows to the header), and only the
 * syncs of steps without attribution are split: a node made in another thread stays apart, with
 * why. */
static void test_backward_split_proportion(void **state)
{
    (void)state;
    static struct rep_frame other[sizeof backward_frames / sizeof backward_frames[0]];
    memcpy(other, backward_frames, sizeof other);
    other[7].line = 33;
    struct rep_site s[] = {
        {"cudaStreamSynchronize", 1, 1000000, 1000000, NFR(backward_frames), backward_frames},
        {"cudaStreamSynchronize", 3, 6000000, 2000000, NFR(other), other},
        {"cudaStreamSynchronize", 10, 10000000, 1000000, NFR(backward_step_frames),
         backward_step_frames},
        {"cudaStreamSynchronize", 2, 2000000, 1000000, NFR(backward_thread_frames),
         backward_thread_frames},
    };
    struct rep_process p = backward_proc(s, 4);
    p.syncs = 16;
    p.attribution_steps = 1;
    struct rep_lines l;
    assert_int_equal(report_lines(&p, &l), 0);
    uint64_t total = 0, estimated = 0;
    for (size_t i = 0; i < l.n; i++) {
        total += l.lines[i].count;
        estimated += l.lines[i].estimated_count;
        if (l.lines[i].kind == REP_LINE_BACKWARD) {
            uint32_t line = l.lines[i].where->line;
            /* 10 split 1:3 by count: 2.5 -> 3 and 7.5 -> 7 (largest remainders, 7.5 first) */
            assert_int_equal(l.lines[i].count, line == 22 ? 1 + 3 : 3 + 7);
            assert_int_equal(l.lines[i].estimated_count, line == 22 ? 3 : 7);
            /* 10 ms split 1:6 by time */
            assert_int_equal(l.lines[i].estimated_ns, line == 22 ? 1428571 : 8571429);
            assert_int_equal(l.lines[i].split_lines, 2);
        } else {
            assert_int_equal(l.lines[i].kind, REP_LINE_NODE);
            assert_int_equal(l.lines[i].count, 2);
            assert_int_equal(l.lines[i].ncauses, 1);
            assert_string_equal(l.lines[i].causes[0].cause, "other_thread");
        }
    }
    assert_int_equal(total, 16);
    assert_int_equal(estimated, 10);
    assert_int_equal(l.attribution_steps, 1);
    /* each line's shares (syncspy html's sub-rows): of site 2, on the lines that count them */
    assert_int_equal(l.nshares, 2);
    for (size_t i = 0; i < l.nshares; i++) {
        const struct rep_line *x = &l.lines[l.shares[i].line];
        assert_int_equal(l.shares[i].from, 2);
        assert_int_equal(l.shares[i].count, x->estimated_count);
        assert_int_equal(l.shares[i].blocked_ns, x->estimated_ns);
    }
    /* the split site counted whole (the flame graph), on the line of its largest share (line 33) */
    assert_int_equal(l.of_site[2].count, 10);
    assert_int_equal(l.of_site[2].blocked_ns, 10000000);
    assert_int_equal(l.lines[l.of_site[2].line].where->line, 33);
    char words[REPORT_ESTIMATE_WORDS_MAX];
    struct rep_estimate_other o = {l.lines[l.of_site[0].line].where, 3.0 / 4};
    report_estimate_words(words, sizeof words, 7.0 / 4, 1, &o, 1, 0);
    assert_string_equal(
        words, "~1.75/step of these estimated: the same node's syncs at the same native stack "
               "in steps without attribution, split as in the 1 attribution step: ~1.75/step "
               "here, ~0.75/step from /home/u/proj/train.py:22");
    report_estimate_words(words, 40, 7.0 / 4, 2, &o, 1, 3); /* cut to its room */
    assert_int_equal(strlen(words), 39);
    report_lines_free(&l);
    assert_null(l.shares);

    struct rep_estimate_share *sh;
    long n = report_estimate_shares(&p, &sh);
    assert_int_equal(n, 2);
    assert_int_equal(sh[0].from, 2);
    assert_int_equal(sh[0].count + sh[1].count, 10);
    assert_int_equal(sh[0].blocked_ns + sh[1].blocked_ns, 10000000);
    free(sh);

    char *t = render(&p, 1, 10, NULL);
    assert_has(
        t,
        "split as in the 1 attribution step: ~0.88/step here, ~0.38/step from /home/u/proj/train.py:22\n");
    assert_has(t, "      why (0.25/step): made in another thread than the training thread's ops");
    free(t);
}

/* A custom autograd.Function: its Python backward shows in the sync's own frames. */
static void test_backward_custom_function(void **state)
{
    (void)state;
    static const struct rep_site s[] = {
        {"cudaStreamSynchronize", 8, 8000000, 1000000, NFR(custom_frames), custom_frames},
    };
    struct rep_process p = backward_proc(s, 1);
    char *t = render(&p, 1, 10, NULL);
    assert_has(t, "backward of ClampGradBackward, in autograd's thread");
    /* its own frames from the user's backward, past the runtime's */
    assert_row(
        t,
        " backward of ClampGradBackward, in autograd's thread (its forward line was not recorded)\n"
        " in ClampGrad.backward /home/u/proj/train.py:12 [py]\n");
    assert_has(t, "hint: a custom autograd.Function's backward syncs");
    free(t);
}

static void test_top_limit(void **state)
{
    (void)state;
    struct rep_process p = make_proc(7, 3);
    char *t = render(&p, 1, 2, NULL);
    assert_has(t, "syncspy: rank 3 pid 7: ");
    assert_has(t, "   1  ");
    assert_has(t, "   2  ");
    assert_lacks(t, "   3  ");
    assert_lacks(t, "libfoo");
    /* the rest: 4 us + 812 ns over 20 steps */
    assert_has(t, "(2 more sites, 241 ns/step together; SYNCSPY_TOP or --top shows more than 2)");
    assert_lacks(t, "summary in");
    free(t);
    /* top <= 0 means 10 */
    t = render(&p, 1, 0, NULL);
    assert_has(t, "   4  ");
    free(t);
}

static void test_no_syncs(void **state)
{
    (void)state;
    struct rep_process p = {.pid = 9,
                            .rank = -1,
                            .schedule = "",
                            .steps_seen = 12,
                            .active_steps = 12,
                            .wall_ns = 1200000000,
                            .launches = 1200};
    char *t = render(&p, 1, 10, NULL);
    assert_has(t, "syncspy: pid 9: 11 step marks\n  12 steps counted\n");
    assert_has(t, "step 100 ms mean | 0.00 syncs/step | blocked 0 ns/step (0.0%) | 100 "
                  "launches/step");
    assert_has(t, "  no host-device syncs in 12 recorded steps\n");
    assert_lacks(t, "blocked/step");
    free(t);
}

static void test_no_active_steps_and_notes(void **state)
{
    (void)state;
    struct rep_process p = make_proc(11, -1);
    p.active_steps = 0;
    p.wall_ns = 0;
    p.unattributed_syncs = 3;
    p.steps_omitted = 5;
    char *t = render(&p, 1, 10, NULL);
    assert_has(t,
               "24 step marks (schedule: wait=1,warmup=1,active=3,repeat=4)\n"
               "  no step was recorded (the schedule's active steps never came); totals: 76 syncs, "
               "blocked 461 ms\n");
    assert_has(t, "3 syncs had no room in the site table");
    assert_has(t, "5 active steps are in the totals but not listed");
    /* wall 0: share is "-"; rates divide by 1: 300 ms per "step" */
    assert_row(t, " 1 300 ms - 20.0 15.0 ms 20.0 ms cudaStreamSynchronize\n");
    free(t);
}

static void test_merged(void **state)
{
    (void)state;
    /* rank 1 has only the loss_fn sites, rank 0 everything */
    struct rep_process p[2] = {make_proc(100, 0), make_proc(101, 1)};
    p[1].sites = sites;
    p[1].nsites = 2;
    char *t = render(p, 2, 10, NULL);
    assert_order(t, "syncspy: rank 0 pid 100:", "syncspy: rank 1 pid 101:");
    assert_has(t, "hotspots of all 2 processes (per step: summed over processes / their 40 "
                  "training steps)");
    /* one merged table: loss_fn from both ranks = 322.8 ms / 40 steps = 8.07 ms/step, 100 syncs */
    assert_row(t, " 1 8.07 ms 19.5% 2.50 3.23 ms 6.10 ms cudaStreamSynchronize x80, "
                  "cudaMemcpy x20\n");
    assert_has(t, "in all 2 processes");
    /* nonzero site only in rank 0: 300 ms / 40 steps */
    assert_row(t, " 2 7.50 ms 18.2% 0.50 15.0 ms 20.0 ms cudaStreamSynchronize\n");
    assert_has(t, "in 1 of 2 processes: rank 0\n");
    /* only one table */
    const char *first = strstr(t, "blocked/step");
    assert_non_null(first);
    assert_null(strstr(first + 1, "blocked/step"));
    /* ordered: merged loss_fn (322.8 ms) before ignore_background (300 ms) */
    assert_order(t, "   at loss_fn", "   at MaskedLoss.ignore_background");
    free(t);
}

static void test_display_name(void **state)
{
    (void)state;
    char b[128];
    report_display_name("at::native::index(at::Tensor const&, c10::List<x> const&)", b, sizeof b);
    assert_string_equal(b, "at::native::index");
    report_display_name("(anonymous namespace)::f(int)", b, sizeof b);
    assert_string_equal(b, "(anonymous namespace)::f");
    report_display_name("Foo::operator()(int) const", b, sizeof b);
    assert_string_equal(b, "Foo::operator()");
    report_display_name("std::vector<void (*)(int)>::push_back(int)", b, sizeof b);
    assert_string_equal(b, "std::vector<void (*)(int)>::push_back");
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    longname[sizeof longname - 2] = 'Z';
    report_display_name(longname, b, sizeof b);
    assert_int_equal(strlen(b), 80);
    assert_memory_equal(b, "...", 3);
    assert_int_equal(b[79], 'Z');
    report_display_name(NULL, b, sizeof b);
    assert_string_equal(b, "");
    /* too long with templates: their arguments fold first, the structure stays readable */
    report_display_name("std::thread::_State_impl<std::thread::_Invoker<std::tuple<void "
                        "(torch::autograd::Engine::*)(), torch::autograd::Engine*> > >::_M_run()",
                        b, sizeof b);
    assert_string_equal(b, "std::thread::_State_impl<...>::_M_run");
    /* short ones keep them */
    report_display_name("std::vector<int>::at(unsigned long)", b, sizeof b);
    assert_string_equal(b, "std::vector<int>::at");
}

static void test_long_stack(void **state)
{
    (void)state;
    /* 12 user frames: 8 shown, then a count; long paths keep their last two components */
    struct rep_frame f[12];
    char names[12][16];
    for (int i = 0; i < 12; i++) {
        snprintf(names[i], sizeof names[i], "fn%d", i);
        f[i] = (struct rep_frame){
            names[i], "", "/home/user/projects/segmentation/train.py", (uint32_t)(10 + i), 0, true};
    }
    struct rep_site s = {"cudaStreamSynchronize", 1, 1000, 1000, 12, f};
    struct rep_process p = {.pid = 1,
                            .rank = -1,
                            .sites = &s,
                            .nsites = 1,
                            .active_steps = 1,
                            .syncs = 1,
                            .blocked_ns = 1000,
                            .wall_ns = 2000,
                            .steps_seen = 1};
    char *t = render(&p, 1, 10, NULL);
    assert_has(t, "   at fn0  .../segmentation/train.py:10  [py]\n");
    assert_has(t, "      fn7  .../segmentation/train.py:17  [py]\n");
    assert_lacks(t, "fn8");
    assert_has(t, "      ... 4 frames above\n");
    assert_lacks(t, "via ");
    assert_has(t, "syncspy: pid 1: no step found: whole-run totals\n"
                  "  wall 2.00 us | 1 sync | blocked 1.00 us (50.0%) | 0 launches\n");
    assert_row(t, " 1 1.00 us 50.0% 1.00 1.00 us 1.00 us cudaStreamSynchronize\n");
    free(t);
}

static void test_write_error(void **state)
{
    (void)state;
    struct rep_process p = make_proc(1, -1);
    struct report_opts opts = {.top = 10};
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(report_render_text(&p, 1, &opts, fds[1]), -1);
    close(fds[1]);
    assert_int_equal(report_render_text(&p, 1, &opts, -1), -1);
}

/* Colour adds SGR sequences and nothing else: without them the text is the plain one, byte for
 * byte; and the plain one has no escape at all. */
static void check_colour(const struct rep_process *p, size_t n)
{
    char *plain = render(p, n, 10, "./syncspy-out/pid1/summary.json");
    char *coloured = render_colour(p, n, 10, "./syncspy-out/pid1/summary.json", true);
    assert_null(strchr(plain, '\033'));
    assert_non_null(strstr(coloured, "\033[1msyncspy: "));
    assert_non_null(strstr(coloured, "\033[32mhint:\033[0m "));
    char *stripped = calloc(1, strlen(coloured) + 1);
    assert_non_null(stripped);
    size_t k = 0, escapes = 0;
    for (const char *c = coloured; *c; c++) {
        if (*c == '\033' && c[1] == '[') {
            const char *e = c + 2;
            while ((*e >= '0' && *e <= '9') || *e == ';')
                e++;
            assert_int_equal(*e, 'm');
            c = e;
            escapes++;
            continue;
        }
        stripped[k++] = *c;
    }
    assert_true(escapes > 10);
    assert_string_equal(stripped, plain);
    free(stripped);
    free(plain);
    free(coloured);
}

static void test_colour(void **state)
{
    (void)state;
    struct rep_process one = make_proc(4242, -1);
    check_colour(&one, 1);
    struct rep_process two[2] = {make_proc(100, 0), make_proc(101, 1)};
    check_colour(two, 2);
    static const struct rep_site s[] = {
        {"cudaStreamSynchronize", 2, 2000000, 1000000, NFR(backward_frames), backward_frames},
        {"cudaStreamSynchronize", 8, 4000000, 500000, NFR(mask_forward_frames),
         mask_forward_frames},
    };
    struct rep_process b = backward_proc(s, 2);
    check_colour(&b, 1);
    /* the choice: never and always as said; auto only on a terminal (a memfd is none) */
    int fd = memfd_create("x", 0);
    assert_false(report_color_wanted(REPORT_COLOR_NEVER, fd));
    assert_true(report_color_wanted(REPORT_COLOR_ALWAYS, fd));
    assert_false(report_color_wanted(REPORT_COLOR_AUTO, fd));
    close(fd);
}

/* report_lines says which line each site is in: the two APIs of loss_fn are one line, as the
 * report's table groups them (issue 35 item 6), naming both with their syncs; every site's counts
 * are its own, and the lines' counts are their sites' sums. */
static void test_lines_of_sites(void **state)
{
    (void)state;
    struct rep_process p = make_proc(1, -1);
    struct rep_lines l;
    assert_int_equal(report_lines(&p, &l), 0);
    assert_non_null(l.of_site);
    uint64_t count[8] = {0}, ns[8] = {0};
    assert_true(l.n <= 8);
    for (size_t i = 0; i < p.nsites; i++) {
        const struct rep_site_line *sl = &l.of_site[i];
        assert_true(sl->line < l.n);
        const struct rep_line *line = &l.lines[sl->line];
        size_t a = 0;
        while (a < line->napis && strcmp(line->apis[a].api, p.sites[i].api) != 0)
            a++;
        assert_true(a < line->napis);               /* the site's API is among its line's */
        assert_true(sl->count == p.sites[i].count); /* no start-up split here: all of it */
        count[sl->line] += sl->count;
        ns[sl->line] += sl->blocked_ns;
    }
    for (size_t k = 0; k < l.n; k++) {
        assert_true(count[k] == l.lines[k].count);
        assert_true(ns[k] == l.lines[k].blocked_ns);
        assert_int_equal(l.of_site[l.lines[k].heaviest - p.sites].line, k);
    }
    /* the heaviest line (ignore_background, 300 ms) is the nonzero site's */
    assert_int_equal(l.of_site[2].line, 0);
    /* loss_fn: two APIs, one line; its API the one of most syncs, then each with its syncs */
    assert_int_equal(l.of_site[0].line, l.of_site[1].line);
    const struct rep_line *loss = &l.lines[l.of_site[0].line];
    assert_int_equal(loss->napis, 2);
    assert_true(loss->apis[0].count >= loss->apis[1].count);
    assert_true(loss->apis[0].count + loss->apis[1].count == p.sites[0].count + p.sites[1].count);
    assert_string_equal(loss->api, loss->apis[0].api);
    char text[128];
    report_apis_text(loss->apis, loss->napis, loss->other_apis, text, sizeof text);
    char want[128];
    snprintf(want, sizeof want, "%s x%llu, %s x%llu", loss->apis[0].api,
             (unsigned long long)loss->apis[0].count, loss->apis[1].api,
             (unsigned long long)loss->apis[1].count);
    assert_string_equal(text, want);
    report_lines_free(&l);
    assert_null(l.of_site);
}

/* A line's op and stack are its heaviest site's in the training steps: a start-up wait of another
 * API at the same line, longer than all of the steps' own (Lightning's trainer.fit line: a
 * cudaFree of empty_cache once at start-up beside the batches' copies), does not name the row. */
static const struct rep_step startup_steps[] = {
    {0, 900000000, 40, 160400000, 50, false},
    {1, 41300000, 5, 500000, 210, false},
    {2, 41300000, 5, 500000, 210, false},
};
static void test_line_named_by_its_steps_heaviest_site(void **state)
{
    (void)state;
    struct rep_site two[2];
    memcpy(two, sites, sizeof two); /* loss_fn: cudaStreamSynchronize 40, cudaMemcpy 10 */
    two[0].split = (struct rep_split){.startup_count = 40, .startup_ns = 160400000}; /* all */
    struct rep_process p = make_proc(1, -1);
    p.sites = two;
    p.nsites = 2;
    p.steps = startup_steps;
    p.nsteps = 3;
    p.active_steps = 3;
    p.steps_seen = 3;
    p.startup = startup_steps[0];
    p.startup_closed = true;
    struct rep_lines l;
    assert_int_equal(report_lines(&p, &l), 0);
    assert_int_equal(l.n, 1);
    assert_true(l.lines[0].count == 10); /* the steps' syncs: the copies */
    assert_true(l.lines[0].startup_count == 40);
    assert_ptr_equal(l.lines[0].heaviest, &two[1]);
    /* with nothing left out (no start-up step), the heavier site in all names it, as before */
    p.startup_closed = false;
    report_lines_free(&l);
    assert_int_equal(report_lines(&p, &l), 0);
    assert_ptr_equal(l.lines[0].heaviest, &two[0]);
    report_lines_free(&l);
}

/* The one rule for text from files (text_char, text_escape, a shown writer): every control
 * character escaped, UTF-8 kept, the tool's own SGR (fdw_raw) and layout newlines kept. */
static void test_text_escape(void **state)
{
    (void)state;
    char out[256];
    text_escape(out, sizeof out,
                "a\x1b]0;t\x07"
                "b\r\n\t\x7f\xc2\x9b\xc2\x85\x9b\xc3\xbc\xce\xbb\xc2\xa0z");
    assert_string_equal(
        out, "a\\x1b]0;t\\x07b\\r\\n\\t\\x7f\\u009b\\u0085\\x9b\xc3\xbc\xce\xbb\xc2\xa0z");
    /* cut at a whole escape, never inside one */
    assert_int_equal(text_escape(out, 6, "ab\x1b"), 2);
    assert_string_equal(out, "ab");

    int fd = memfd_create("shown", 0);
    assert_true(fd >= 0);
    struct fd_writer w;
    fdw_init(&w, fd);
    fdw_set_shown(&w);
    fdw_raw(&w, "\x1b[1m");
    fdw_puts(&w, "f\x1b[2J\xc3\xbc\n\t");
    fdw_putc(&w, '\a');
    fdw_putc(&w, (char)0x9b);
    fdw_text(&w, "x\ny");
    fdw_printf(&w, "%s", "\xe2\x82"); /* a cut sequence: byte by byte */
    assert_int_equal(fdw_flush(&w), 0);
    char got[128] = {0};
    assert_true(pread(fd, got, sizeof got - 1, 0) > 0);
    assert_string_equal(got, "\x1b[1mf\\x1b[2J\xc3\xbc"
                             "\n\t\\x07\\x9bx\\ny\\xe2\\x82");
    close(fd);
}

/* Every cause the agent records (agent/record/autograd.h enum backward_cause) has a key and the report's
 * words, the thread rings' two (issue 36 item 5) among them. */
static void test_backward_causes_have_words(void **state)
{
    (void)state;
    assert_null(backward_cause_key(BACKWARD_CAUSE_NONE));
    for (unsigned c = 1; c < BACKWARD_CAUSES; c++) {
        assert_non_null(backward_cause_key(c));
        assert_non_null(backward_cause_text(backward_cause_key(c)));
    }
    assert_null(backward_cause_key(BACKWARD_CAUSES));
    assert_string_equal(backward_cause_key(BACKWARD_CAUSE_NO_RING), "no_thread_ring");
    assert_string_equal(backward_cause_key(BACKWARD_CAUSE_RING_REUSED), "thread_ring_reused");
    assert_non_null(strstr(backward_cause_text("no_thread_ring"), "16 other threads"));
    assert_null(backward_cause_text("no_such_cause"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_process),
        cmocka_unit_test(test_optimizers_header),
        cmocka_unit_test(test_top_limit),
        cmocka_unit_test(test_no_syncs),
        cmocka_unit_test(test_no_active_steps_and_notes),
        cmocka_unit_test(test_partial_step_left_out_of_rates),
        cmocka_unit_test(test_merged),
        cmocka_unit_test(test_colour),
        cmocka_unit_test(test_display_name),
        cmocka_unit_test(test_long_stack),
        cmocka_unit_test(test_write_error),
        cmocka_unit_test(test_backward_group),
        cmocka_unit_test(test_unnamed_generated_code),
        cmocka_unit_test(test_framework_line),
        cmocka_unit_test(test_every_op_of_a_line),
        cmocka_unit_test(test_backward_split_proportion),
        cmocka_unit_test(test_backward_unseen),
        cmocka_unit_test(test_backward_custom_function),
        cmocka_unit_test(test_lines_of_sites),
        cmocka_unit_test(test_line_named_by_its_steps_heaviest_site),
        cmocka_unit_test(test_text_escape),
        cmocka_unit_test(test_backward_causes_have_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
