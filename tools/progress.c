/* progress.c — the status line of long work on a terminal: a scene of 10 MB or more being
 * read (check, cook, run, repl), its size and, once done, how long it took; nothing when
 * stderr is not a terminal. The reader reports no progress of its own, so no percent. */
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define BIG_FILE (10u * 1024u * 1024u)

static double started;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool keel_cli_progress_begin(const char *path)
{
    struct stat st;
    if (!isatty(STDERR_FILENO) || stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < BIG_FILE)
        return false;
    fprintf(stderr, "\rreading %s (%.1f MB)...", path, (double)st.st_size / 1e6);
    fflush(stderr);
    started = now();
    return true;
}

void keel_cli_progress_end(bool shown, const char *path)
{
    if (!shown) return;
    struct stat st;
    double mb = stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0;
    double secs = now() - started;
    /* the line replaced by what it took: a big load's time is worth knowing */
    fprintf(stderr, "\r\33[K%s: %.1f MB read in %.1f s (%.1f MB/s)\n", path, mb, secs, secs > 0 ? mb / secs : 0);
    fflush(stderr);
}
