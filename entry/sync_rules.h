/* shim/classify.h: is this call a sync? CUDA's "API synchronization behavior" decides:
 * cudaMemcpy is synchronous except device-to-device; cudaMemcpyAsync is synchronous when the
 * host side is pageable memory (cudaPointerGetAttributes says Unregistered) or both sides are
 * host memory; cudaMemset is synchronous only on pinned or managed host memory; cudaFree and
 * cudaFreeHost synchronize the device unless given NULL. Runs inside the agent's guard. */
#ifndef SYNCSPY_CLASSIFY_H
#define SYNCSPY_CLASSIFY_H

#include <stdbool.h>
#include <cuda_runtime_api.h>
#include "agent/core.h"

/* Copies: sets *dir; returns true when the call made the host wait. async: the Async form. */
bool classify_copy(enum cudaMemcpyKind kind, const void *dst, const void *src, bool async,
                   enum copy_dir *dir);
/* Memsets (synchronous forms only; the Async forms never block). */
bool classify_memset(const void *dst);

#endif
