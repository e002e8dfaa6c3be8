/* io.h — the syscall seam under every file keel writes (tests swap it to inject faults). */
#ifndef KEEL_IO_H
#define KEEL_IO_H

#include <sys/types.h>

struct keel__io_ops {
    int (*open)(const char *path, int flags, mode_t mode);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    int (*fsync)(int fd);
    int (*close)(int fd);
    int (*rename)(const char *from, const char *to);
    int (*unlink)(const char *path);
};
/* NULL puts the real syscalls back. */
void keel__io_set_ops(const struct keel__io_ops *ops);
const struct keel__io_ops *keel__io_default_ops(void);

#endif
