/* bench_yaml.c — scene YAML load and save against libyaml's own parse / emit of the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include <unistd.h>
#include <yaml.h>

#include "files/yaml_read.h" /* keel__yaml_parse_arena: the baseline emits the document's own tree */
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
/* not inlined: callgrind counts each side by its function (tools/bench/README) */
static __attribute__((noinline)) double raw_parse(const char *text, size_t len, size_t *events)
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
static __attribute__((noinline)) double raw_emit(const keel_node *doc, size_t *out_len)
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

/* The peak of one keel_scene_load in a fresh process (`bench_yaml --rss FILE`): nothing else
 * the bench built sits in its heap. Prints "file world peak" in bytes: the file's size, the
 * heap the loaded world holds, and the resident peak above where the process started. */
static int rss_child(const char *path)
{
    if (keel_init()) return 1;
    long rss0 = status_kib("VmRSS:");
    struct mallinfo2 m0 = mallinfo2();
    keel_world *w = NULL;
    if (keel_scene_load(path, NULL, &w, NULL)) return 1;
    long hwm = status_kib("VmHWM:");
    struct mallinfo2 m1 = mallinfo2();
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    size_t world = (m1.uordblks + m1.hblkhd) - (m0.uordblks + m0.hblkhd);
    printf("%ld %zu %ld\n", size, world, (hwm - rss0) * 1024);
    keel_world_free(w);
    keel_shutdown();
    return 0;
}

/* Runs rss_child on `text` saved to a temporary file. */
static bool load_rss(const char *text, size_t len, double *file, double *world, double *peak)
{
    char path[] = "/tmp/keel_bench_rss_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return false;
    bool ok = write(fd, text, len) == (ssize_t)len;
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/proc/%ld/exe --rss %s", (long)getpid(), path);
    FILE *p = ok ? popen(cmd, "r") : NULL;
    long long a = 0, b = 0, c = 0;
    ok = p && fscanf(p, "%lld %lld %lld", &a, &b, &c) == 3;
    if (p && pclose(p) != 0) ok = false;
    remove(path);
    *file = (double)a;
    *world = (double)b;
    *peak = (double)c;
    return ok;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--rss") == 0) return rss_child(argv[2]);
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

    fprintf(stderr, "bench_yaml: %zu entities, %.1f MiB of YAML, %zu events; dump %.3f s, load %.3f s, "
                    "libyaml parse %.3f s, emit %.3f s\n",
            N, mb, events, best_dump, best_load, best_parse, best_emit);
    row("yaml load", mb / best_load, mb / best_parse, "MB/s");
    row("yaml save", mb / best_dump, mb / best_emit, "MB/s");
    /* a load's resident peak in a fresh process, against the file plus the world it builds
     * (the target is a ratio of at most 2) */
    double file = 0, world = 0, peak = 0;
    if (load_rss(text, len, &file, &world, &peak)) {
        const double MiB = 1024.0 * 1024.0;
        row("yaml load rss", peak / MiB, (file + world) / MiB, "MiB peak");
        fprintf(stderr, "bench_yaml: load peak %.1f MiB for a %.1f MiB file and a %.1f MiB world (%.0f bytes per entity)\n",
                peak / MiB, file / MiB, world / MiB, peak / (double)N);
    } else {
        fprintf(stderr, "bench_yaml: the load rss child failed\n");
    }
    free(text);
    keel_shutdown();
    return 0;
}
