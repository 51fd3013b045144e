/* collectors/dwarf_lines.h: the source file and line of an address from an ELF file's DWARF:
 * .debug_aranges names the unit, the unit's first DIE its line table, the table the row. Read
 * with bounded preads (compressed sections inflated as a stream, through libz found at run time),
 * never mapped; what stays between lookups is an index of a few bytes per unit, never a
 * section (libdw kept 17 MB for one lookup in libc's compressed debug file and 35 MB for 100 in
 * libpython). Answers as elfutils 0.188's dwfl_module_getsrc + dwfl_lineinfo for the same file.
 * Off the hot path; one thread at a time per index. */
#ifndef SYNCSPY_DWARF_LINES_H
#define SYNCSPY_DWARF_LINES_H

#include <stdbool.h>
#include <stdint.h>

#include "collectors/elf_file.h"

struct dwarf_lines;

/* f has DWARF of its own (what makes libdw read it rather than look for a separate debug file):
 * a .debug_info, .debug_line or .debug_frame section, plain or .zdebug_. */
bool dwarf_file_has_dwarf(const struct elf_file *f);

/* Indexes the DWARF of the ELF file at path (opened and closed here; reopened for each lookup,
 * and only while it is the same file). NULL when it has no DWARF this reader can use. */
struct dwarf_lines *dwarf_lines_open(const char *path);

/* Finds libz now (dlopen: loads it if the process has none), not at the first compressed
 * section: see symbolizer_load_helpers. */
void dwarf_lines_load_zlib(void);

/* The file and line of addr (a link-time address). 0 when found: *file lives until
 * dwarf_lines_free; -1 otherwise. */
int dwarf_lines_find(struct dwarf_lines *d, uint64_t addr, const char **file, uint32_t *line);

void dwarf_lines_free(struct dwarf_lines *d);

#endif
