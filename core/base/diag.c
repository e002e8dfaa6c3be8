/* diag.c — status names and diagnostic lists (code, message, path, file:line:col). */
#include "base/util.h"
#include "base/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *keel_status_name(keel_status s)
{
    switch (s) {
    case KEEL_OK: return "OK";
    case KEEL_NOT_FOUND: return "NotFound";
    case KEEL_UNSUPPORTED: return "Unsupported";
    case KEEL_PROTECTED_ENTITY: return "ProtectedEntity";
    case KEEL_INVALID_OPERATION: return "InvalidOperation";
    case KEEL_INVALID_ARGUMENT: return "InvalidArgument";
    case KEEL_LIMIT_EXCEEDED: return "LimitExceeded";
    case KEEL_PARSE_ERROR: return "ParseError";
    case KEEL_IO_ERROR: return "IOError";
    case KEEL_CONFLICT: return "Conflict";
    case KEEL_DIVERGED: return "Diverged";
    }
    return "Unknown";
}

void keel_diags_init(keel_diags *d)
{
    memset(d, 0, sizeof *d);
}

void keel_diags_free(keel_diags *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++) {
        free(d->items[i].message);
        free(d->items[i].path);
        free(d->items[i].file);
    }
    free(d->items);
    memset(d, 0, sizeof *d);
}

static keel_diag *diags_push(keel_diags *d)
{
    keel_diag *g = KEEL__VEC_PUSH_SLOT(d->items, d->count, d->cap, 4);
    memset(g, 0, sizeof *g);
    return g;
}

static void summary_text(keel_diag *g)
{
    free(g->message);
    g->message = keel__strfmt("and %zu more %s%s: %s (the first %d diagnostics are listed)", g->more,
                              g->severity == KEEL_SEV_WARNING ? "warning" : "error", g->more == 1 ? "" : "s",
                              keel_status_name(g->code), KEEL_DIAGS_LISTED);
}

/* Counts `n` diagnostics of this severity and code that are not listed. Summaries are
 * appended once the list is full, so they are among its last items (at most one per
 * severity and code: 2 * 11). */
static void summarise(keel_diags *d, keel_severity sev, keel_status code, size_t n, const char *file)
{
    size_t tail = 2 * (KEEL_STATUS_LAST_ + 1);
    for (size_t i = d->count; i-- > 0 && d->count - i <= tail;) {
        keel_diag *g = &d->items[i];
        if (g->more && g->severity == sev && g->code == code) {
            g->more += n;
            summary_text(g);
            return;
        }
    }
    keel_diag *g = diags_push(d);
    g->code = code;
    g->severity = sev;
    g->path = keel__strdup("");
    g->file = file ? keel__strdup(file) : NULL;
    g->more = n;
    summary_text(g);
}

static void count(keel_diags *d, keel_severity sev, size_t n)
{
    if (sev == KEEL_SEV_ERROR)
        d->errors += n;
    else
        d->warnings += n;
}

keel_status keel_diag_add(keel_diags *d, keel_severity sev, keel_status code,
                          const char *path, const char *file, int line, int col,
                          const char *fmt, ...)
{
    if (!d)
        return code;
    count(d, sev, 1);
    if (d->count >= KEEL_DIAGS_LISTED) {
        summarise(d, sev, code, 1, file);
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    char *msg = keel__vstrfmt(fmt, ap);
    va_end(ap);

    keel_diag *g = diags_push(d);
    g->code = code;
    g->severity = sev;
    g->message = msg;
    g->path = keel__strdup(path ? path : "");
    g->file = file ? keel__strdup(file) : NULL;
    g->line = line;
    g->col = col;
    return code;
}

keel_status keel_diags_status(const keel_diags *d)
{
    if (!d)
        return KEEL_OK;
    for (size_t i = 0; i < d->count; i++)
        if (d->items[i].severity == KEEL_SEV_ERROR)
            return d->items[i].code;
    return KEEL_OK;
}

/* "a.b" + "c" -> "a.b.c"; "a" + "[2].x" -> "a[2].x"; either side empty -> the other. */
static char *join_path(const char *prefix, const char *path)
{
    if (!prefix || !*prefix)
        return keel__strdup(path);
    if (!path || !*path)
        return keel__strdup(prefix);
    return keel__strfmt("%s%s%s", prefix, path[0] == '[' ? "" : ".", path);
}

void keel_diags_append(keel_diags *dst, keel_diags *src, const char *prefix)
{
    if (!src)
        return;
    if (!dst) {
        keel_diags_free(src);
        return;
    }
    for (size_t i = 0; i < src->count; i++) {
        keel_diag *s = &src->items[i];
        count(dst, s->severity, s->more ? s->more : 1);
        if (s->more || dst->count >= KEEL_DIAGS_LISTED) {
            summarise(dst, s->severity, s->code, s->more ? s->more : 1, s->file);
            free(s->message);
            free(s->path);
            free(s->file);
            continue;
        }
        keel_diag *g = diags_push(dst);
        *g = *s;
        if (prefix && *prefix) {
            g->path = join_path(prefix, s->path);
            free(s->path);
        }
    }
    free(src->items);
    memset(src, 0, sizeof *src);
}

const char *keel_diag_format(const keel_diag *g, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return buf;
    buf[0] = '\0';
    size_t at = 0;
#define PUT(...)                                                            \
    do {                                                                    \
        if (at < cap) {                                                     \
            int n_ = snprintf(buf + at, cap - at, __VA_ARGS__);             \
            if (n_ > 0)                                                     \
                at += (size_t)n_ < cap - at ? (size_t)n_ : cap - at - 1;    \
        }                                                                   \
    } while (0)
    if (g->file && *g->file) {
        if (g->line > 0)
            PUT("%s:%d:%d: ", g->file, g->line, g->col > 0 ? g->col : 1);
        else
            PUT("%s: ", g->file);
    } else if (g->line > 0) {
        PUT("%d:%d: ", g->line, g->col > 0 ? g->col : 1); /* keel_scene_parse without a file name */
    }
    PUT("%s: %s: %s", g->severity == KEEL_SEV_WARNING ? "warning" : "error",
        keel_status_name(g->code), g->message ? g->message : "");
    if (g->path && *g->path)
        PUT(" (at %s)", g->path);
#undef PUT
    return buf;
}
