/* scene_spans.c — the top-level `entities` list of a scene document cut into per-item text spans
 * from line starts alone (scene_spans.h).
 *
 * The merge uses it to skip parsing what a side left byte-for-byte as base had it. A block
 * list's items start at lines `INDENT- X`; every other line of an item is indented deeper, is
 * blank, or is a comment; the list ends at the first other line at column 1. The cut walks
 * lines with memchr and looks at their first INDENT + 1 bytes only. It cannot see inside
 * scalars (a quoted one spanning lines can hold anything), so what it answers is a guess that
 * the caller confirms with a parser: against base's parsed items, and by parsing each span of a
 * side that base does not have byte for byte. Line breaks other than \n (which YAML counts as
 * lines too) and UTF-16 texts are refused outright so that line numbers agree with libyaml's. */
#include "files/scene_spans.h"

#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

static bool odd_breaks(const char *t, size_t len)
{
    if (len && ((unsigned char)t[0] == 0xFE || (unsigned char)t[0] == 0xFF)) return true; /* UTF-16 marks */
    if (memchr(t, '\r', len)) return true;
    const unsigned char *u = (const unsigned char *)t, *end = u + len;
    for (const unsigned char *p = u; (p = memchr(p, 0xC2, (size_t)(end - p))) != NULL; p++)
        if (p + 1 < end && p[1] == 0x85) return true; /* NEL */
    for (const unsigned char *p = u; (p = memchr(p, 0xE2, (size_t)(end - p))) != NULL; p++)
        if (p + 2 < end && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) return true; /* LS, PS */
    return false;
}

/* Blank or only a comment (any indent). */
static bool idle_line(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] == ' ') i++;
    return i == n || s[i] == '#';
}

/* `entities:` at column 1, nothing after it but spaces and a comment. */
static bool entities_key(const char *s, size_t n)
{
    if (n < 9 || memcmp(s, "entities:", 9) != 0) return false;
    size_t i = 9;
    while (i < n && s[i] == ' ') i++;
    return i == n || (s[i] == '#' && i > 9);
}

/* `INDENT- X` with X neither a space nor a comment: the item's first key is on this line. */
static bool item_start(const char *s, size_t n, int indent)
{
    size_t i = (size_t)indent;
    for (size_t k = 0; k < i; k++)
        if (k >= n || s[k] != ' ') return false;
    return i + 2 < n && s[i] == '-' && s[i + 1] == ' ' && s[i + 2] != ' ' && s[i + 2] != '#' && s[i + 2] != '\t';
}

static void push(keel__spans *s, size_t *cap, size_t start, int line)
{
    KEEL__VEC_RESERVE(s->at, s->n, *cap, 1, 1024);
    s->at[s->n++] = (keel__span_at){ start, line };
}

bool keel__spans_cut(const char *text, size_t len, keel__spans *out)
{
    memset(out, 0, sizeof *out);
    if (odd_breaks(text, len)) return false;
    size_t pos = 0, cap = 0;
    int line = 1;
    enum { KEY, FIRST, ITEMS } state = KEY;
    while (pos < len) {
        const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        if (state == KEY) {
            if (entities_key(s, n)) {
                out->key_line = line;
                state = FIRST;
            }
        } else if (state == FIRST) {
            if (!idle_line(s, n)) {
                size_t i = 0;
                while (i < n && s[i] == ' ') i++;
                out->indent = (int)i;
                if (!item_start(s, n, out->indent)) break;
                push(out, &cap, pos, line);
                state = ITEMS;
            }
        } else {
            size_t ind = (size_t)out->indent;
            /* deeper than the items: the item goes on (the common case, decided on ind + 1 bytes) */
            bool deeper = n > ind && s[ind] == ' ';
            for (size_t k = 0; deeper && k < ind; k++) deeper = s[k] == ' ';
            if (!deeper && !idle_line(s, n)) {
                if (item_start(s, n, out->indent)) {
                    push(out, &cap, pos, line);
                } else if (s[0] != ' ' && s[0] != '\t') {
                    push(out, &cap, pos, line); /* the tail, at column 1 */
                    out->n--;
                    return true;
                } else {
                    break; /* between the items' column and column 1, or a tab: not cut */
                }
            } else if (!deeper && n && s[0] == '\t') {
                break;
            }
        }
        pos = nl ? pos + n + 1 : len;
        line++;
    }
    if (state == ITEMS && pos >= len) {
        push(out, &cap, len, line);
        out->n--;
        return true;
    }
    keel__spans_free(out);
    return false;
}

void keel__spans_free(keel__spans *s)
{
    free(s->at);
    memset(s, 0, sizeof *s);
}
