/* yaml_read.c — libyaml events to a keel_node tree, with limits and the refusals of a scene file. */
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/util.h"
#include "base/vec.h"
#include "files/yaml_read.h"

/* ---- arena: a whole document's nodes freed at once ---- */

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
} chunk;

struct keel__arena {
    chunk *head;
};

keel__arena *keel__arena_new(void)
{
    keel__arena *a = keel__xrealloc(NULL, sizeof *a);
    a->head = NULL;
    return a;
}

void keel__arena_free(keel__arena *a)
{
    if (!a) return;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

/* Empties `a` for reuse, keeping one ordinary chunk (the per-item arena of a stream). */
static void arena_reset(keel__arena *a)
{
    chunk *keep = NULL;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        if (!keep && c->cap == (1u << 20)) {
            keep = c;
            continue;
        }
        free(c);
    }
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->head = keep;
}

/* A new chunk for `n` bytes (rounded), its start taken. */
static void *arena_grow(keel__arena *a, size_t n)
{
    size_t cap = n > (1u << 20) ? n : (1u << 20);
    chunk *c = keel__xrealloc(NULL, sizeof *c + cap);
    c->used = n;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
    return c->data;
}

static inline void *arena_alloc(keel__arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    chunk *c = a->head;
    if (!c || c->cap - c->used < n) return arena_grow(a, n);
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void *keel__arena_alloc(keel__arena *a, size_t n)
{
    return arena_alloc(a, n);
}

void keel__arena_reset(keel__arena *a)
{
    arena_reset(a);
}

/* One collection under construction. Items accumulate in a scratch array
 * (kept across uses at that depth) and move into the node when it ends. */
typedef struct frame {
    keel_node node;     /* kind, style, line, col; items/count filled at the end */
    keel_node *buf;     /* scratch: items being collected */
    size_t n, cap;
    size_t limit;       /* items it may hold (length_limit, fixed when it starts) */
} frame;

typedef struct reader {
    const keel_limits *lim;
    const char *file;
    keel_diags *d;
    frame *stack;
    size_t depth, stack_cap;
    keel_node *result;
    keel__arena *arena; /* NULL: every node part is its own malloc */
    const keel__yaml_stream *stream;
    bool streaming;     /* stack[1] is the top-level `entities` list, its items handed over one by one */
    keel__arena *item_arena; /* the item being read, while streaming */
    bool failed;
    keel_status code; /* the first error's */
} reader;

/* "entities[3].components[1].body" for the position being read. */
static char *current_path(const reader *r)
{
    size_t cap = 0, n = 0;
    char *s = NULL;
    KEEL__VEC_RESERVE(s, n, cap, 1, 64);
    s[0] = '\0';
    for (size_t i = 0; i < r->depth; i++) {
        const frame *f = &r->stack[i];
        char part[96];
        int k;
        if (f->node.kind == KEEL_NODE_SEQ) {
            k = snprintf(part, sizeof part, "[%zu]", f->n);
        } else {
            if (f->n % 2 == 0) break; /* reading a key: the path ends at the map */
            const keel_node *key = &f->buf[f->n - 1];
            k = snprintf(part, sizeof part, "%s%.80s", n ? "." : "", key->text ? key->text : "?");
        }
        if (k < 0) k = 0;
        if ((size_t)k >= sizeof part) k = sizeof part - 1;
        KEEL__VEC_RESERVE(s, n, cap, (size_t)k + 1, 64);
        memcpy(s + n, part, (size_t)k);
        n += (size_t)k;
        s[n] = '\0';
    }
    return s;
}

static void fail_at(reader *r, keel_status code, int line, int col, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *path = current_path(r);
    keel_diag_add(r->d, KEEL_SEV_ERROR, code, path, r->file, line, col, "%s", msg);
    free(path);
    if (!r->code) r->code = code;
    r->failed = true;
}

static const char *const core_tags[] = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
};

/* 0: no tag or "!" (non-specific); 1..7: the core tag; -1: refused. */
static int tag_index(const yaml_char_t *tag)
{
    if (!tag || strcmp((const char *)tag, "!") == 0) return 0;
    for (int i = 0; i < 7; i++)
        if (strcmp((const char *)tag, core_tags[i]) == 0) return i + 1;
    return -1;
}

static keel_node_style scalar_style(yaml_scalar_style_t s)
{
    switch (s) {
    case YAML_SINGLE_QUOTED_SCALAR_STYLE: return KEEL_STYLE_SINGLE;
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return KEEL_STYLE_DOUBLE;
    case YAML_LITERAL_SCALAR_STYLE: return KEEL_STYLE_LITERAL;
    case YAML_FOLDED_SCALAR_STYLE: return KEEL_STYLE_FOLDED;
    default: return KEEL_STYLE_PLAIN;
    }
}

