/* Unit tests: the launchers' variables (agent/background/identity.c's table), one test per row, the
 * precedence between rows, and bad values (one warning each, ignored). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/background/identity.h"

static const char *env_names[32], *env_values[32];
static int env_n;

static const char *fake_getenv(const char *name)
{
    for (int i = 0; i < env_n; i++)
        if (!strcmp(env_names[i], name))
            return env_values[i];
    return NULL;
}

/* The environment: NULL-terminated name, value pairs. */
static void set_env(const char *const *pairs)
{
    env_n = 0;
    for (; pairs && pairs[0]; pairs += 2) {
        env_names[env_n] = pairs[0];
        env_values[env_n++] = pairs[1];
    }
}

static struct config cfg;

static struct identity parse(const char *const *pairs, const char *host)
{
    struct identity id;
    memset(&cfg, 0, sizeof cfg);
    set_env(pairs);
    identity_parse(&id, fake_getenv, host, &cfg);
    return id;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void expect(const struct identity *id, const char *launcher, int rank, int local, int world,
                   int node, const char *job)
{
    if (launcher)
        assert_string_equal(id->launcher, launcher);
    else
        assert_null(id->launcher);
    assert_int_equal(id->rank, rank);
    assert_int_equal(id->local_rank, local);
    assert_int_equal(id->world_size, world);
    assert_int_equal(id->node, node);
    assert_string_equal(id->job_id, job);
    assert_string_equal(cfg.warnings, "");
}

static void test_none(void **state)
{
    (void)state;
    struct identity id = parse(NULL, "node7");
    expect(&id, NULL, -1, -1, 0, -1, "");
    assert_string_equal(id.host, "node7");
}

static void test_torchrun(void **state)
{
    (void)state;
    const char *env[] = {
        "RANK",       "5", "LOCAL_RANK",       "1", "WORLD_SIZE",          "8",
        "GROUP_RANK", "2", "LOCAL_WORLD_SIZE", "2", "TORCHELASTIC_RUN_ID", "job-42",
        NULL};
    struct identity id = parse(env, "h");
    expect(&id, "torchrun", 5, 1, 8, 2, "job-42");
}

static void test_torchrun_default_run_id_is_no_id(void **state)
{
    (void)state;
    const char *env[] = {"RANK",       "0", "LOCAL_RANK",          "0",    "WORLD_SIZE", "2",
                         "GROUP_RANK", "0", "TORCHELASTIC_RUN_ID", "none", NULL};
    struct identity id = parse(env, "h");
    expect(&id, "torchrun", 0, 0, 2, 0, "");
}

static void test_deepspeed(void **state)
{
    (void)state;
    const char *env[] = {"RANK",       "9",          "LOCAL_RANK", "1",          "WORLD_SIZE",
                         "16",         "CROSS_RANK", "4",          "CROSS_SIZE", "8",
                         "LOCAL_SIZE", "2",          NULL};
    struct identity id = parse(env, "h");
    expect(&id, "deepspeed", 9, 1, 16, 4, "");
}

static void test_ray_train(void **state)
{
    (void)state;
    const char *env[] = {"RANK",      "3", "LOCAL_RANK",       "3", "WORLD_SIZE", "4",
                         "NODE_RANK", "0", "LOCAL_WORLD_SIZE", "4", NULL};
    struct identity id = parse(env, "h");
    expect(&id, "ray", 3, 3, 4, 0, "");
}

static void test_rank_alone(void **state)
{
    (void)state;
    const char *env[] = {"RANK", "7", NULL};
    struct identity id = parse(env, "h");
    expect(&id, "env", 7, -1, 0, -1, "");
}

static void test_open_mpi(void **state)
{
    (void)state;
    const char *env[] = {"OMPI_COMM_WORLD_RANK",
                         "6",
                         "OMPI_COMM_WORLD_LOCAL_RANK",
                         "2",
                         "OMPI_COMM_WORLD_SIZE",
                         "12",
                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                         "4",
                         "PMIX_NAMESPACE",
                         "1908015105",
                         NULL};
    struct identity id = parse(env, "h");
    expect(&id, "openmpi", 6, 2, 12, -1, "1908015105");
}

static void test_mpich(void **state)
{
    (void)state;
    const char *env[] = {"PMI_RANK", "11", "PMI_SIZE", "32", "MPI_LOCALRANKID", "3", NULL};
    struct identity id = parse(env, "h");
    expect(&id, "mpich", 11, 3, 32, -1, "");
}

static void test_slurm(void **state)
{
    (void)state;
    const char *env[] = {"SLURM_PROCID",
                         "13",
                         "SLURM_LOCALID",
                         "1",
                         "SLURM_NTASKS",
                         "16",
                         "SLURM_NODEID",
                         "6",
                         "SLURM_JOB_ID",
                         "778899",
                         NULL};
    struct identity id = parse(env, "h");
    expect(&id, "slurm", 13, 1, 16, 6, "778899");
}

/* torchrun started by srun on each node: the worker's RANK names it; SLURM_PROCID is the
 * torchrun agent's (one per node) and SLURM_NTASKS the node count, neither this process's;
 * Slurm's job id is still the job's. */
static void test_torchrun_under_srun(void **state)
{
    (void)state;
    const char *env[] = {"SLURM_PROCID",
                         "1",
                         "SLURM_LOCALID",
                         "0",
                         "SLURM_NTASKS",
                         "2",
                         "SLURM_NODEID",
                         "1",
                         "SLURM_JOB_ID",
                         "555",
                         "RANK",
                         "6",
                         "LOCAL_RANK",
                         "2",
                         "WORLD_SIZE",
                         "8",
                         "TORCHELASTIC_RUN_ID",
                         "none",
                         NULL};
    struct identity id = parse(env, "h");
    expect(&id, "torchrun", 6, 2, 8, 1, "555");
}

/* mpirun inside a Slurm allocation: Slurm's variables name mpirun's daemon, Open MPI's this
 * process. */
static void test_mpirun_under_slurm(void **state)
{
    (void)state;
    const char *env[] = {"SLURM_PROCID",
                         "0",
                         "SLURM_LOCALID",
                         "0",
                         "SLURM_NTASKS",
                         "1",
                         "SLURM_NODEID",
                         "3",
                         "SLURM_JOB_ID",
                         "91",
                         "OMPI_COMM_WORLD_RANK",
                         "14",
                         "OMPI_COMM_WORLD_LOCAL_RANK",
                         "2",
                         "OMPI_COMM_WORLD_SIZE",
                         "16",
                         NULL};
    struct identity id = parse(env, "h");
    expect(&id, "openmpi", 14, 2, 16, 3, "91");
}

/* A value that does not parse: one warning naming it, ignored; the next row decides. */
static void test_bad_rank_warns_once_and_falls_through(void **state)
{
    (void)state;
    const char *env[] = {"RANK", "abc",          "LOCAL_RANK", "0", "SLURM_PROCID",
                         "4",    "SLURM_NTASKS", "8",          NULL};
    struct identity id = parse(env, "h");
    assert_int_equal(id.rank, 4);
    assert_string_equal(id.launcher, "slurm");
    assert_int_equal(count_lines(cfg.warnings), 1);
    assert_non_null(
        strstr(cfg.warnings,
               "syncspy: RANK='abc' is not an integer in 0..16777215; using none (ignored)"));
}

static void test_bad_values_each_one_line(void **state)
{
    (void)state;
    const char *bad[] = {"-1",       "+3", " 3", "3 ", "", "0x10", "99999999999999999999",
                         "16777217", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *env[] = {"RANK", "2", "WORLD_SIZE", bad[i], "LOCAL_RANK", "1", NULL};
        struct identity id = parse(env, "h");
        assert_int_equal(id.rank, 2);
        assert_int_equal(id.local_rank, 1);
        assert_int_equal(id.world_size, 0);
        assert_int_equal(count_lines(cfg.warnings), 1);
        assert_non_null(strstr(cfg.warnings, "syncspy: WORLD_SIZE='"));
    }
    const char *zero[] = {"RANK", "0", "WORLD_SIZE", "0", NULL};
    struct identity id = parse(zero, "h");
    assert_int_equal(id.world_size, 0);
    assert_int_equal(count_lines(cfg.warnings), 1);
}

static void test_bad_job_id_ignored(void **state)
{
    (void)state;
    const char *env[] = {"SLURM_PROCID", "0", "SLURM_JOB_ID", "a\nb", NULL};
    struct identity id = parse(env, "h");
    assert_string_equal(id.job_id, "");
    assert_int_equal(count_lines(cfg.warnings), 1);
    assert_non_null(strstr(cfg.warnings, "SLURM_JOB_ID='a\\nb' is not a job id"));
    char longer[100];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    const char *env2[] = {"SLURM_PROCID", "0", "SLURM_JOB_ID", longer, NULL};
    id = parse(env2, "h");
    assert_string_equal(id.job_id, "");
    assert_int_equal(count_lines(cfg.warnings), 1);
}

static void test_host_for_path(void **state)
{
    (void)state;
    char out[IDENTITY_HOST_MAX + 1];
    identity_host_for_path("gpu-node-07.cluster", out, sizeof out);
    assert_string_equal(out, "gpu-node-07.cluster");
    identity_host_for_path("a/b c", out, sizeof out);
    assert_string_equal(out, "a_b_c");
    identity_host_for_path("", out, sizeof out);
    assert_string_equal(out, "");
    char longer[200];
    memset(longer, 'h', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    identity_host_for_path(longer, out, sizeof out);
    assert_int_equal(strlen(out), IDENTITY_HOST_MAX);
    struct identity id = parse(NULL, longer);
    assert_int_equal(strlen(id.host), IDENTITY_HOST_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_torchrun),
        cmocka_unit_test(test_torchrun_default_run_id_is_no_id),
        cmocka_unit_test(test_deepspeed),
        cmocka_unit_test(test_ray_train),
        cmocka_unit_test(test_rank_alone),
        cmocka_unit_test(test_open_mpi),
        cmocka_unit_test(test_mpich),
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_torchrun_under_srun),
        cmocka_unit_test(test_mpirun_under_slurm),
        cmocka_unit_test(test_bad_rank_warns_once_and_falls_through),
        cmocka_unit_test(test_bad_values_each_one_line),
        cmocka_unit_test(test_bad_job_id_ignored),
        cmocka_unit_test(test_host_for_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
