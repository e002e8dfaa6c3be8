/* util.c — small allocation and string helpers shared by libkeel's files. */
#include "base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void keel__oom(void)
{
    fputs("keel: out of memory\n", stderr);
    abort();
}

static void *must(void *q)
{
    if (!q) keel__oom();
    return q;
}

/* realloc(p, 0) and calloc(0, ...) may return NULL legitimately: both always ask for at least a byte. */
void *keel__xrealloc(void *p, size_t n) { return must(realloc(p, n ? n : 1)); }
void *keel__xcalloc(size_t n, size_t size) { return must(calloc(n ? n : 1, size ? size : 1)); }

char *keel__strdup(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *c = keel__xrealloc(NULL, n);
    memcpy(c, s, n);
    return c;
}

char *keel__vstrfmt(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        n = 0;
    char *s = keel__xrealloc(NULL, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *keel__strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = keel__vstrfmt(fmt, ap);
    va_end(ap);
    return s;
}

bool keel__utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p++;
        if (c < 0x80) continue;
        int more;
        unsigned min, cp;
        if ((c & 0xe0) == 0xc0) more = 1, min = 0x80, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0) more = 2, min = 0x800, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0) more = 3, min = 0x10000, cp = c & 0x07;
        else return false;
        for (int i = 0; i < more; i++, p++) {
            if ((*p & 0xc0) != 0x80) return false; /* also stops at the NUL */
            cp = cp << 6 | (*p & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false; /* overlong, surrogate */
    }
    return true;
}