static inline void *alloc(reader *r, size_t n)
{
    if (r->streaming && r->depth >= 2) return arena_alloc(r->item_arena, n);
    return r->arena ? arena_alloc(r->arena, n) : keel__xrealloc(NULL, n);
}

static bool is_entities_key(const reader *r)
{
    if (r->depth != 1 || r->stack[0].node.kind != KEEL_NODE_MAP || r->stack[0].n % 2 != 1) return false;
    const keel_node *key = &r->stack[0].buf[r->stack[0].n - 1];
    return key->len == 8 && memcmp(key->text, "entities", 8) == 0;
}

/* Moves a finished node (struct) into the collection on top, or makes it the result. */
static void attach(reader *r, keel_node *node)
{
    if (r->depth == 0) {
        r->result = alloc(r, sizeof *r->result);
        *r->result = *node;
        return;
    }
    frame *f = &r->stack[r->depth - 1];
    if (r->streaming && r->depth == 2) { /* an item of the streamed list: handed over, then dropped */
        r->stream->item(r->stream->ctx, node, f->n);
        f->n++;
        arena_reset(r->item_arena);
        return;
    }
    KEEL__VEC_RESERVE(f->buf, f->n, f->cap, 1, 8);
    f->buf[f->n++] = *node;
}

/* The top-level `entities` list is bounded by the entities limit instead: a
 * scene may hold more entities than any other collection may hold items. */
static size_t length_limit(const reader *r)
{
    if (r->depth == 2 && r->stack[0].node.kind == KEEL_NODE_MAP && r->stack[1].node.kind == KEEL_NODE_SEQ &&
        r->stack[0].n % 2 == 1) {
        const keel_node *key = &r->stack[0].buf[r->stack[0].n - 1];
        if (key->len == 8 && memcmp(key->text, "entities", 8) == 0 && r->lim->entities > r->lim->collection_length)
            return r->lim->entities;
    }
    return r->lim->collection_length;
}

/* Room for one more item (a key, in a map) in the collection on top. */
static inline bool check_collection_length(reader *r, int line, int col)
{
    frame *f = &r->stack[r->depth - 1];
    size_t items = f->node.kind == KEEL_NODE_MAP ? f->n / 2 : f->n;
    if (items >= f->limit) {
        fail_at(r, KEEL_LIMIT_EXCEEDED, line, col, "collection longer than the limit (%zu items)", f->limit);
        return false;
    }
    return true;
}

static bool on_scalar(reader *r, const yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    if (ev->data.scalar.anchor) {
        fail_at(r, KEEL_PARSE_ERROR, line, col, "anchors are not allowed");
        return false;
    }
    int t = tag_index(ev->data.scalar.tag);
    if (t < 0 || t == 6 || t == 7) {
        fail_at(r, KEEL_PARSE_ERROR, line, col, "tag %s is not allowed (only the core schema tags are)",
                (const char *)ev->data.scalar.tag);
        return false;
    }
    size_t len = ev->data.scalar.length;
    if (len > r->lim->string_length) {
        fail_at(r, KEEL_LIMIT_EXCEEDED, line, col, "string longer than the limit (%zu bytes)",
                r->lim->string_length);
        return false;
    }
    if (r->depth > 0) { /* an item of a list, or a key */
        const frame *top = &r->stack[r->depth - 1];
        if ((top->node.kind == KEEL_NODE_SEQ || top->n % 2 == 0) && !check_collection_length(r, line, col))
            return false;
    }
    keel_node n;
    memset(&n, 0, sizeof n);
    n.kind = KEEL_NODE_SCALAR;
    n.style = scalar_style(ev->data.scalar.style);
    /* A core tag fixes the meaning: !!str is a string whatever it looks like,
     * the others read as plain scalars of their type. */
    if (t == 1 && n.style == KEEL_STYLE_PLAIN) n.style = KEEL_STYLE_DOUBLE;
    if (t >= 2 && t <= 5) n.style = KEEL_STYLE_PLAIN;
    n.line = line;
    n.col = col;
    n.text = alloc(r, len + 1);
    memcpy(n.text, ev->data.scalar.value, len);
    n.text[len] = '\0';
    n.len = len;
    attach(r, &n);
    return true;
}

