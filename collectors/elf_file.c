/* collectors/elf_file.c: reading ELF files defensively (see elf_file.h). Off the hot path (the
 * flusher thread, exit): may allocate and open files; never maps them, never prints. */
#include "collectors/elf_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SECTIONS (1u << 20) /* a hostile e_shnum cannot make us allocate more */

int read_at(int fd, void *buf, size_t len, uint64_t off)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

bool elf_in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
    return off <= f->size && len <= f->size - off;
}

char *elf_read_range(const struct elf_file *f, uint64_t off, uint64_t len, uint64_t max_len)
{
    if (!elf_in_file(f, off, len) || len > max_len)
        return NULL;
    char *buf = malloc((size_t)len + 1);
    if (!buf)
        return NULL;
    if (read_at(f->fd, buf, (size_t)len, off) != 0) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

void elf_close(struct elf_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    free(f->sh);
    free(f->shstr);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

static int elf_read_headers(struct elf_file *f)
{
    const unsigned char *id = f->eh.e_ident;
    if (memcmp(id, ELFMAG, SELFMAG) != 0 || id[EI_CLASS] != ELFCLASS64 ||
        id[EI_DATA] != ELFDATA2LSB || id[EI_VERSION] != EV_CURRENT)
        return -1; /* ELFCLASS64 little-endian only */
    if (f->eh.e_type != ET_EXEC && f->eh.e_type != ET_DYN)
        return -1;
    if (f->eh.e_shoff == 0 || f->eh.e_shentsize != sizeof(Elf64_Shdr))
        return -1;
    Elf64_Shdr first;
    if (!elf_in_file(f, f->eh.e_shoff, sizeof first) ||
        read_at(f->fd, &first, sizeof first, f->eh.e_shoff) != 0)
        return -1;
    /* Extended numbering (gABI): e_shnum 0 and e_shstrndx SHN_XINDEX defer to section 0. */
    uint64_t shnum = f->eh.e_shnum ? f->eh.e_shnum : first.sh_size;
    uint64_t shstrndx = f->eh.e_shstrndx == SHN_XINDEX ? first.sh_link : f->eh.e_shstrndx;
    if (shnum == 0 || shnum > MAX_SECTIONS || !elf_in_file(f, f->eh.e_shoff, shnum * sizeof first))
        return -1;
    f->sh = malloc((size_t)shnum * sizeof first);
    if (!f->sh || read_at(f->fd, f->sh, (size_t)shnum * sizeof first, f->eh.e_shoff) != 0)
        return -1;
    f->shnum = (size_t)shnum;
    if (shstrndx != SHN_UNDEF && shstrndx < shnum && f->sh[shstrndx].sh_type == SHT_STRTAB) {
        f->shstr = elf_read_range(f, f->sh[shstrndx].sh_offset, f->sh[shstrndx].sh_size,
                                  ELF_MAX_SMALL_BYTES);
        if (f->shstr)
            f->shstr_size = f->sh[shstrndx].sh_size;
    }
    return 0;
}

int elf_open(struct elf_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return -1;
    struct stat st;
    if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof f->eh)
        goto fail;
    f->size = (uint64_t)st.st_size;
    if (read_at(f->fd, &f->eh, sizeof f->eh, 0) != 0 || elf_read_headers(f) != 0)
        goto fail;
    return 0;
fail:
    elf_close(f);
    return -1;
}

const char *elf_section_name(const struct elf_file *f, const Elf64_Shdr *sh)
{
    if (!f->shstr || sh->sh_name >= f->shstr_size)
        return "";
    return f->shstr + sh->sh_name; /* the copy ends with a NUL */
}

const Elf64_Shdr *elf_find_section(const struct elf_file *f, const char *name)
{
    for (size_t i = 1; i < f->shnum; i++)
        if (f->sh[i].sh_type != SHT_NOBITS && strcmp(elf_section_name(f, &f->sh[i]), name) == 0)
            return &f->sh[i];
    return NULL;
}

int file_id_of(int fd, struct file_id *out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    *out = (struct file_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    return 0;
}

int open_same_file(const char *path, const struct file_id *id)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct file_id now;
    if (fd >= 0 && (file_id_of(fd, &now) != 0 || now.dev != id->dev || now.ino != id->ino ||
                    now.size != id->size || now.mtime.tv_sec != id->mtime.tv_sec ||
                    now.mtime.tv_nsec != id->mtime.tv_nsec)) {
        close(fd);
        fd = -1;
    }
    return fd;
}
