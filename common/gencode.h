/* common/gencode.h: the files of Python code torch.compile generates, by their names alone (no
 * state, no I/O: the agent asks while naming a frame, the readers while choosing a row's line).
 *   FX (Dynamo's graphs, AOTAutograd's, backend aot_eager): "<eval_with_key>.N", a pseudo-file.
 *   Inductor's output code: a module it writes into its cache folder (TORCHINDUCTOR_CACHE_DIR,
 *   /tmp/torchinductor_USER by default) as DIR/XY/cXY....py, the name "c" and a lower-case
 *   base32 hash of the code, XY its second and third characters (torch/_inductor/codecache.py
 *   get_path, the same from torch 2.6 to 2.15). */
#ifndef SYNCSPY_GENCODE_H
#define SYNCSPY_GENCODE_H

#include <stdbool.h>
#include <string.h>

static inline bool gencode_is_fx(const char *file)
{
    return file && strncmp(file, "<eval_with_key>", 15) == 0;
}

/* The base name of Inductor's output code (NULL when file is not one). */
static inline const char *gencode_inductor_name(const char *file)
{
    if (!file)
        return NULL;
    const char *name = strrchr(file, '/');
    if (!name || name - file < 3)
        return NULL;
    name++;
    size_t n = strlen(name);
    if (n < 3 + 32 || n > 3 + 80 || strcmp(name + n - 3, ".py") != 0 || name[0] != 'c')
        return NULL;
    for (size_t i = 1; i < n - 3; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
            return NULL;
    /* its folder: "/XY/" */
    if (name[-1] != '/' || name[-2] != name[2] || name[-3] != name[1] ||
        (name - file > 3 && name[-4] != '/'))
        return NULL;
    return name;
}

static inline bool gencode_file(const char *file)
{
    return gencode_is_fx(file) || gencode_inductor_name(file) != NULL;
}

/* torch.compile's own work, by the file of a Python frame of a sync's own stack: Dynamo
 * converting a frame (its whole compile chain runs under convert_frame.py), AOTAutograd and
 * Inductor compiling (graph_compile.py, jit_compile_runtime_wrappers.py before 2.8,
 * compile_fx.py: constant folding's .item(), pattern init's copies), Inductor loading code and
 * autotuning (codecache.py, select_algorithm.py, autotune_process.py, the benchmarker that
 * times a new kernel's configs at its first run). The agent asks when it first sees a stack
 * (the step's and the thread's figures leave such syncs out), the readers when they choose a
 * row (output/hints.c hints_compile_work): one list for both. */
static inline bool gencode_compile_work_file(const char *file)
{
    static const char *const files[] = {
        "torch/_dynamo/convert_frame.py",
        "torch/_functorch/_aot_autograd/graph_compile.py",
        "torch/_functorch/_aot_autograd/jit_compile_runtime_wrappers.py",
        "torch/_inductor/compile_fx.py",
        "torch/_inductor/codecache.py",
        "torch/_inductor/select_algorithm.py",
        "torch/_inductor/autotune_process.py",
        "torch/_inductor/runtime/benchmarking.py"};
    if (!file)
        return false;
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        const char *at = strstr(file, files[k]);
        if (at && (at == file || at[-1] == '/') && !at[strlen(files[k])])
            return true;
    }
    return false;
}

#endif
