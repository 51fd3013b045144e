/* sim/module_api.c: the simulated libcuda.so.1's modules and the driver calls Triton and
 * PyTorch's Inductor make around them: loading device code (cuModuleLoad from a file,
 * cuModuleLoadData[Ex] from memory), its functions and globals, cuLaunchKernelEx, the context's
 * limits, cuStreamIsCapturing, cuPointerGetAttributes, cluster occupancy and im2col tensor maps.
 * Nothing is compiled or run: a module keeps the kernel names its image declares (a cubin's ELF
 * symbol table, a PTX text's .entry lines) so that a missing name fails as on a GPU, and a
 * function handle is a kernel whose duration is the simulator's (simcuda_set_kernel_ns on the
 * handle, else the default). Never calls its own exports (sim/sim.mk checks). */
#include <cuda.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/driver_ext.h"

TWIN(cuLaunchKernelEx, cuLaunchKernelEx_ptsz)
TWIN(cuStreamIsCapturing, cuStreamIsCapturing_ptsz)

/* A function handle (CUfunction): the kernel key of the timelines, named for activity records. */
struct CUfunc_st {
    struct CUfunc_st *next;
    struct CUmod_st *module;
    char *name;
};

/* A global variable of a module: device memory of the symbol's size, made at the first lookup. */
struct sim_global {
    struct sim_global *next;
    char *name;
    CUdeviceptr ptr;
    size_t bytes;
};

/* The names an image declares: kernels (entries) and, for a cubin, globals with their sizes. */
struct sim_symbol {
    char *name;
    size_t bytes;
    bool is_kernel;
};

struct CUmod_st {
    struct CUmod_st *next;
    struct sim_symbol *symbols;
    size_t count;
    bool any_name; /* a fatbinary: its entries are compressed, every name is taken */
    struct CUfunc_st *functions;
    struct sim_global *globals;
};

/* Every loaded module (a handle is checked against this list, never dereferenced blindly). */
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUmod_st *modules;

static bool module_live(CUmodule m)
{
    for (struct CUmod_st *p = modules; p != NULL; p = p->next)
        if (p == m)
            return true;
    return false;
}

/* ---- what an image declares --------------------------------------------------------------- */

