/* entry/sync_rules.h: is this call a sync? The one set of rules, for the runtime calls the
 * interposed entry points see (entry/runtime.c) and for the runtime and driver calls CUPTI's
 * callbacks see (entry/cupti.c). CUDA's "API synchronization behavior" decides: stream, context
 * and event synchronize always (and cudaDeviceReset, which waits for the device's work before
 * it destroys the context); a copy's synchronous form always, except device to device ("no
 * host-side synchronization is performed"); its Async form when its host end is pageable memory
 * (staged through a bounce buffer) or both ends are host memory; a memset's synchronous form on
 * pinned or managed memory (its Async form never); a free of a non-NULL pointer (an implicit device synchronize). cudaMemcpyDefault and
 * the driver's unified copies take their direction from the pointers (unified addressing): an
 * end whose kind cannot be asked about is not assumed to be device memory, so such a
 * synchronous copy is a sync and such an Async one is not.
 * Pure given a memory oracle (what a pointer is, as the runtime or the driver says): no state,
 * no malloc, no locks, no stdio; runs inside the agent's guard. Unit-tested in test_cupti.c. */
#ifndef SYNCSPY_SYNC_RULES_H
#define SYNCSPY_SYNC_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "agent/record/core.h"

/* What one end of a copy is. MEM_HOST: host memory whose kind was not asked (it did not matter)
 * or could not be told; MEM_UNKNOWN: not even which side it is on. */
enum mem_kind { MEM_UNKNOWN, MEM_DEVICE, MEM_MANAGED, MEM_HOST, MEM_PINNED, MEM_PAGEABLE };

/* What p is (cudaPointerGetAttributes, cuPointerGetAttribute); MEM_UNKNOWN when not known. */
typedef enum mem_kind (*mem_oracle)(const void *p);

/* A copy between ends of these kinds: sets *dir (DIR_NONE when an end is unknown) and returns
 * true when it makes the host wait. async: the Async form. */
bool sync_rules_copy(enum mem_kind dst, enum mem_kind src, bool async, enum copy_dir *dir);

/* A runtime copy by its cudaMemcpyKind (the oracle is asked only when the answer matters). */
bool sync_rules_runtime_copy(enum cudaMemcpyKind kind, const void *dst, const void *src, bool async,
                             mem_oracle ask, enum copy_dir *dir);
/* cudaMemcpy3D*: a CUDA array end is device memory. Also sets *bytes. False for NULL p. */
bool sync_rules_copy_3d(const struct cudaMemcpy3DParms *p, bool async, mem_oracle ask,
                        enum copy_dir *dir, uint64_t *bytes);
/* cudaMemcpyFromSymbol* (to dst) and cudaMemcpyToSymbol* (from src): the symbol is device memory. */
bool sync_rules_from_symbol(enum cudaMemcpyKind kind, const void *dst, bool async, mem_oracle ask,
                            enum copy_dir *dir);
bool sync_rules_to_symbol(enum cudaMemcpyKind kind, const void *src, bool async, mem_oracle ask,
                          enum copy_dir *dir);
/* A memset: its synchronous form on pinned or managed host memory. The Async forms never make
 * the host wait ("The Async versions are always asynchronous with respect to the host"). */
bool sync_rules_memset(const void *dst, bool async, mem_oracle ask);

/* ---- calls seen through CUPTI --------------------------------------------------------------- */

/* The callback ids of the calls that can synchronize, per domain (CUPTI_CB_DOMAIN_DRIVER_API or
 * CUPTI_CB_DOMAIN_RUNTIME_API): the only ones syncspy enables. */
size_t sync_rules_cupti_cbids(uint32_t domain, const uint32_t **cbids);

/* Whether the call (its params struct as CUPTI passes it) makes the host wait, by the rules
 * above. Fills call->stream, bytes and dir. Decided at the call's ENTER (a freed pointer can no
 * longer be asked about afterwards). */
bool sync_rules_cupti(uint32_t domain, uint32_t cbid, const void *params, mem_oracle ask,
                      struct sync_call *call);

#endif
