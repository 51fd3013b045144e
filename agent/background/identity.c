/* agent/background/identity.c: the launchers' variables as one table (identity.h), read once at load time.
 * Pure (no getenv, no I/O of its own): config_parse's sibling, run before the first CUDA call;
 * its warnings wait in cfg->warnings like config_parse's, so a launcher that never touches CUDA
 * (torchrun's agent, mpirun, srun) prints nothing. */
#include "agent/background/identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Precedence: the first row whose rank variable is set (and parses, and whose marker is set)
 * names rank, local rank and world size; node and job id come from that row, else from the
 * first row below or above it that has them (torchrun under srun: its RANK, Slurm's job id and
 * node). The per-process variables go first: a launcher started by another (torchrun workers
 * under srun, mpirun's processes inside a Slurm allocation) inherits the outer one's variables,
 * which then name the launcher process (SLURM_PROCID of the torchrun agent is its node), not
 * this one.
 *
 * What each launcher sets, as read in its code:
 * - torchrun / torch.distributed.elastic: RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK (the node),
 *   LOCAL_WORLD_SIZE, TORCHELASTIC_RUN_ID (--rdzv-id, "none" unless given): the worker env of
 *   torch/distributed/elastic/agent/server/local_elastic_agent.py (_start_workers). Accelerate's
 *   `accelerate launch` runs torch.distributed.run for its multi-GPU and multi-node modes, so
 *   its workers carry the same names.
 * - DeepSpeed's launcher (deepspeed/launcher/launch.py main): RANK, LOCAL_RANK, WORLD_SIZE,
 *   CROSS_RANK (the node), CROSS_SIZE, LOCAL_SIZE; no run id.
 * - Ray Train (ray/train/torch/config.py _set_torch_distributed_env_vars; its test
 *   test_torch_trainer asserts them): RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK.
 *   Lightning's cluster environments set NODE_RANK with RANK too.
 * - Open MPI (mpirun/prterun; ompi docs "Environment variables set for MPI processes"):
 *   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_SIZE; no node index; the
 *   job's PMIx namespace in PMIX_NAMESPACE (seen in `mpirun -np 1 env` of Debian's Open MPI
 *   4.1; Open MPI 5's prterun sets it too).
 * - MPICH / Intel MPI (Hydra's PMI): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID.
 * - Slurm (srun; sbatch's "OUTPUT ENVIRONMENT VARIABLES"): SLURM_PROCID, SLURM_LOCALID,
 *   SLURM_NTASKS, SLURM_NODEID, SLURM_JOB_ID. */
const struct identity_launcher identity_launchers[] = {
    {"torchrun", "TORCHELASTIC_RUN_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK",
     "TORCHELASTIC_RUN_ID"},
    {"deepspeed", "CROSS_RANK", "RANK", "LOCAL_RANK", "WORLD_SIZE", "CROSS_RANK", NULL},
    {"ray", "NODE_RANK", "RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", NULL},
    {"env", NULL, "RANK", "LOCAL_RANK", "WORLD_SIZE", NULL, NULL},
    {"openmpi", NULL, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
     NULL, "PMIX_NAMESPACE"},
    {"mpich", NULL, "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", NULL, NULL},
    {"slurm", NULL, "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID",
     "SLURM_JOB_ID"},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* Each variable of the table read and checked once (RANK is in four rows: one warning). */
#define MAX_VARS 32

struct seen {
    const char *name[MAX_VARS];
    long value[MAX_VARS];
    bool ok[MAX_VARS];
    int n;
};

/* var's value in lo..hi: true with *out, false when unset or bad (bad: one warning). */
static bool int_var(struct seen *s, config_getenv_fn get, struct config *cfg, const char *var,
                    long lo, long hi, long *out)
{
    if (!var)
        return false;
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], var)) {
            *out = s->value[i];
            return s->ok[i];
        }
    const char *v = get(var);
    long n = 0;
    bool ok = v && config_parse_int(v, lo, hi, &n);
    if (v && !ok) {
        char why[64];
        snprintf(why, sizeof why, "is not an integer in %ld..%ld", lo, hi);
        config_warn(cfg, var, v, why, "none (ignored)");
    }
    if (s->n < MAX_VARS) {
        s->name[s->n] = var;
        s->value[s->n] = n;
        s->ok[s->n++] = ok;
    }
    *out = n;
    return ok;
}

/* A job id: printable, no '/', at most IDENTITY_JOB_MAX bytes; torchrun's default "none" is
 * no id. Anything else: one warning, ignored. */
static bool job_var(config_getenv_fn get, struct config *cfg, const char *var, char *out)
{
    const char *v = var ? get(var) : NULL;
    if (!v || !*v || !strcmp(v, "none"))
        return false;
    size_t n = strlen(v);
    bool ok = n <= IDENTITY_JOB_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = v[i] > 0x20 && v[i] < 0x7f && v[i] != '"' && v[i] != '\\';
    if (!ok) {
        char why[80];
        snprintf(why, sizeof why, "is not a job id (printable, no quotes, at most %d bytes)",
                 IDENTITY_JOB_MAX);
        config_warn(cfg, var, v, why, "none (ignored)");
        return false;
    }
    memcpy(out, v, n + 1);
    return true;
}

static void copy_host(char *dst, const char *host)
{
    size_t n = 0;
    for (const char *p = host ? host : ""; *p && n < IDENTITY_HOST_MAX; p++)
        dst[n++] = (*p > 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '_';
    dst[n] = '\0';
}

void identity_parse(struct identity *id, config_getenv_fn get, const char *host, struct config *cfg)
{
    memset(id, 0, sizeof *id);
    id->rank = id->local_rank = id->node = -1;
    copy_host(id->host, host);
    struct seen s = {.n = 0};
    long v;
    int chosen = -1;
    for (int i = 0; identity_launchers[i].name; i++) {
        const struct identity_launcher *l = &identity_launchers[i];
        /* every variable of every row is checked, so a bad one is said even when unused */
        bool has_rank = int_var(&s, get, cfg, l->rank, 0, IDENTITY_INT_MAX - 1, &v);
        if (chosen < 0 && has_rank && (!l->marker || get(l->marker))) {
            chosen = i;
            id->rank = (int)v;
            id->launcher = l->name;
        }
        int_var(&s, get, cfg, l->local_rank, 0, IDENTITY_INT_MAX - 1, &v);
        int_var(&s, get, cfg, l->world_size, 1, IDENTITY_INT_MAX, &v);
        int_var(&s, get, cfg, l->node, 0, IDENTITY_INT_MAX - 1, &v);
    }
    if (chosen < 0)
        return;
    const struct identity_launcher *c = &identity_launchers[chosen];
    if (int_var(&s, get, cfg, c->local_rank, 0, IDENTITY_INT_MAX - 1, &v))
        id->local_rank = (int)v;
    if (int_var(&s, get, cfg, c->world_size, 1, IDENTITY_INT_MAX, &v))
        id->world_size = (int)v;
    /* node and job id: the chosen row's, else the first row's that has one */
    if (int_var(&s, get, cfg, c->node, 0, IDENTITY_INT_MAX - 1, &v))
        id->node = (int)v;
    for (int i = 0; id->node < 0 && identity_launchers[i].name; i++)
        if (int_var(&s, get, cfg, identity_launchers[i].node, 0, IDENTITY_INT_MAX - 1, &v))
            id->node = (int)v;
    bool job = job_var(get, cfg, c->job_id, id->job_id);
    for (int i = 0; !job && identity_launchers[i].name; i++)
        if (i != chosen)
            job = job_var(get, cfg, identity_launchers[i].job_id, id->job_id);
}

void identity_host_for_path(const char *host, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = host ? host : ""; *p && n + 1 < cap && n < IDENTITY_HOST_MAX; p++) {
        char ch = *p;
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        out[n++] = keep ? ch : '_';
    }
    if (cap)
        out[n] = '\0';
}
