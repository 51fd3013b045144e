/* agent/background/identity.h: which process of a job this is (rank, local rank, world size, node, host,
 * job id), read from the variables the launchers set, by one table (identity.c) in a documented
 * order. Pure: getenv and the host name are parameters, so tests feed any environment; a value
 * that does not parse is one warning (config_warn) and is ignored, never a crash. */
#ifndef SYNCSPY_IDENTITY_H
#define SYNCSPY_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

#include "output/config.h"

#define IDENTITY_HOST_MAX 64 /* host name kept (bytes, NUL not counted) */
#define IDENTITY_JOB_MAX 63  /* job id kept */
#define IDENTITY_INT_MAX (1 << 24)

struct identity {
    const char *launcher; /* the table row that named the rank ("torchrun", "slurm"), or NULL */
    int rank;             /* -1: none */
    int local_rank;       /* -1: not known */
    int world_size;       /* 0: not known */
    int node;             /* the node's index in the job (torchrun's GROUP_RANK); -1: not known */
    char host[IDENTITY_HOST_MAX + 1];  /* as given, cut; "" when none */
    char job_id[IDENTITY_JOB_MAX + 1]; /* "" when none */
};

/* One launcher's variables (NULL: it sets none for that field). A row applies when its rank
 * variable is set and parses and its marker (when it has one) is set. */
struct identity_launcher {
    const char *name;
    const char *marker;
    const char *rank, *local_rank, *world_size, *node, *job_id;
};

/* The rows in precedence order, ending with a row whose name is NULL. */
extern const struct identity_launcher identity_launchers[];

/* Fills id from the environment and host (the node's name, e.g. uname's nodename; may be NULL).
 * Bad values get one line each in cfg->warnings (config_warn). */
void identity_parse(struct identity *id, config_getenv_fn get, const char *host,
                    struct config *cfg);

/* The host as it goes into a folder name: letters, digits, '.', '_' kept, anything else '_',
 * at most IDENTITY_HOST_MAX bytes; "" when host is empty. */
void identity_host_for_path(const char *host, char *out, size_t cap);

#endif