static bool on_start(reader *r, const yaml_event_t *ev, keel_node_kind kind)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    const yaml_char_t *anchor, *tag;
    bool flow;
    if (kind == KEEL_NODE_MAP) {
        anchor = ev->data.mapping_start.anchor;
        tag = ev->data.mapping_start.tag;
        flow = ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
    } else {
        anchor = ev->data.sequence_start.anchor;
        tag = ev->data.sequence_start.tag;
        flow = ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
    }
    if (anchor) {
        fail_at(r, KEEL_PARSE_ERROR, line, col, "anchors are not allowed");
        return false;
    }
    int t = tag_index(tag);
    if (t < 0 || (t != 0 && t != (kind == KEEL_NODE_MAP ? 6 : 7))) {
        fail_at(r, KEEL_PARSE_ERROR, line, col, "tag %s is not allowed (only the core schema tags are)",
                (const char *)tag);
        return false;
    }
    if (r->depth > 0) {
        frame *top = &r->stack[r->depth - 1];
        if (top->node.kind == KEEL_NODE_MAP && top->n % 2 == 0) {
            fail_at(r, KEEL_PARSE_ERROR, line, col, "map keys must be scalars");
            return false;
        }
        if (top->node.kind == KEEL_NODE_SEQ && !check_collection_length(r, line, col)) return false;
    }
    if (r->depth >= r->lim->nesting_depth) {
        fail_at(r, KEEL_LIMIT_EXCEEDED, line, col, "nesting deeper than the limit (%zu)", r->lim->nesting_depth);
        return false;
    }
    if (r->depth == r->stack_cap) {
        size_t old = r->stack_cap;
        KEEL__VEC_RESERVE(r->stack, r->depth, r->stack_cap, 1, 16);
        memset(r->stack + old, 0, (r->stack_cap - old) * sizeof *r->stack);
    }
    bool stream = kind == KEEL_NODE_SEQ && r->stream && !r->item_arena && is_entities_key(r);
    frame *f = &r->stack[r->depth++];
    memset(&f->node, 0, sizeof f->node);
    f->node.kind = kind;
    f->node.style = flow ? KEEL_STYLE_FLOW : KEEL_STYLE_BLOCK;
    f->node.line = line;
    f->node.col = col;
    f->n = 0;
    f->limit = length_limit(r);
    if (stream) { /* asked once: a second `entities` key fails as a duplicate anyway */
        r->item_arena = keel__arena_new();
        r->streaming = r->stream->begin(r->stream->ctx, &f->node, r->stack[0].buf, (r->stack[0].n - 1) / 2);
    }
    return true;
}

static int key_cmp(const keel_node *p, const keel_node *q)
{
    size_t n = p->len < q->len ? p->len : q->len;
    int c = memcmp(p->text, q->text, n);
    if (c) return c;
    return p->len < q->len ? -1 : p->len > q->len;
}

static inline bool key_equal(const keel_node *p, const keel_node *q)
{
    return p->len == q->len && (p->len == 0 || (p->text[0] == q->text[0] && memcmp(p->text, q->text, p->len) == 0));
}

static void report_duplicate(reader *r, const keel_node *first, const keel_node *again)
{
    char *path = current_path(r);
    keel_diag_add(r->d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, path, r->file, again->line, again->col,
                  "duplicate key '%.80s' (first at line %d)", again->text, first->line);
    free(path);
    if (!r->code) r->code = KEEL_PARSE_ERROR;
    r->failed = true;
}

/* Duplicate keys of a finished map; the later occurrence is reported. Small
 * maps compare pairwise; long ones are merge-sorted by (text, position) so a
 * hostile file cannot make this quadratic. */
