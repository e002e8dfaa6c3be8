/* io.c — reading whole files and writing them atomically (temp file, fsync, rename). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "io.h"

static int sys_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static ssize_t sys_write(int fd, const void *buf, size_t n) { return write(fd, buf, n); }
static int sys_fsync(int fd) { return fsync(fd); }
static int sys_close(int fd) { return close(fd); }
static int sys_rename(const char *from, const char *to) { return rename(from, to); }
static int sys_unlink(const char *path) { return unlink(path); }

static const struct keel__io_ops default_ops = {
    sys_open, sys_write, sys_fsync, sys_close, sys_rename, sys_unlink,
};
/* Every syscall of the write path goes through here, so tests can fail any step. */
static const struct keel__io_ops *ops = &default_ops;

void keel__io_set_ops(const struct keel__io_ops *o) { ops = o ? o : &default_ops; }
const struct keel__io_ops *keel__io_default_ops(void) { return &default_ops; }

keel_status keel_read_file(const char *path, size_t max, char **out, size_t *len, keel_diags *d)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_IO_ERROR, "", path, 0, 0,
                             "cannot open %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = keel__xrealloc(NULL, cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = keel__xrealloc(buf, cap + 1);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > max) {
            free(buf);
            fclose(f);
            return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_LIMIT_EXCEEDED, "", path, 0, 0,
                                 "%s is larger than the document size limit (%zu bytes)", path, max);
        }
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_IO_ERROR, "", path, 0, 0,
                             "cannot read %s: %s", path, strerror(e));
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return KEEL_OK;
}

/* The directory part of `path` ("." when none), for the temp file and its fsync. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return keel__strdup(".");
    if (slash == path) return keel__strdup("/");
    return keel__strfmt("%.*s", (int)(slash - path), path);
}

static keel_status fail(keel_diags *d, const char *path, const char *step, int err)
{
    return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_IO_ERROR, "", path, 0, 0,
                         "cannot save %s: %s failed: %s", path, step, strerror(err));
}

keel_status keel_write_atomic(const char *path, const void *data, size_t len, keel_diags *d)
{
    static unsigned long counter;
    char *tmp = keel__strfmt("%s.tmp.%ld.%lu", path, (long)getpid(), ++counter);
    int fd = ops->open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(d, path, "open", e);
    }
    const char *p = data;
    size_t left = len;
    const char *step = NULL;
    int err = 0;
    while (left > 0) {
        ssize_t n = ops->write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            step = "write";
            err = n < 0 ? errno : EIO;
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    if (!step && ops->fsync(fd) != 0) {
        step = "fsync";
        err = errno;
    }
    if (ops->close(fd) != 0 && !step) {
        step = "close";
        err = errno;
    }
    if (!step && ops->rename(tmp, path) != 0) {
        step = "rename";
        err = errno;
    }
    if (step) {
        ops->unlink(tmp);
        free(tmp);
        return fail(d, path, step, err);
    }
    free(tmp);
    /* Make the rename itself durable. A directory that cannot be opened
     * (some file systems) is not an error: the data is already in place. */
    char *dir = dir_of(path);
    int dfd = ops->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    free(dir);
    if (dfd >= 0) {
        ops->fsync(dfd);
        ops->close(dfd);
    }
    return KEEL_OK;
}