static bool add_symbol(struct CUmod_st *m, const char *name, size_t bytes, bool is_kernel)
{
    struct sim_symbol *grown = realloc(m->symbols, (m->count + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    m->symbols = grown;
    char *copy = strdup(name);
    if (copy == NULL)
        return false;
    m->symbols[m->count++] = (struct sim_symbol){copy, bytes, is_kernel};
    return true;
}

/* A cubin: an ELF of machine EM_CUDA (190) whose symbol table names its kernels (STT_FUNC,
 * global) and variables (STT_OBJECT, global). Trusts the header's offsets, as the driver does. */
#define EM_CUDA_MACHINE 190

static CUresult read_cubin(struct CUmod_st *m, const unsigned char *image)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_CUDA_MACHINE ||
        eh->e_shentsize != sizeof(Elf64_Shdr))
        return CUDA_ERROR_INVALID_IMAGE;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(image + sh[i].sh_offset);
        const char *strtab = (const char *)(image + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < n; k++) {
            int type = ELF64_ST_TYPE(sym[k].st_info), bind = ELF64_ST_BIND(sym[k].st_info);
            if ((type != STT_FUNC && type != STT_OBJECT) || bind == STB_LOCAL)
                continue;
            if (!add_symbol(m, strtab + sym[k].st_name, sym[k].st_size, type == STT_FUNC))
                return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    return CUDA_SUCCESS;
}

/* PTX text: every ".entry NAME(" declares a kernel (JIT compilation succeeds, computing nothing). */
static CUresult read_ptx(struct CUmod_st *m, const char *text)
{
    for (const char *p = strstr(text, ".entry"); p != NULL; p = strstr(p + 6, ".entry")) {
        const char *s = p + 6;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t len = strcspn(s, " \t\r\n(");
        if (len == 0 || len >= 1024)
            continue;
        char name[1024];
        memcpy(name, s, len);
        name[len] = '\0';
        if (!add_symbol(m, name, 0, true))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return m->count > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_PTX;
}

#define FATBIN_MAGIC 0xBA55ED50u         /* a fatbinary's header */
#define FATBIN_WRAPPER_MAGIC 0x466243B1u /* __fatBinC_Wrapper_t, what nvcc embeds */

static CUresult read_image(struct CUmod_st *m, const void *image)
{
    const unsigned char *b = image;
    uint32_t magic;
    memcpy(&magic, b, sizeof magic);
    if (!memcmp(b, ELFMAG, SELFMAG))
        return read_cubin(m, b);
    if (magic == FATBIN_MAGIC || magic == FATBIN_WRAPPER_MAGIC) {
        m->any_name = true;
        return CUDA_SUCCESS;
    }
    if (strstr((const char *)b, ".version") != NULL || strstr((const char *)b, ".entry") != NULL)
        return read_ptx(m, (const char *)b);
    return CUDA_ERROR_INVALID_IMAGE;
}

static void free_module(struct CUmod_st *m)
{
    for (size_t i = 0; i < m->count; i++)
        free(m->symbols[i].name);
    free(m->symbols);
    for (struct CUfunc_st *f = m->functions, *next; f != NULL; f = next) {
        next = f->next;
        free(f->name);
        free(f);
    }
    for (struct sim_global *g = m->globals, *next; g != NULL; g = next) {
        next = g->next;
        ops()->mem_free(ptr(g->ptr), false);
        free(g->name);
        free(g);
    }
    free(m);
}

static CUresult load(CUmodule *module, const void *image)
{
    if (module == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ops()->driver_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (m == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = read_image(m, image);
    if (rc != CUDA_SUCCESS) {
        free_module(m);
        return rc;
    }
    pthread_mutex_lock(&modules_lock);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&modules_lock);
    *module = m;
    return CUDA_SUCCESS;
}

/* ---- loading and unloading ------------------------------------------------------------------ */

DRV_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return load(module, image);
}

DRV_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    if (numOptions != 0 && (options == NULL || optionValues == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    return load(module, image);
}

DRV_API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return load(module, fatCubin);
}

/* cuModuleLoad reads the whole file (cubin, PTX or fatbinary), NUL-terminated for PTX. */
DRV_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    if (module == NULL || fname == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(fname, "rb");
    if (f == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    char *data = NULL;
    size_t size = 0, cap = 0, n;
    char chunk[65536];
    CUresult rc = CUDA_SUCCESS;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (size + n + 1 > cap) {
            cap = (size + n + 1) * 2;
            char *grown = realloc(data, cap);
            if (grown == NULL) {
                rc = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            data = grown;
        }
        memcpy(data + size, chunk, n);
        size += n;
    }
    fclose(f);
    if (rc == CUDA_SUCCESS && size < 4)
        rc = CUDA_ERROR_INVALID_IMAGE;
    if (rc == CUDA_SUCCESS) {
        data[size] = '\0';
        rc = load(module, data);
    }
    free(data);
    return rc;
}

DRV_API CUresult cuModuleUnload(CUmodule hmod)
{
    pthread_mutex_lock(&modules_lock);
    struct CUmod_st **link = &modules;
    while (*link != NULL && *link != hmod)
        link = &(*link)->next;
    struct CUmod_st *m = *link;
    if (m != NULL)
        *link = m->next;
    pthread_mutex_unlock(&modules_lock);
    if (m == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    free_module(m);
    return CUDA_SUCCESS;
}

/* ---- functions and globals ------------------------------------------------------------------ */

static const struct sim_symbol *find_symbol(const struct CUmod_st *m, const char *name,
                                            bool is_kernel)
{
    for (size_t i = 0; i < m->count; i++)
        if (m->symbols[i].is_kernel == is_kernel && !strcmp(m->symbols[i].name, name))
            return &m->symbols[i];
    return NULL;
}

/* The module's handle for name, made at its first lookup (NULL: out of memory). */
static struct CUfunc_st *function_locked(struct CUmod_st *m, const char *name)
{
    for (struct CUfunc_st *f = m->functions; f != NULL; f = f->next)
        if (!strcmp(f->name, name))
            return f;
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (f != NULL && (f->name = strdup(name)) == NULL) {
        free(f);
        return NULL;
    }
    if (f != NULL) {
        f->module = m;
        f->next = m->functions;
        m->functions = f;
        ops()->kernel_register(f, f->name); /* its name in activity records and cudaFuncGetName */
    }
    return f;
}

/* The same handle for the same name, as the driver gives. */
DRV_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    if (hfunc == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&modules_lock);
    struct CUfunc_st *f = NULL;
    if (!module_live(hmod))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!hmod->any_name && find_symbol(hmod, name, true) == NULL)
        rc = CUDA_ERROR_NOT_FOUND;
    else if ((f = function_locked(hmod, name)) == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        *hfunc = f;
    pthread_mutex_unlock(&modules_lock);
    return rc;
}

/* The module and name of a handle that cuModuleGetFunction gave (any other is invalid). */
static CUresult function_of(CUfunction hfunc, CUmodule *mod, const char **name)
{
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&modules_lock);
    for (struct CUmod_st *m = modules; m != NULL && rc != CUDA_SUCCESS; m = m->next)
        for (struct CUfunc_st *f = m->functions; f != NULL; f = f->next)
            if (f == hfunc) {
                if (mod != NULL)
                    *mod = m;
                if (name != NULL)
                    *name = f->name;
                rc = CUDA_SUCCESS;
                break;
            }
    pthread_mutex_unlock(&modules_lock);
    return rc;
}

DRV_API CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    if (hmod == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return function_of(hfunc, hmod, NULL);
}

DRV_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return function_of(hfunc, NULL, name);
}

DRV_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                      const char *name)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&modules_lock);
    struct sim_global *g = NULL;
    const struct sim_symbol *s = NULL;
    if (!module_live(hmod))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if ((s = find_symbol(hmod, name, false)) == NULL)
        rc = CUDA_ERROR_NOT_FOUND;
    else {
        for (g = hmod->globals; g != NULL && strcmp(g->name, name); g = g->next)
            ;
        if (g == NULL) {
            void *p = NULL;
            g = calloc(1, sizeof *g);
            if (g == NULL || (g->name = strdup(name)) == NULL ||
                ops()->mem_alloc(&p, s->bytes ? s->bytes : 1, false) != cudaSuccess) {
                if (g != NULL)
                    free(g->name);
                free(g);
                g = NULL;
                rc = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                g->ptr = (CUdeviceptr)(uintptr_t)p;
                g->bytes = s->bytes;
                g->next = hmod->globals;
                hmod->globals = g;
            }
        }
    }
    if (g != NULL) {
        if (dptr != NULL)
            *dptr = g->ptr;
        if (bytes != NULL)
            *bytes = g->bytes;
    }
    pthread_mutex_unlock(&modules_lock);
    return rc;
}

