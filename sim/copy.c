/* sim/copy.c: memcpy and memset in all their forms (1D, 2D, 3D, peer, symbol, array, batch).
 * The bytes move at call time (kernels compute nothing, so nothing can be out of order); the
 * timeline gets bytes / speed of work on the stream; and the host waits exactly when CUDA's
 * "API synchronization behavior" page says it does. Every form ends in run_xfer. What device
 * memory reads as is sim/contents.c's rule. */
#include "sim/sim_internal.h"

#include <string.h>

/* Where one end of a copy lives, as far as synchronization is concerned. */
enum side { SIDE_DEVICE, SIDE_PINNED, SIDE_PAGEABLE };

static const char *const side_names[] = {"device", "pinned", "pageable"};

/* One end of a copy: its first byte, the bytes between rows and between slices. */
struct endpoint {
    unsigned char *base;
    size_t pitch, slice;
    enum side side;
};

struct xfer {
    struct endpoint dst, src;
    size_t width, height, depth; /* bytes, rows, slices */
};

/* What the cudaMemcpyKind says of each end: 1 host, 0 device, -1 look at the pointer
 * (cudaMemcpyDefault, unified addressing). */
static cudaError_t kind_says(enum cudaMemcpyKind kind, int *src_host, int *dst_host)
{
    switch (kind) {
    case cudaMemcpyHostToHost:
        *src_host = 1;
        *dst_host = 1;
        return cudaSuccess;
    case cudaMemcpyHostToDevice:
        *src_host = 1;
        *dst_host = 0;
        return cudaSuccess;
    case cudaMemcpyDeviceToHost:
        *src_host = 0;
        *dst_host = 1;
        return cudaSuccess;
    case cudaMemcpyDeviceToDevice:
        *src_host = 0;
        *dst_host = 0;
        return cudaSuccess;
    case cudaMemcpyDefault:
        *src_host = -1;
        *dst_host = -1;
        return cudaSuccess;
    }
    return cudaErrorInvalidMemcpyDirection;
}

/* A host end is pageable unless the range table knows it (pinned, or device/managed memory
 * passed as host memory, which is not pageable either). */
static enum side side_of(const void *p, int says_host)
{
    enum sim_mem_kind k = sim_mem_lookup(p, NULL);
    if (says_host == 0)
        return SIDE_DEVICE;
    if (says_host == 1)
        return k == SIM_MEM_PAGEABLE ? SIDE_PAGEABLE : SIDE_PINNED;
    if (k == SIM_MEM_DEVICE || k == SIM_MEM_MANAGED)
        return SIDE_DEVICE;
    return k == SIM_MEM_PINNED ? SIDE_PINNED : SIDE_PAGEABLE;
}

/* Does the calling thread wait for the copy to finish? (CUDA "API synchronization behavior")
 * - device to device: never; the copy is only queued.
 * - host to host: always.
 * - cudaMemcpy (the synchronous API) with a host end: always; for pageable host-to-device
 *   memory it waits for the prior work, stages and copies.
 * - cudaMemcpyAsync and friends: only when the host end is pageable. */
static bool host_waits(const struct xfer *x, bool async_api)
{
    bool src_host = x->src.side != SIDE_DEVICE, dst_host = x->dst.side != SIDE_DEVICE;
    if (!src_host && !dst_host)
        return false;
    if (src_host && dst_host)
        return true;
    if (!async_api)
        return true;
    return x->src.side == SIDE_PAGEABLE || x->dst.side == SIDE_PAGEABLE;
}

static size_t span_of(const struct endpoint *e, const struct xfer *x)
{
    return (x->depth - 1) * e->slice + (x->height - 1) * e->pitch + x->width;
}