static bool check_duplicates(reader *r, const frame *f)
{
    size_t pairs = f->n / 2;
    const keel_node *base = f->buf;
    if (pairs <= 32) {
        for (size_t i = 1; i < pairs; i++)
            for (size_t j = 0; j < i; j++)
                if (key_equal(&base[2 * j], &base[2 * i])) {
                    report_duplicate(r, &base[2 * j], &base[2 * i]);
                    return false;
                }
        return true;
    }
    size_t *idx = keel__xrealloc(NULL, pairs * sizeof *idx);
    size_t *tmp = keel__xrealloc(NULL, pairs * sizeof *tmp);
    for (size_t m = 0; m < pairs; m++) idx[m] = m;
    for (size_t width = 1; width < pairs; width *= 2) {
        for (size_t lo = 0; lo < pairs; lo += 2 * width) {
            size_t mid = lo + width < pairs ? lo + width : pairs;
            size_t hi = lo + 2 * width < pairs ? lo + 2 * width : pairs;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                tmp[o++] = key_cmp(&base[2 * idx[a]], &base[2 * idx[b]]) <= 0 ? idx[a++] : idx[b++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, pairs * sizeof *idx);
    }
    bool ok = true;
    for (size_t m = 1; m < pairs && ok; m++)
        if (key_cmp(&base[2 * idx[m - 1]], &base[2 * idx[m]]) == 0) {
            report_duplicate(r, &base[2 * idx[m - 1]], &base[2 * idx[m]]);
            ok = false;
        }
    free(tmp);
    free(idx);
    return ok;
}

static bool on_end(reader *r)
{
    frame *f = &r->stack[r->depth - 1];
    if (f->node.kind == KEEL_NODE_MAP && !check_duplicates(r, f)) return false;
    keel_node n = f->node;
    n.count = f->node.kind == KEEL_NODE_MAP ? f->n / 2 : f->n;
    if (r->streaming && r->depth == 2) { /* the streamed list: its count, its items already gone */
        r->streaming = false;
    } else if (f->n) {
        n.items = alloc(r, f->n * sizeof *n.items);
        memcpy(n.items, f->buf, f->n * sizeof *n.items);
    }
    f->n = 0;
    r->depth--;
    attach(r, &n);
    return true;
}

static void free_frames(reader *r)
{
    for (size_t i = 0; i < r->stack_cap; i++) {
        frame *f = &r->stack[i];
        if (i < r->depth && !r->arena)
            for (size_t j = 0; j < f->n; j++) keel_node_clear(&f->buf[j]);
        free(f->buf);
    }
    free(r->stack);
}

keel_status keel__yaml_parse(const char *text, size_t len, const keel_limits *lim, const char *file,
                             keel_node **out, keel_diags *d)
{
    return keel__yaml_parse_arena(text, len, lim, file, NULL, out, d);
}

keel_status keel__yaml_parse_arena(const char *text, size_t len, const keel_limits *lim, const char *file,
                                   keel__arena *arena, keel_node **out, keel_diags *d)
{
    return keel__yaml_parse_stream(text, len, lim, file, arena, NULL, out, d);
}

keel_status keel__yaml_parse_stream(const char *text, size_t len, const keel_limits *lim, const char *file,
                                    keel__arena *arena, const keel__yaml_stream *stream, keel_node **out,
                                    keel_diags *d)
{
    keel_limits deflim;
    if (!lim) {
        deflim = keel_limits_default();
        lim = &deflim;
    }
    *out = NULL;
    if (len > lim->document_size)
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_LIMIT_EXCEEDED, "", file, 0, 0,
                             "document larger than the limit (%zu bytes)", lim->document_size);
    reader r;
    memset(&r, 0, sizeof r);
    r.lim = lim;
    r.file = file;
    r.d = d;
    r.arena = arena;
    r.stream = arena ? stream : NULL; /* items are read into an arena of their own */
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) abort();
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int documents = 0;
    bool done = false;
    /* libyaml decodes its input ahead of the events in 16 KiB blocks: its offset is what is read */
    size_t report_at = r.stream && r.stream->progress ? KEEL__YAML_PROGRESS_STEP : SIZE_MAX;
    while (!done && !r.failed) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            const yaml_mark_t *m = p.problem_mark.line || p.problem_mark.column ? &p.problem_mark : &p.context_mark;
            fail_at(&r, KEEL_PARSE_ERROR, (int)m->line + 1, (int)m->column + 1, "%s%s%s",
                    p.problem ? p.problem : "malformed YAML", p.context ? " " : "", p.context ? p.context : "");
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1)
                fail_at(&r, KEEL_PARSE_ERROR, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                        "multiple documents are not allowed");
            break;
        case YAML_ALIAS_EVENT:
            fail_at(&r, KEEL_PARSE_ERROR, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
                    "aliases are not allowed");
            break;
        case YAML_SCALAR_EVENT: on_scalar(&r, &ev); break;
        case YAML_SEQUENCE_START_EVENT: on_start(&r, &ev, KEEL_NODE_SEQ); break;
        case YAML_MAPPING_START_EVENT: on_start(&r, &ev, KEEL_NODE_MAP); break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: on_end(&r); break;
        default: break;
        }
        yaml_event_delete(&ev);
        if (p.offset >= report_at && !r.failed) {
            report_at = p.offset + KEEL__YAML_PROGRESS_STEP;
            r.stream->progress(r.stream->ctx, p.offset < len ? p.offset : len);
        }
    }
    yaml_parser_delete(&p);
    free_frames(&r);
    keel__arena_free(r.item_arena);
    if (r.failed) {
        if (!arena) keel_node_free(r.result);
        return r.code;
    }
    if (!r.result) { /* empty stream: null */
        keel_node empty;
        memset(&empty, 0, sizeof empty);
        empty.kind = KEEL_NODE_SCALAR;
        empty.style = KEEL_STYLE_PLAIN;
        empty.text = alloc(&r, 1);
        empty.text[0] = '\0';
        attach(&r, &empty);
    }
    *out = r.result;
    return KEEL_OK;
}
