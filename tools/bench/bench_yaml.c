/* bench_yaml.c — scene YAML load and save against libyaml's own parse / emit of the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "yaml_read.h" /* keel__yaml_parse_arena: the baseline emits the document's own tree */
#include "bench.h"

/* N = 100,000 (DESIGN.md "Benchmarks"); BENCH_N overrides it for profiling. */
static size_t N = 100000;

static keel_world *build_world(void)
{
    keel_world *w = keel_world_new("bench");
    keel_kind_id t = keel_kind_find("core:transform"), m = keel_kind_find("core:mesh_renderer"),
                 l = keel_kind_find("core:point_light");
    keel_kind_id kinds[3] = { t, m, l };
    for (size_t i = 0; i < N; i++) {
        keel_entity e;
        char name[32];
        snprintf(name, sizeof name, "Entity %zu", i);
        if (keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL)) abort();
        for (int k = 0; k < 3; k++) {
            keel_comp c;
            if (keel_add(w, e, kinds[k], NULL, &c, NULL, NULL)) abort();
            if (k == 0) {
                keel_transform *tr = keel_record(w, c);
                tr->position[0] = (double)i * 0.5;
                tr->position[1] = 1.25;
                tr->position[2] = -(double)(i % 97) / 3.0;
            }
        }
    }
    return w;
}

/* libyaml alone: the text to events, nothing kept. */
static double raw_parse(const char *text, size_t len, size_t *events)
{
    double t0 = now();
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    size_t n = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) abort();
        yaml_event_type_t type = ev.type;
        yaml_event_delete(&ev);
        n++;
        if (type == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&p);
    if (events) *events = n;
    return now() - t0;
}

typedef struct sink { char *buf; size_t len, cap; } sink;

static int sink_write(void *data, unsigned char *bytes, size_t size)
{
    sink *s = data;
    if (s->len + size > s->cap) {
        while (s->len + size > s->cap) s->cap = s->cap ? s->cap * 2 : 1 << 20;
        s->buf = realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, bytes, size);
    s->len += size;
    return 1;
}

static void emit_event(yaml_emitter_t *em, yaml_event_t *ev)
{
    if (!yaml_emitter_emit(em, ev)) abort();
}

/* The same events as the document holds, from a tree read beforehand. */
static void emit_tree(yaml_emitter_t *em, const keel_node *n)
{
    yaml_event_t ev;
    if (n->kind == KEEL_NODE_SCALAR) {
        yaml_scalar_style_t st = n->style == KEEL_STYLE_DOUBLE ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                 : n->style == KEEL_STYLE_SINGLE ? YAML_SINGLE_QUOTED_SCALAR_STYLE
                                                                 : YAML_PLAIN_SCALAR_STYLE;
        yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)n->text, (int)n->len, 1, 1, st);
        emit_event(em, &ev);
        return;
    }
    bool flow = n->style == KEEL_STYLE_FLOW;
    if (n->kind == KEEL_NODE_SEQ) {
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                             flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
        emit_event(em, &ev);
        for (size_t i = 0; i < n->count; i++) emit_tree(em, &n->items[i]);
        yaml_sequence_end_event_initialize(&ev);
    } else {
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                            flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
        emit_event(em, &ev);
        for (size_t i = 0; i < 2 * n->count; i++) emit_tree(em, &n->items[i]);
        yaml_mapping_end_event_initialize(&ev);
    }
    emit_event(em, &ev);
}

/* libyaml alone: emitting the document's events (same emitter settings as keel's). */
static double raw_emit(const keel_node *doc, size_t *out_len)
{
    double t0 = now();
    yaml_emitter_t em;
    sink s = { 0 };
    yaml_emitter_initialize(&em);
    yaml_emitter_set_output(&em, sink_write, &s);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_emitter_set_indent(&em, 2);
    yaml_event_t ev;
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    emit_event(&em, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    emit_event(&em, &ev);
    emit_tree(&em, doc);
    yaml_document_end_event_initialize(&ev, 1);
    emit_event(&em, &ev);
    yaml_stream_end_event_initialize(&ev);
    emit_event(&em, &ev);
    yaml_emitter_flush(&em);
    yaml_emitter_delete(&em);
    if (out_len) *out_len = s.len;
    free(s.buf);
    return now() - t0;
}

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0) v = atol(line + strlen(key));
    if (f) fclose(f);
    return v;
}

/* Resets VmHWM to the current RSS (Linux >= 4.0), so the peak is the load's own. */
static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

int main(void)
{
    if (getenv("BENCH_N")) N = (size_t)atol(getenv("BENCH_N"));
    if (keel_init()) return 1;
    keel_world *w = build_world();
    char *text = NULL;
    size_t len = 0;
    double best_dump = 1e9;
    for (int r = 0; r < 3; r++) {
        free(text);
        double t0 = now();
        if (keel_scene_dump(w, &text, &len, NULL)) abort();
        double dt = now() - t0;
        if (dt < best_dump) best_dump = dt;
    }
    keel_world_free(w);
    if (getenv("BENCH_SAVE")) keel_write_atomic(getenv("BENCH_SAVE"), text, len, NULL);
    double mb = (double)len / (1024.0 * 1024.0);

    double best_parse = 1e9, best_emit = 1e9;
    size_t events = 0, emitted = 0;
    keel__arena *arena = keel__arena_new();
    keel_node *doc = NULL;
    if (keel__yaml_parse_arena(text, len, NULL, NULL, arena, &doc, NULL)) abort();
    for (int r = 0; r < 3; r++) {
        double a = raw_parse(text, len, &events);
        double b = raw_emit(doc, &emitted);
        if (a < best_parse) best_parse = a;
        if (b < best_emit) best_emit = b;
    }
    keel__arena_free(arena);
    if (emitted != len) fprintf(stderr, "bench_yaml: raw emit gave %zu bytes, keel %zu\n", emitted, len);

    long rss_before = status_kib("VmRSS:");
    reset_peak();
    double best_load = 1e9;
    for (int r = 0; r < 3; r++) {
        keel_world *w2 = NULL;
        double t0 = now();
        if (keel_scene_parse(text, len, NULL, &w2, NULL)) abort();
        double dt = now() - t0;
        if (dt < best_load) best_load = dt;
        if (keel_world_entity_count(w2) != N) abort();
        keel_world_free(w2);
    }
    long peak = status_kib("VmHWM:");

    fprintf(stderr, "bench_yaml: %zu entities, %.1f MiB of YAML, %zu events; dump %.3f s, load %.3f s, "
                    "libyaml parse %.3f s, emit %.3f s\n",
            N, mb, events, best_dump, best_load, best_parse, best_emit);
    row("yaml load", mb / best_load, mb / best_parse, "MB/s");
    row("yaml save", mb / best_dump, mb / best_emit, "MB/s");
    /* peak resident during a load, over what the process held before it (the text, the libraries) */
    row("yaml load rss", (double)(peak - rss_before) / 1024.0, -1, "MiB peak");
    fprintf(stderr, "bench_yaml: load peak %.1f MiB above %.1f MiB resident (%.0f bytes per entity)\n",
            (double)(peak - rss_before) / 1024.0, (double)rss_before / 1024.0,
            (double)(peak - rss_before) * 1024.0 / N);
    free(text);
    keel_shutdown();
    return 0;
}