static cudaError_t run_xfer(const struct xfer *x, cudaStream_t stream, sim_default_t def,
                            bool async_api, bool all_streams)
{
    if (x->width == 0 || x->height == 0 || x->depth == 0)
        return sim_stream_check(stream, def);
    if (x->dst.base == NULL || x->src.base == NULL)
        return cudaErrorInvalidValue;
    if ((x->height > 1 && (x->dst.pitch < x->width || x->src.pitch < x->width)) ||
        (x->depth > 1 &&
         (x->dst.slice < x->height * x->dst.pitch || x->src.slice < x->height * x->src.pitch)))
        return cudaErrorInvalidPitchValue;
    cudaError_t err = sim_mem_check_span(x->dst.base, span_of(&x->dst, x));
    if (err == cudaSuccess)
        err = sim_mem_check_span(x->src.base, span_of(&x->src, x));
    size_t bytes = x->width * x->height * x->depth;
    uint64_t end = 0;
    bool wait = host_waits(x, async_api);
    if (err == cudaSuccess && wait) /* waiting for a capturing stream, or forbidden by a capture */
        err = sim_capture_blocking_use(stream, def);
    if (err == cudaSuccess)
        err = sim_enqueue(stream, def, sim_copy_ns(bytes), 0, all_streams, NULL, &end);
    if (err != cudaSuccess)
        return err;
    if (sim_last_enqueue_captured())
        return cudaSuccess; /* a node of the capture's graph: no bytes move (sim/graphs.c) */
    /* Device memory reads as sim/contents.c says; what lands in device memory is known. */
    for (size_t z = 0; z < x->depth; z++)
        for (size_t y = 0; y < x->height; y++) {
            unsigned char *d = x->dst.base + z * x->dst.slice + y * x->dst.pitch;
            const unsigned char *s = x->src.base + z * x->src.slice + y * x->src.pitch;
            if (x->src.side == SIDE_DEVICE)
                sim_contents_read(d, s, x->width);
            else
                memmove(d, s, x->width);
            if (x->dst.side == SIDE_DEVICE)
                sim_contents_written(d, x->width);
        }
    SIM_DBG(1, "copy %zu bytes %s -> %s%s: %s %lld ns", bytes, side_names[x->src.side],
            side_names[x->dst.side], async_api ? " (async API)" : "",
            wait ? "host waits" : "queued, ends in", sim_ns_left(end));
    if (wait)
        sim_wait_until(end);
    return cudaSuccess;
}

static struct endpoint pointer_end(const void *p, size_t pitch, size_t slice, int says_host)
{
    struct endpoint e = {(unsigned char *)(uintptr_t)p, pitch, slice, side_of(p, says_host)};
    return e;
}

cudaError_t sim_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                       cudaStream_t stream, sim_default_t def, bool async_api)
{
    int sh, dh;
    cudaError_t err = kind_says(kind, &sh, &dh);
    if (err != cudaSuccess)
        return err;
    struct xfer x = {pointer_end(dst, count, count, dh), pointer_end(src, count, count, sh), count,
                     1, 1};
    return run_xfer(&x, stream, def, async_api, false);
}

cudaError_t sim_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                          size_t height, enum cudaMemcpyKind kind, cudaStream_t stream,
                          sim_default_t def, bool async_api)
{
    int sh, dh;
    cudaError_t err = kind_says(kind, &sh, &dh);
    if (err != cudaSuccess)
        return err;
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidPitchValue;
    struct xfer x = {pointer_end(dst, dpitch, dpitch * height, dh),
                     pointer_end(src, spitch, spitch * height, sh), width, height, 1};
    return run_xfer(&x, stream, def, async_api, false);
}

/* One end of a 3D copy: an array at pos (x in elements) or a pitched pointer at pos (x in
 * bytes). elem is the element size that turns the extent's width into bytes. */