/* ---- launches --------------------------------------------------------------------------------- */

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra, bool per_thread)
{
    if (config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    return R(ops()->launch_ex(config, f, kernelParams, extra, per_thread));
}

DRV_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                  void **extra)
{
    return launch_ex(config, f, kernelParams, extra, false);
}

DRV_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, true);
}

/* One cluster of up to 8 blocks (the portable size) per pair of the device's 132 SMs. */
DRV_API CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                              const CUlaunchConfig *config)
{
    if (numClusters == NULL || config == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (func == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    unsigned cluster = 1;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs != NULL && config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            cluster = config->attrs[i].value.clusterDim.x * config->attrs[i].value.clusterDim.y *
                      config->attrs[i].value.clusterDim.z;
    if (cluster == 0 || cluster > 16)
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    *numClusters = 132 / (int)cluster;
    return CUDA_SUCCESS;
}

/* ---- the context, streams, pointers ----------------------------------------------------------- */

DRV_API CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    return R(ops()->limit_get(pvalue, (int)limit));
}

DRV_API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    return R(ops()->limit_set((int)limit, value));
}

/* The stream's capture status, as cudaStreamIsCapturing says it (Triton skips its printf-FIFO
 * and other set-up while a stream captures). */
static CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus *captureStatus, bool pt)
{
    if (captureStatus == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    int status = 0;
    CUresult rc = R(ops()->capture_status(hStream, pt, &status));
    if (rc == CUDA_SUCCESS)
        *captureStatus = (CUstreamCaptureStatus)status;
    return rc;
}

DRV_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, captureStatus, false);
}

DRV_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, captureStatus, true);
}

/* Each attribute as cuPointerGetAttribute answers it, except that memory CUDA does not know is
 * no error: its attributes take their "unknown" values (NULL, 0, device ordinal -2), as the
 * driver documents. */
DRV_API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr p)
{
    if (numAttributes == 0 || attributes == NULL || data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaPointerAttributes a;
    bool known = ops()->pointer_attributes(&a, ptr(p)) == cudaSuccess &&
                 a.type != cudaMemoryTypeUnregistered;
    for (unsigned i = 0; i < numAttributes; i++) {
        if (data[i] == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        CUresult rc = pointer_attribute(data[i], attributes[i], p, &a, known);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

/* ---- tensor maps ------------------------------------------------------------------------------ */

/* As cuTensorMapEncodeTiled (sim/driver_ext.c): checked for what every call needs (rank 3 to 5,
 * a 16-byte aligned address, the arrays, channels and pixels per column in range), then zeros. */
DRV_API CUresult cuTensorMapEncodeIm2col(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    (void)tensorDataType;
    (void)globalStrides;
    (void)interleave;
    (void)swizzle;
    (void)l2Promotion;
    (void)oobFill;
    if (tensorMap == NULL || globalAddress == NULL || globalDim == NULL ||
        pixelBoxLowerCorner == NULL || pixelBoxUpperCorner == NULL || elementStrides == NULL ||
        tensorRank < 3 || tensorRank > 5 || ((uintptr_t)globalAddress & 15) != 0 ||
        channelsPerPixel == 0 || channelsPerPixel > 256 || pixelsPerColumn == 0 ||
        pixelsPerColumn > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    memset(tensorMap, 0, sizeof *tensorMap);
    return CUDA_SUCCESS;
}
