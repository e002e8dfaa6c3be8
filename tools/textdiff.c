/* textdiff.c — a unified diff of two texts for `keel fmt --check`, by the system's `diff -u`
 * (diffutils) run on two temporary files: no diff algorithm of keel's own to get wrong. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

/* Writes `len` bytes to a new temporary file; its malloc'd path, or NULL. */
static char *temp_with(const char *text, size_t len)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    size_t n = strlen(dir) + sizeof "/keel-fmt-XXXXXX";
    char *path = malloc(n);
    if (!path) abort(); /* keel treats OOM as fatal */
    snprintf(path, n, "%s/keel-fmt-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    close(fd);
    if (done < len) {
        unlink(path);
        free(path);
        return NULL;
    }
    return path;
}

bool keel_cli_print_diff(const char *label, const char *old, size_t oldlen, const char *text, size_t len)
{
    char *a = temp_with(old, oldlen), *b = a ? temp_with(text, len) : NULL;
    bool shown = false;
    if (a && b) {
        size_t n = strlen(label) + sizeof " (keel fmt)";
        char *after = malloc(n);
        if (!after) abort();
        snprintf(after, n, "%s (keel fmt)", label);
        char *argv[] = { "diff", "-u", "--label", (char *)label, "--label", after, a, b, NULL };
        fflush(stdout); /* diff writes to the same stdout */
        pid_t pid;
        int status;
        if (posix_spawnp(&pid, "diff", NULL, NULL, argv, environ) == 0 && waitpid(pid, &status, 0) == pid)
            shown = WIFEXITED(status) && WEXITSTATUS(status) == 1; /* 1: the files differ, as they do */
        free(after);
    }
    if (a) unlink(a);
    if (b) unlink(b);
    free(a);
    free(b);
    return shown;
}