static cudaError_t end_3d(cudaArray_const_t array, struct cudaPos pos, struct cudaPitchedPtr ptr,
                          int says_host, struct endpoint *out)
{
    if (array != NULL) {
        const struct cudaArray *a = sim_array_lookup(array);
        if (a == NULL || ptr.ptr != NULL)
            return cudaErrorInvalidResourceHandle;
        out->pitch = a->pitch;
        out->slice = a->pitch * a->rows;
        out->base = a->data + pos.z * out->slice + pos.y * out->pitch + pos.x * a->elem_bytes;
        out->side = SIDE_DEVICE;
        return cudaSuccess;
    }
    out->pitch = ptr.pitch;
    out->slice = ptr.pitch * ptr.ysize;
    out->base = ptr.ptr == NULL
                    ? NULL
                    : (unsigned char *)ptr.ptr + pos.z * out->slice + pos.y * ptr.pitch + pos.x;
    out->side = side_of(ptr.ptr, says_host);
    return cudaSuccess;
}

/* The width of a 3D copy in bytes, and the bounds check of its array ends. */
static cudaError_t width_3d(cudaArray_const_t src_arr, struct cudaPos src_pos,
                            cudaArray_const_t dst_arr, struct cudaPos dst_pos,
                            struct cudaExtent ext, size_t *width_bytes)
{
    const struct cudaArray *s = src_arr ? sim_array_lookup(src_arr) : NULL;
    const struct cudaArray *d = dst_arr ? sim_array_lookup(dst_arr) : NULL;
    const struct cudaArray *arrays[2] = {s, d};
    const struct cudaPos *poss[2] = {&src_pos, &dst_pos};
    for (int i = 0; i < 2; i++) {
        const struct cudaArray *a = arrays[i];
        if (a != NULL && (poss[i]->x + ext.width > a->width || poss[i]->y + ext.height > a->rows ||
                          poss[i]->z + ext.depth > a->slices))
            return cudaErrorInvalidValue;
    }
    /* With an array taking part, the extent's width counts its elements, else bytes. */
    *width_bytes = ext.width * (s ? s->elem_bytes : d ? d->elem_bytes : 1);
    return cudaSuccess;
}

cudaError_t sim_memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t stream, sim_default_t def,
                          bool async_api)
{
    if (p == NULL)
        return cudaErrorInvalidValue;
    int sh, dh;
    struct xfer x = {.height = p->extent.height, .depth = p->extent.depth};
    cudaError_t err = kind_says(p->kind, &sh, &dh);
    if (err == cudaSuccess)
        err = end_3d(p->srcArray, p->srcPos, p->srcPtr, sh, &x.src);
    if (err == cudaSuccess)
        err = end_3d(p->dstArray, p->dstPos, p->dstPtr, dh, &x.dst);
    if (err == cudaSuccess)
        err = width_3d(p->srcArray, p->srcPos, p->dstArray, p->dstPos, p->extent, &x.width);
    return err != cudaSuccess ? err : run_xfer(&x, stream, def, async_api, false);
}

cudaError_t sim_memcpy_3d_peer(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream,
                               sim_default_t def, bool async_api)
{
    if (p == NULL)
        return cudaErrorInvalidValue;
    if (sim_device_check(p->srcDevice) != cudaSuccess ||
        sim_device_check(p->dstDevice) != cudaSuccess)
        return cudaErrorInvalidDevice;
    struct xfer x = {.height = p->extent.height, .depth = p->extent.depth};
    cudaError_t err = end_3d(p->srcArray, p->srcPos, p->srcPtr, -1, &x.src);
    if (err == cudaSuccess)
        err = end_3d(p->dstArray, p->dstPos, p->dstPtr, -1, &x.dst);
    if (err == cudaSuccess)
        err = width_3d(p->srcArray, p->srcPos, p->dstArray, p->dstPos, p->extent, &x.width);
    return err != cudaSuccess ? err : run_xfer(&x, stream, def, async_api, false);
}

/* cudaMemcpyPeer is asynchronous to the host but serialized with all work on the device
 * (cudaMemcpyPeerAsync is not): the simulator makes it wait for every stream. */
