/* collectors/symbolize.h: addresses -> (module, function, file:line). Runs off the hot path
 * (on the flusher thread, at exit): may allocate and open files, but must never crash on a strange
 * ELF, never run code from the objects it reads, and never call back into the agent. */
#ifndef SYNCSPY_SYMBOLIZE_H
#define SYNCSPY_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct sym_info {
    const char *module;   /* path of the object ("[unknown]" when no object maps pc) */
    const char *function; /* demangled name, or NULL when unknown */
    const char *file;     /* source file from DWARF, or NULL */
    uint32_t line;        /* 0 when unknown */
    uint64_t offset;      /* pc - load base of module (module-relative address) */
};

/* Snapshots the loaded objects (dl_iterate_phdr). NULL on allocation failure. */
struct symbolizer *symbolizer_new(void);

/* Looks up (dlopen, once per process) what symbolizing loads at run time: libstdc++'s
 * demangler and libz. Call on a program thread before any symbolizer runs on another: a fork
 * while another thread is inside dlopen leaves the child's loader inconsistent, and a dlopen in
 * that child aborts it ("Inconsistency detected by ld.so ... RT_CONSISTENT"), so the agent's
 * flusher must never be the first to load them. */
void symbolizer_load_helpers(void);

/* Re-reads the list of loaded objects (objects loaded since; objects already known are kept
 * even if they were dlclose'd meanwhile). */
void symbolizer_refresh(struct symbolizer *s);

/* Resolves pc, which must already point INSIDE the call instruction (a return address minus
 * one). Strings in *out are owned by the symbolizer and live until symbolizer_free. Returns 0
 * when a module was found, -1 otherwise (out->module is then "[unknown]"). */
int symbolizer_resolve(struct symbolizer *s, uintptr_t pc, struct sym_info *out);

void symbolizer_free(struct symbolizer *s);

/* Resolves offset, a module-relative address (as in sym_info.offset), in the ELF file at path as
 * it is on disk now: for a tool reading a finished process's objects, and for tests
 * that feed it damaged files. Same ownership; cached per (path, offset). Returns 0 when path is
 * an ELF file the symbolizer reads (out->function may still be NULL), -1 otherwise. */
int symbolizer_resolve_file(struct symbolizer *s, const char *path, uint64_t offset,
                            struct sym_info *out);

/* file:line lookups (collectors/dwarf_lines.h): on (default) or off. Call before the first
 * resolve; results already cached keep what they had. */
void symbolizer_set_lines(struct symbolizer *s, int enabled);

/* Demangles an Itanium C++ name into buf; returns buf, or name itself when it is not mangled or
 * cannot be demangled. */
const char *sym_demangle(const char *name, char *buf, size_t buflen);

#endif
