/* progress.c — the status line of a long load on a terminal: the program's default load
 * progress hook (keel_load_progress_default), so check, cook, run, the REPL and keel.load in
 * scripts all show it. A scene of 10 MB or more shows `reading FILE (N MB)...`, then a line
 * redrawn in place with `\r` (bytes read, percent, entities built, rate), then what it took;
 * nothing when stderr is not a terminal. KEEL_PROGRESS=1 shows it for every load, terminal or
 * not (tests, logs); KEEL_PROGRESS=0 never. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

#define BIG_FILE (10u * 1024u * 1024u)

static struct {
    int depth;     /* loads under way: one started inside another's hooks draws nothing */
    bool shown;    /* the outermost load has a line */
    int percent;   /* the last one drawn */
    double started;
} line;

/* 0: never; 1: big files on a terminal; 2: every load (KEEL_PROGRESS=1). */
static int mode(void)
{
    static int m = -1;
    if (m < 0) {
        const char *e = getenv("KEEL_PROGRESS");
        if (e && *e == '1') m = 2;
        else if (e && *e == '0') m = 0;
        else m = isatty(STDERR_FILENO) ? 1 : 0;
    }
    return m;
}

static void draw(const keel_load_progress *p, const char *name)
{
    double mb = (double)p->bytes / 1e6, secs = keel_cli_now() - line.started;
    fprintf(stderr, "\r\33[Kreading %s: %.1f of %.1f MB (%d%%), %zu entit%s, %.1f MB/s", name, mb,
            (double)p->total / 1e6, line.percent, p->entities, p->entities == 1 ? "y" : "ies",
            secs > 0 ? mb / secs : 0);
    fflush(stderr);
}

void keel_cli_progress(void *ctx, const keel_load_progress *p)
{
    (void)ctx;
    const char *name = p->file ? p->file : "scene";
    if (p->bytes == 0 && !p->done) { /* a load starts */
        if (++line.depth > 1) return;
        int m = mode();
        line.shown = m == 2 || (m == 1 && p->total >= BIG_FILE);
        if (!line.shown) return;
        line.started = keel_cli_now();
        line.percent = -1;
        fprintf(stderr, "\rreading %s (%.1f MB)...", name, (double)p->total / 1e6);
        fflush(stderr);
        return;
    }
    if (line.depth == 0) return; /* a hook set after its start */
    if (line.depth > 1 || !line.shown) {
        if (p->done) line.depth--;
        return;
    }
    if (p->done) {
        line.depth = 0;
        line.shown = false;
        double mb = (double)p->bytes / 1e6, secs = keel_cli_now() - line.started;
        /* the line replaced by what it took: a big load's time is worth knowing */
        fprintf(stderr, "\r\33[K%s: %.1f MB read in %.1f s (%.1f MB/s), %zu entit%s\n", name, mb, secs,
                secs > 0 ? mb / secs : 0, p->entities, p->entities == 1 ? "y" : "ies");
        fflush(stderr);
        return;
    }
    int percent = p->total ? (int)((double)p->bytes * 100.0 / (double)p->total) : 100;
    if (percent == line.percent) return; /* at most a hundred redraws */
    line.percent = percent;
    draw(p, name);
}