cudaError_t sim_memcpy_peer(void *dst, int dst_dev, const void *src, int src_dev, size_t count,
                            cudaStream_t stream, sim_default_t def, bool async_api)
{
    if (sim_device_check(dst_dev) != cudaSuccess || sim_device_check(src_dev) != cudaSuccess)
        return cudaErrorInvalidDevice;
    struct xfer x = {pointer_end(dst, count, count, 0), pointer_end(src, count, count, 0), count, 1,
                     1};
    return run_xfer(&x, stream, def, async_api, !async_api);
}

/* The symbol end is device memory whatever the table says: a __device__ variable's host
 * shadow (its address is the symbol), registered or not. */
cudaError_t sim_memcpy_symbol(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                              bool to_symbol, cudaStream_t stream, sim_default_t def,
                              bool async_api)
{
    if ((to_symbol ? dst : src) == NULL)
        return cudaErrorInvalidSymbol;
    enum cudaMemcpyKind host_kind = to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    if (kind != host_kind && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    int other_says = kind == cudaMemcpyDefault ? -1 : kind == cudaMemcpyDeviceToDevice ? 0 : 1;
    struct xfer x = {pointer_end(dst, count, count, to_symbol ? 0 : other_says),
                     pointer_end(src, count, count, to_symbol ? other_says : 0), count, 1, 1};
    return run_xfer(&x, stream, def, async_api, false);
}

/* One end of a legacy array copy: (w bytes, h rows) into an array, or a pitched pointer. */
static cudaError_t array_or_pointer_end(cudaArray_const_t array, size_t w, size_t h, const void *p,
                                        size_t pitch, int says_host, struct endpoint *out,
                                        const struct cudaArray **arr)
{
    *arr = NULL;
    if (array == NULL) {
        *out = pointer_end(p, pitch, 0, says_host);
        return cudaSuccess;
    }
    const struct cudaArray *a = sim_array_lookup(array);
    if (a == NULL)
        return cudaErrorInvalidResourceHandle;
    *arr = a;
    out->base = a->data + h * a->pitch + w;
    out->pitch = a->pitch;
    out->slice = 0;
    out->side = SIDE_DEVICE;
    return cudaSuccess;
}

cudaError_t sim_memcpy_array_2d(cudaArray_t dst_arr, size_t dst_w, size_t dst_h,
                                cudaArray_const_t src_arr, size_t src_w, size_t src_h, void *dst,
                                size_t dpitch, const void *src, size_t spitch, size_t width,
                                size_t height, enum cudaMemcpyKind kind, cudaStream_t stream,
                                sim_default_t def, bool async_api)
{
    int sh, dh;
    const struct cudaArray *da, *sa;
    struct xfer x = {.width = width, .height = height, .depth = 1};
    cudaError_t err = kind_says(kind, &sh, &dh);
    if (err == cudaSuccess)
        err = array_or_pointer_end(dst_arr, dst_w, dst_h, dst, dpitch, dh, &x.dst, &da);
    if (err == cudaSuccess)
        err = array_or_pointer_end(src_arr, src_w, src_h, src, spitch, sh, &x.src, &sa);
    if (err != cudaSuccess)
        return err;
    if ((da && (dst_w + width > da->pitch || dst_h + height > da->rows * da->slices)) ||
        (sa && (src_w + width > sa->pitch || src_h + height > sa->rows * sa->slices)))
        return cudaErrorInvalidValue;
    if (x.dst.pitch < width || x.src.pitch < width)
        return cudaErrorInvalidPitchValue;
    return run_xfer(&x, stream, def, async_api, false);
}

/* The legacy 1D array copies: count bytes from (w, h), running on past the end of a row. */
cudaError_t sim_memcpy_array_linear(cudaArray_t dst_arr, size_t dst_w, size_t dst_h,
                                    cudaArray_const_t src_arr, size_t src_w, size_t src_h,
                                    void *dst, const void *src, size_t count,
                                    enum cudaMemcpyKind kind, cudaStream_t stream,
                                    sim_default_t def, bool async_api)
{
    int sh, dh;
    const struct cudaArray *da, *sa;
    struct xfer x = {.width = count, .height = 1, .depth = 1};
    cudaError_t err = kind_says(kind, &sh, &dh);
    if (err == cudaSuccess)
        err = array_or_pointer_end(dst_arr, dst_w, dst_h, dst, count, dh, &x.dst, &da);
    if (err == cudaSuccess)
        err = array_or_pointer_end(src_arr, src_w, src_h, src, count, sh, &x.src, &sa);
    if (err != cudaSuccess)
        return err;
    if ((da && dst_h * da->pitch + dst_w + count > da->pitch * da->rows * da->slices) ||
        (sa && src_h * sa->pitch + src_w + count > sa->pitch * sa->rows * sa->slices))
        return cudaErrorInvalidValue;
    return run_xfer(&x, stream, def, async_api, false);
}

cudaError_t sim_memcpy_batch(void *const *dsts, const void *const *srcs, const size_t *sizes,
                             size_t count, cudaStream_t stream, sim_default_t def)
{
    if (count == 0 || dsts == NULL || srcs == NULL || sizes == NULL)
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < count; i++) {
        cudaError_t err =
            sim_memcpy(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, stream, def, true);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

/* One operand of cudaMemcpy3DBatchAsync; rowLength and layerHeight count elements, 0 meaning
 * tightly packed. */
static cudaError_t batch_end(const struct cudaMemcpy3DOperand *o, struct cudaExtent ext,
                             size_t elem, struct endpoint *out)
{
    if (o->type == cudaMemcpyOperandTypeArray) {
        struct cudaPos pos = {o->op.array.offset.x, o->op.array.offset.y, o->op.array.offset.z};
        struct cudaPitchedPtr none = {0};
        return end_3d(o->op.array.array, pos, none, 0, out);
    }
    if (o->type != cudaMemcpyOperandTypePointer)
        return cudaErrorInvalidValue;
    size_t row = (o->op.ptr.rowLength ? o->op.ptr.rowLength : ext.width) * elem;
    size_t layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : ext.height;
    *out = pointer_end(o->op.ptr.ptr, row, row * layer, -1);
    return cudaSuccess;
}

cudaError_t sim_memcpy_3d_batch(size_t n, const struct cudaMemcpy3DBatchOp *ops,
                                cudaStream_t stream, sim_default_t def)
{
    if (n == 0 || ops == NULL)
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < n; i++) {
        const struct cudaMemcpy3DBatchOp *op = &ops[i];
        if (op->extent.width == 0 || op->extent.height == 0 || op->extent.depth == 0)
            return cudaErrorInvalidValue;
        cudaArray_const_t sa =
            op->src.type == cudaMemcpyOperandTypeArray ? op->src.op.array.array : NULL;
        cudaArray_const_t da =
            op->dst.type == cudaMemcpyOperandTypeArray ? op->dst.op.array.array : NULL;
        struct cudaPos sp = {0}, dp = {0};
        if (sa != NULL)
            sp = (struct cudaPos){op->src.op.array.offset.x, op->src.op.array.offset.y,
                                  op->src.op.array.offset.z};
        if (da != NULL)
            dp = (struct cudaPos){op->dst.op.array.offset.x, op->dst.op.array.offset.y,
                                  op->dst.op.array.offset.z};
        struct xfer x = {.height = op->extent.height, .depth = op->extent.depth};
        cudaError_t err = width_3d(sa, sp, da, dp, op->extent, &x.width);
        if (err == cudaSuccess)
            err = batch_end(&op->src, op->extent, x.width / op->extent.width, &x.src);
        if (err == cudaSuccess)
            err = batch_end(&op->dst, op->extent, x.width / op->extent.width, &x.dst);
        if (err == cudaSuccess)
            err = run_xfer(&x, stream, def, true, false);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

/* CUDA "API synchronization behavior": the synchronous memset functions are asynchronous with
 * respect to the host except when the target is pinned host memory or managed memory; the
 * Async versions are always asynchronous. Pageable memory is not the device's to set. */
/* The checks and the timeline of a memset of bytes over [p, p + span): queues it on the
 * stream; *end_ns receives its end. */
static cudaError_t memset_queue(void *p, size_t span, size_t bytes, cudaStream_t stream,
                                sim_default_t def, bool async_api, enum sim_mem_kind *kind,
                                uint64_t *end_ns)
{
    *kind = sim_mem_lookup(p, NULL);
    if (*kind == SIM_MEM_PAGEABLE)
        return cudaErrorInvalidValue;
    cudaError_t err = sim_mem_check_span(p, span);
    if (err == cudaSuccess && *kind != SIM_MEM_DEVICE && !async_api) /* the host would wait */
        err = sim_capture_blocking_use(stream, def);
    if (err == cudaSuccess)
        err = sim_enqueue(stream, def, sim_copy_ns(bytes), 0, false, NULL, end_ns);
    return err;
}

static void memset_done(size_t bytes, enum sim_mem_kind kind, bool async_api, uint64_t end)
{
    bool wait =
        kind != SIM_MEM_DEVICE && !async_api; /* "The Async versions are always asynchronous" */
    SIM_DBG(1, "memset %zu bytes of %s memory%s: %s %lld ns", bytes,
            kind == SIM_MEM_DEVICE   ? "device"
            : kind == SIM_MEM_PINNED ? "pinned"
                                     : "managed",
            async_api ? " (async API)" : "", wait ? "host waits" : "queued, ends in",
            sim_ns_left(end));
    if (wait)
        sim_wait_until(end);
}

cudaError_t sim_memset(void *p, size_t pitch, int value, size_t width, size_t height, size_t depth,
                       size_t slice_rows, cudaStream_t stream, sim_default_t def, bool async_api)
{
    if (width == 0 || height == 0 || depth == 0)
        return sim_stream_check(stream, def);
    if (p == NULL)
        return cudaErrorInvalidValue;
    if ((height > 1 || depth > 1) && pitch < width)
        return cudaErrorInvalidPitchValue;
    if (depth > 1 && slice_rows < height)
        return cudaErrorInvalidValue;
    size_t slice = pitch * slice_rows;
    size_t bytes = width * height * depth;
    enum sim_mem_kind kind;
    uint64_t end = 0;
    cudaError_t err = memset_queue(p, (depth - 1) * slice + (height - 1) * pitch + width, bytes,
                                   stream, def, async_api, &kind, &end);
    if (err != cudaSuccess || sim_last_enqueue_captured()) /* captured: sets nothing */
        return err;
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++) {
            memset((unsigned char *)p + z * slice + y * pitch, value, width);
            sim_contents_written((unsigned char *)p + z * slice + y * pitch, width);
        }
    memset_done(bytes, kind, async_api, end);
    return cudaSuccess;
}

cudaError_t sim_memset_d32(void *p, uint32_t value, size_t count, cudaStream_t stream,
                           sim_default_t def, bool async_api)
{
    if (count == 0)
        return sim_stream_check(stream, def);
    if (p == NULL || ((uintptr_t)p & 3) != 0 || count > SIZE_MAX / 4)
        return cudaErrorInvalidValue;
    enum sim_mem_kind kind;
    uint64_t end = 0;
    cudaError_t err = memset_queue(p, count * 4, count * 4, stream, def, async_api, &kind, &end);
    if (err != cudaSuccess || sim_last_enqueue_captured()) /* captured: sets nothing */
        return err;
    for (size_t i = 0; i < count; i++)
        memcpy((unsigned char *)p + 4 * i, &value, 4);
    sim_contents_written(p, count * 4);
    memset_done(count * 4, kind, async_api, end);
    return cudaSuccess;
}
