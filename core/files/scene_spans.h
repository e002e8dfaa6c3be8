/* scene_spans.h — a scene document's top-level `entities` block list cut into one text span per
 * item by looking at line starts only, no YAML parsed (scene_spans.c). */
#ifndef KEEL_SCENE_SPANS_H
#define KEEL_SCENE_SPANS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct keel__span_at {
    size_t start; /* byte offset of a line start */
    int line;     /* its 1-based line */
} keel__span_at;

typedef struct keel__spans {
    size_t n;          /* items */
    keel__span_at *at; /* n + 1: item i is text[at[i].start .. at[i + 1].start); at[n]: the tail */
    int key_line;      /* the `entities:` key's line (at column 1) */
    int indent;        /* spaces before each item's "- " */
} keel__spans;

/* False (nothing allocated) when the text is not laid out as the cut needs: an `entities:` key
 * at column 1 followed by block items `- X` at one indent, each item's other lines indented
 * deeper (or blank, or comments), ending at a line at column 1 or at the end; no \r or Unicode
 * line breaks, no UTF-16 mark. True is a guess a parser must confirm: a multi-line quoted
 * scalar can fake a line start. */
bool keel__spans_cut(const char *text, size_t len, keel__spans *out);
void keel__spans_free(keel__spans *s);

#endif
