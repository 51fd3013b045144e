/* output/source.h: one line of a source file, for the report to show under a user frame (as
 * py-spy and memray show the code of a frame). Read when the report is rendered (at exit in the
 * target, or in the CLI): never on a recording path. Plain open/read with a bounded read, no
 * stdio; a file that is not a regular file, cannot be read, or is shorter: no line. */
#ifndef SYNCSPY_SOURCE_H
#define SYNCSPY_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads at most this much of a file looking for a line. */
#define SOURCE_READ_MAX (16u << 20)

/* Line `line` (1-based) of `path` without its indentation and trailing blanks, cut to buflen - 1
 * bytes (a multi-byte character is not split), into buf. False when there is none (no such file,
 * not a regular file, the line is past SOURCE_READ_MAX, or blank). */
bool source_line(const char *path, uint32_t line, char *buf, size_t buflen);

#endif
