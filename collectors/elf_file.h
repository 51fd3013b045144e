/* collectors/elf_file.h: reading an ELF64 little-endian file defensively, for the symbolizer and
 * the DWARF line reader: bounded preads into private buffers, every offset and size checked
 * against the file; never mapped (a file truncated on disk while mapped would SIGBUS the host
 * process). Also: knowing a file again (the same inode, size and mtime) when it is reopened by
 * path, so that no descriptor stays open in the target between lookups. */
#ifndef SYNCSPY_ELF_FILE_H
#define SYNCSPY_ELF_FILE_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ELF_MAX_SMALL_BYTES (1u << 16) /* notes, .gnu_debuglink, section names */

struct elf_file {
    int fd;
    uint64_t size;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh;
    size_t shnum;
    char *shstr; /* section names, NUL-terminated copy, or NULL */
    uint64_t shstr_size;
};

/* Which file a path named when it was read: device, inode, size, modification time. */
struct file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

/* All len bytes at off, retrying on EINTR: 0, or -1 on an error or a short file. */
int read_at(int fd, void *buf, size_t len, uint64_t off);

/* Opens path and reads its headers and section table: 0, or -1 (f closed) when it is not a
 * regular ELF64 little-endian ET_EXEC/ET_DYN file we can read. */
int elf_open(struct elf_file *f, const char *path);
void elf_close(struct elf_file *f);

bool elf_in_file(const struct elf_file *f, uint64_t off, uint64_t len);

/* A malloc'd copy of [off, off + len) with one NUL byte appended, or NULL (out of the file, over
 * max_len, or unreadable). */
char *elf_read_range(const struct elf_file *f, uint64_t off, uint64_t len, uint64_t max_len);

const char *elf_section_name(const struct elf_file *f, const Elf64_Shdr *sh);

/* The first section named name that has bytes in the file (not SHT_NOBITS), or NULL. */
const Elf64_Shdr *elf_find_section(const struct elf_file *f, const char *name);

/* The identity of the open file fd: 0, or -1. */
int file_id_of(int fd, struct file_id *out);

/* Opens path read-only when it is still the file id describes: a descriptor, or -1. */
int open_same_file(const char *path, const struct file_id *id);

#endif
