/* io.c — reading whole files and writing them atomically (temp file, fsync, rename). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "base/vec.h"
#include "base/io.h"

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
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        KEEL__VEC_RESERVE(buf, n, cap, 2, 4097); /* a byte to read into, and the NUL */
        size_t got = fread(buf + n, 1, cap - n - 1, f);
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

/* When process `pid` started, in seconds since the epoch (/proc/PID/stat's starttime after
 * /proc/stat's btime); false when it is not known. */
static bool proc_start(long pid, double *out)
{
    char name[64], buf[1024];
    snprintf(name, sizeof name, "/proc/%ld/stat", pid);
    FILE *f = fopen(name, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long ticks = 0;
    /* after ")": state, then fields 4..21; starttime is field 22 */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &ticks) != 1)
        return false;
    f = fopen("/proc/stat", "r");
    if (!f) return false;
    long long btime = -1;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &btime) == 1) break;
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (btime < 0 || hz <= 0) return false;
    *out = (double)btime + (double)ticks / (double)hz;
    return true;
}

/* "NAME.tmp.PID.SUFFIX" (SUFFIX: hex digits; older keels wrote a decimal counter) for the
 * file name `base`: the owner's PID, or 0 when `entry` is not such a temp. */
static long temp_owner(const char *entry, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(entry, base, bl) != 0 || strncmp(entry + bl, ".tmp.", 5) != 0) return 0;
    const char *p = entry + bl + 5;
    long pid = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (pid > 1L << 30) return 0;
        pid = pid * 10 + (*p - '0');
    }
    if (*p++ != '.' || !*p || strspn(p, "0123456789abcdef") != strlen(p)) return 0;
    return pid;
}

/* Removes temps of `path` that a killed save left: their process is gone, or the process
 * now holding that PID started after the temp was last written (the PID was reused). A
 * live save's temp is never older than its process, so it is left alone. The 2 s margin
 * covers btime's whole-second precision. */
static void remove_stale_temps(const char *path)
{
    char *dir = dir_of(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    DIR *dd = opendir(dir);
    struct dirent *de;
    while (dd && (de = readdir(dd))) {
        long pid = temp_owner(de->d_name, base);
        if (pid <= 0) continue;
        char *full = keel__strfmt("%s/%s", dir, de->d_name);
        struct stat st;
        double started;
        bool stale = false;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
                stale = true;
            else if (proc_start(pid, &started))
                stale = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9 < started - 2.0;
        }
        if (stale) ops->unlink(full);
        free(full);
    }
    if (dd) closedir(dd);
    free(dir);
}

/* Opens a new temp beside `path`: PATH.tmp.PID.RANDOM, created exclusively. A name that
 * exists already (a killed save's, or a clash) is not an error: another is drawn. */
static int open_temp(const char *path, char **tmp)
{
    int fd = -1;
    for (int attempt = 0; attempt < 16; attempt++) {
        keel_uuid r = keel_uuid_v4();
        uint64_t x;
        memcpy(&x, r.bytes, sizeof x);
        *tmp = keel__strfmt("%s.tmp.%ld.%016llx", path, (long)getpid(), (unsigned long long)x);
        fd = ops->open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) return fd;
        free(*tmp);
        *tmp = NULL;
    }
    errno = EEXIST;
    return fd;
}

keel_status keel_write_atomic(const char *path, const void *data, size_t len, keel_diags *d)
{
    remove_stale_temps(path);
    char *tmp = NULL;
    int fd = open_temp(path, &tmp);
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
