/* test_persist.c — save games: a played scene saved as a difference and loaded over a fresh baseline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <time.h>

#include "keel_test.h"
#include "keel.h"
#include "base/bytes.h"
#include "files/slotfile.h"
#include "model/field.h"

static const char *const moods[] = { "calm", "angry" };
static const keel_field_desc stats_fields[] = {
    { .key = "hp", .type = KEEL_T_INT, .has_default = true, .def = { .type = KEEL_T_INT, .as.i = 10 } },
    { .key = "title", .type = KEEL_T_STRING },
    { .key = "mood", .type = KEEL_T_ENUM, .choices = moods, .choice_count = 2 },
    { .key = "target", .type = KEEL_T_ENTITY, .has_default = true, .def = { .type = KEEL_T_ENTITY, .nil = true } },
    { .key = "ticks", .type = KEEL_T_INT, .flags = KEEL_FIELD_READONLY },
};

static int group_setup(void **state)
{
    keel_init();
    keel_kind_desc k = { .key = "test:stats", .version = 1, .multiplicity = KEEL_ONE, .fields = stats_fields,
                         .field_count = sizeof stats_fields / sizeof *stats_fields };
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);
    return 0;
}

static int group_teardown(void **state)
{
    keel_shutdown();
    return 0;
}

static const char *const scene =
    "keel: 1\n"
    "scene:\n  uuid: 5a5e0000-0000-4000-8000-000000000001\n  name: Demo\n"
    "root:\n  - kind: core:world_settings\n    version: 1\n    slot: 0\n    body:\n      exposure: 2\n"
    "entities:\n"
    "  - uuid: 00000000-0000-4000-8000-000000000001\n    name: Player\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        slot: 0\n        body:\n          position: [0, 1.5, 0]\n"
    "      - kind: core:audio_source\n        version: 1\n        slot: 0\n        body: {}\n"
    "      - kind: core:audio_source\n        version: 1\n        slot: 2\n        body:\n          volume: 0.5\n"
    "      - kind: test:stats\n        version: 1\n        slot: 0\n        body:\n          title: hero\n"
    "  - uuid: 00000000-0000-4000-8000-000000000002\n    name: Doomed\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        slot: 0\n        body: {}\n"
    "  - uuid: 00000000-0000-4000-8000-000000000003\n    name: Orphan\n"
    "    parent: 00000000-0000-4000-8000-000000000002\n    components: []\n"
    "  - uuid: 00000000-0000-4000-8000-000000000004\n    name: Crate\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        slot: 0\n        body: {}\n"
    "  - uuid: 00000000-0000-4000-8000-000000000005\n    name: Lamp\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        slot: 0\n        body: {}\n"
    "      - kind: core:point_light\n        version: 1\n        slot: 0\n        body:\n          range: 4\n"
    "  - uuid: 00000000-0000-4000-8000-000000000006\n    name: A\n"
    "    parent: 00000000-0000-4000-8000-000000000005\n    components: []\n"
    "  - uuid: 00000000-0000-4000-8000-000000000007\n    name: B\n"
    "    parent: 00000000-0000-4000-8000-000000000005\n    components: []\n"
    "  - uuid: 00000000-0000-4000-8000-000000000008\n    name: Mod\n    components:\n"
    "      - kind: mod:winch\n        version: 3\n        slot: 0\n        body:\n          rope: {length: 12, 'knots': [1, 2]}\n";

/* ---- helpers ---- */

static keel_world *parse(const char *text)
{
    keel_world *w = NULL;
    keel_status s = keel_scene_parse(text, strlen(text), NULL, &w, NULL);
    assert_int_equal(s, KEEL_OK);
    return w;
}

static char *dump(const keel_world *w)
{
    char *out = NULL;
    size_t len;
    assert_int_equal(keel_scene_dump(w, &out, &len, NULL), KEEL_OK);
    return out;
}

static keel_entity named(keel_world *w, const char *name)
{
    keel_entity e = keel_find_name(w, name);
    assert_true(e != KEEL_NO_ENTITY);
    return e;
}

static keel_comp comp(keel_world *w, keel_entity e, const char *key, uint32_t slot)
{
    keel_comp c;
    assert_true(keel_get_comp(w, e, keel_kind_find(key), slot, &c));
    return c;
}

static void set_field(keel_world *w, keel_comp c, const char *field, keel_value v)
{
    int f = keel_kind_field(c.kind, field);
    assert_true(f >= 0);
    v.type = keel_kind_describe(c.kind)->fields[f].type;
    assert_int_equal(keel__field_set(w, c, f, &v, true, NULL, NULL), KEEL_OK);
}

static char tmp_path[256];

static int setup(void **state)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/keel_persist_%d.sav", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    unlink(tmp_path);
    return 0;
}

/* Everything the dump does not show: component and entity enabled flags, membership order. */
static void assert_same_world(keel_world *a, keel_world *b)
{
    char *da = dump(a), *db = dump(b);
    if (strcmp(da, db) != 0) {
        FILE *f = fopen("/tmp/keel_persist_a.yaml", "w");
        fputs(da, f);
        fclose(f);
        f = fopen("/tmp/keel_persist_b.yaml", "w");
        fputs(db, f);
        fclose(f);
    }
    assert_string_equal(da, db);
    free(da);
    free(db);
    keel_entity ea = 0, eb = 0;
    for (;;) {
        ea = keel_next(a, ea);
        eb = keel_next(b, eb);
        assert_int_equal(ea == 0, eb == 0);
        if (!ea) break;
        assert_true(keel_uuid_equal(keel_entity_uuid(a, ea), keel_entity_uuid(b, eb)));
        assert_int_equal(keel_entity_enabled(a, ea), keel_entity_enabled(b, eb));
        assert_int_equal(keel_member_count(a, ea), keel_member_count(b, eb));
        for (size_t i = 0; i < keel_member_count(a, ea); i++) {
            keel_member ma, mb;
            assert_true(keel_member_at(a, ea, i, &ma));
            assert_true(keel_member_at(b, eb, i, &mb));
            assert_string_equal(ma.key, mb.key);
            assert_int_equal(ma.slot, mb.slot);
            assert_int_equal(ma.enabled, mb.enabled);
            assert_int_equal(ma.loaded, mb.loaded);
            if (ma.loaded) {
                keel_node *x = keel_body_encode(a, (keel_comp){ ea, ma.kind, ma.slot }, true);
                keel_node *y = keel_body_encode(b, (keel_comp){ eb, mb.kind, mb.slot }, true);
                assert_true(keel_node_equal(x, y));
                keel_node_free(x);
                keel_node_free(y);
            }
        }
    }
}

static keel_slot_info fixed_info(void)
{
    keel_slot_info i = { .title = "Chapter 2", .saved_at = 1700000000, .play_seconds = 310.5 };
    return i;
}

static void save(keel_world *w, const keel_baseline *b)
{
    keel_slot_info info = fixed_info();
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_persist_save(w, b, tmp_path, &info, &d);
    if (s) print_error("%s\n", d.items[0].message);
    assert_int_equal(s, KEEL_OK);
    keel_diags_free(&d);
}

static void load_ok(keel_world *w)
{
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_persist_load(w, tmp_path, &d);
    if (s) print_error("%s at %s\n", d.items[0].message, d.items[0].path);
    assert_int_equal(s, KEEL_OK);
    keel_diags_free(&d);
}

/* Loads the slot over a fresh parse of the scene and checks it matches `w`. */
static void assert_reload_matches(keel_world *w)
{
    keel_world *fresh = parse(scene);
    load_ok(fresh);
    assert_same_world(fresh, w);
    keel_world_free(fresh);
}

/* Every kind of change a game makes. */
static void play(keel_world *w)
{
    keel_entity player = named(w, "Player"), lamp = named(w, "Lamp"), crate = named(w, "Crate");
    keel_entity spawned;
    assert_int_equal(keel_spawn(w, "Spawned", player, NULL, &spawned, NULL, NULL), KEEL_OK);
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    assert_int_equal(keel_add(w, spawned, keel_kind_find("core:transform"), &o, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, spawned, keel_kind_find("test:stats"), &o, NULL, NULL, NULL), KEEL_OK);
    keel_entity child;
    assert_int_equal(keel_spawn(w, "SpawnedChild", spawned, NULL, &child, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_destroy(w, named(w, "Doomed"), NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, player, keel_kind_find("core:audio_source"), &o, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_remove(w, player, "core:audio_source", 0, NULL, NULL), KEEL_OK);
    set_field(w, comp(w, player, "core:transform", 0), "position", (keel_value){ .as.v = { 4, 5.25, -6 } });
    keel_comp stats = comp(w, player, "test:stats", 0);
    set_field(w, stats, "hp", (keel_value){ .as.i = 3 });
    set_field(w, stats, "title", (keel_value){ .as.s = "fallen \"hero\"" });
    set_field(w, stats, "mood", (keel_value){ .as.i = 1 });
    set_field(w, stats, "target", (keel_value){ .as.u = keel_entity_uuid(w, spawned) });
    set_field(w, stats, "ticks", (keel_value){ .as.i = 99 });
    set_field(w, comp(w, spawned, "test:stats", 0), "hp", (keel_value){ .as.i = 77 });
    assert_int_equal(keel_reparent(w, crate, spawned, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_rename(w, lamp, "Lamp (broken)", NULL, NULL), KEEL_OK);
    assert_int_equal(keel_set_enabled(w, lamp, false, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(w, comp(w, lamp, "core:point_light", 0), false, NULL, NULL), KEEL_OK);
    set_field(w, comp(w, keel_world_root(w), "core:world_settings", 0), "exposure", (keel_value){ .as.f = 0.75 });
    /* A then B under Lamp becomes B then A */
    assert_int_equal(keel_reparent(w, named(w, "A"), lamp, NULL, NULL), KEEL_OK);
    /* a duplicate carries the unknown component through */
    keel_entity dup;
    assert_int_equal(keel_duplicate(w, named(w, "Mod"), KEEL_NO_ENTITY, &dup, NULL, NULL), KEEL_OK);
}

/* ---- tests ---- */

static void persist_played_scene_loads_over_fresh_baseline(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    play(w);
    save(w, b);
    keel_world *fresh = parse(scene);
    load_ok(fresh);
    assert_same_world(fresh, w);
    /* the target entity field resolves in the loaded world */
    keel_value v;
    keel_comp c = comp(fresh, named(fresh, "Player"), "test:stats", 0);
    assert_int_equal(keel_get(fresh, c, keel_kind_field(c.kind, "target"), &v, NULL), KEEL_OK);
    assert_true(keel_find(fresh, v.as.u) == named(fresh, "Spawned"));
    keel_world_free(fresh);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_baseline_serves_any_world_of_the_scene(void **state)
{
    keel_world *first = parse(scene);
    keel_baseline *b = keel_baseline_capture(first);
    keel_world_free(first); /* the baseline is a value: it outlives the world it came from */
    keel_world *w = parse(scene);
    play(w);
    save(w, b);
    assert_reload_matches(w);
    keel_world_free(w);
    keel_baseline_free(b);
}

/* A shipped game loads the cooked scene: a save taken over the YAML scene applies to it too. */
static void persist_save_applies_over_the_cooked_scene(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    void *cooked = NULL;
    size_t len = 0;
    keel_diags d;
    keel_diags_init(&d);
    /* mod:winch is unknown here and cannot be cooked: cook the scene without it */
    keel_world *src = parse(scene);
    assert_int_equal(keel_remove(src, named(src, "Mod"), "mod:winch", 0, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_remove(w, named(w, "Mod"), "mod:winch", 0, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_cook(src, NULL, &cooked, &len, &d), KEEL_OK);
    keel_world_free(src);
    keel_baseline_free(b);
    b = keel_baseline_capture(w);
    play(w);
    save(w, b);
    keel_world *shipped = NULL;
    assert_int_equal(keel_cook_read(cooked, len, NULL, &shipped, &d), KEEL_OK);
    load_ok(shipped);
    assert_same_world(shipped, w);
    keel_diags_free(&d);
    free(cooked);
    keel_world_free(shipped);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_unchanged_world_saves_nothing_to_apply(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    save(w, b);
    keel_world *fresh = parse(scene);
    uint64_t rev = keel_world_revision(fresh);
    load_ok(fresh);
    assert_int_equal(keel_world_revision(fresh), rev);
    keel_world_free(fresh);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_field_back_to_baseline_comes_back_as_baseline(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    keel_comp c = comp(w, named(w, "Player"), "test:stats", 0);
    set_field(w, c, "hp", (keel_value){ .as.i = 1 });
    set_field(w, c, "hp", (keel_value){ .as.i = 10 });
    set_field(w, c, "title", (keel_value){ .as.s = "changed" });
    save(w, b);
    assert_reload_matches(w);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_two_hundred_cycles_are_identical(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    play(w);
    save(w, b);
    size_t len0;
    char *first = NULL;
    assert_int_equal(keel_read_file(tmp_path, 1 << 20, &first, &len0, NULL), KEEL_OK);
    char *want = dump(w);
    for (int i = 0; i < 200; i++) {
        keel_world *fresh = parse(scene);
        load_ok(fresh);
        char *got = dump(fresh);
        assert_string_equal(got, want);
        free(got);
        save(fresh, b);
        char *again = NULL;
        size_t len;
        assert_int_equal(keel_read_file(tmp_path, 1 << 20, &again, &len, NULL), KEEL_OK);
        assert_int_equal(len, len0);
        assert_memory_equal(again, first, len);
        free(again);
        keel_world_free(fresh);
    }
    free(first);
    free(want);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_info_reads_slot_details_alone(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    keel_node *fields = keel_node_new_map();
    keel_node_put(fields, "difficulty", keel_node_new_scalar("hard: \"very\"\nreally", KEEL_STYLE_DOUBLE));
    keel_node_put(fields, "level", keel_node_new_scalar("3", KEEL_STYLE_PLAIN));
    keel_node_put(fields, "code", keel_node_new_scalar("310", KEEL_STYLE_DOUBLE));
    keel_node_put(fields, "hard_mode", keel_node_new_scalar("true", KEEL_STYLE_PLAIN));
    keel_slot_info info = { .title = "The \"end\"\n", .saved_at = 0, .play_seconds = 12.25, .fields = fields };
    assert_int_equal(keel_persist_save(w, b, tmp_path, &info, NULL), KEEL_OK);
    keel_slot_info got;
    assert_int_equal(keel_persist_info(tmp_path, &got, NULL), KEEL_OK);
    assert_string_equal(got.title, "The \"end\"\n");
    assert_true(got.saved_at > 1600000000); /* 0: now */
    assert_true(got.play_seconds == 12.25);
    assert_non_null(got.fields);
    assert_int_equal(got.fields->count, 4);
    assert_string_equal(keel_node_get(got.fields, "difficulty")->text, "hard: \"very\"\nreally");
    const keel_node *level = keel_node_get(got.fields, "level");
    int64_t n;
    assert_true(keel_node_as_int(level, &n));
    assert_int_equal(n, 3);
    assert_false(keel_node_as_int(keel_node_get(got.fields, "code"), &n)); /* stays a string */
    keel_slot_info_free(&got);

    /* details are readable even when the state behind them is damaged */
    FILE *f = fopen(tmp_path, "r+b");
    fseek(f, -6, SEEK_END);
    fputc('!', f);
    fclose(f);
    assert_int_equal(keel_persist_info(tmp_path, &got, NULL), KEEL_OK);
    assert_true(got.play_seconds == 12.25);
    keel_slot_info_free(&got);

    /* bad game field keys are refused */
    keel_node *bad = keel_node_new_map();
    keel_node_put(bad, "no spaces", keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    keel_slot_info binfo = { .title = "x", .fields = bad };
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_persist_save(w, b, tmp_path, &binfo, &d), KEEL_INVALID_ARGUMENT);
    assert_non_null(strstr(d.items[0].message, "letters, digits"));
    keel_diags_free(&d);
    keel_node_free(bad);
    keel_node_free(fields);

    keel_diags_init(&d);
    assert_int_equal(keel_persist_info("/nonexistent/keel.sav", &got, &d), KEEL_IO_ERROR);
    keel_diags_free(&d);
    keel_world_free(w);
    keel_baseline_free(b);
}

/* keel_persist_info refuses details over 1 MiB, so a save never writes them. */
static void persist_refuses_slot_details_over_the_limit(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    size_t n = (1u << 20) + 1;
    char *title = malloc(n + 1);
    memset(title, 't', n);
    title[n] = 0;
    keel_slot_info info = { .title = title, .saved_at = 1, .play_seconds = 1 };
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_persist_save(w, b, tmp_path, &info, &d), KEEL_LIMIT_EXCEEDED);
    assert_non_null(strstr(d.items[0].message, "slot details"));
    keel_diags_free(&d);
    assert_int_equal(access(tmp_path, F_OK), -1); /* nothing written */

    /* Just under the limit: saved, and both readers take it. */
    title[(1u << 20) - 100] = 0;
    assert_int_equal(keel_persist_save(w, b, tmp_path, &info, NULL), KEEL_OK);
    keel_slot_info got;
    assert_int_equal(keel_persist_info(tmp_path, &got, NULL), KEEL_OK);
    assert_int_equal(strlen(got.title), (1u << 20) - 100);
    keel_slot_info_free(&got);
    keel_world *fresh = parse(scene);
    load_ok(fresh);
    keel_world_free(fresh);
    free(title);
    keel_world_free(w);
    keel_baseline_free(b);
}

/* A slot whose unknown component has `body` in place of its small saved one: a CRC-valid
 * file no keel writes (the way issue 17 crafted its 80,000-key slot). */
static void write_slot_with_body(const keel_node *body)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    keel_node *small = keel_node_new_map();
    keel_node_put(small, "marker", keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    keel_entity player = keel_find_name(w, "Player");
    assert_int_equal(keel_add_unknown(w, player, "mod:wide", 1, 0, small, NULL), KEEL_OK);
    save(w, b);
    uint8_t *raw;
    size_t len;
    assert_int_equal(keel__slot_read(tmp_path, &raw, &len, NULL), KEEL_OK);
    keel__buf old = { 0 }, out = { 0 };
    keel__buf_node(&old, small);
    uint8_t *at = NULL;
    for (size_t i = 0; !at && i + old.len <= len; i++)
        if (memcmp(raw + i, old.p, old.len) == 0) at = raw + i;
    assert_non_null(at);
    keel__buf_bytes(&out, raw, (size_t)(at - raw));
    keel__buf_node(&out, body);
    keel__buf_bytes(&out, at + old.len, len - (size_t)(at - raw) - old.len);
    keel_slot_info info = fixed_info();
    assert_int_equal(keel__slot_write(tmp_path, &info, &out, NULL), KEEL_OK);
    free(raw);
    free(old.p);
    free(out.p);
    keel_node_free(small);
    keel_baseline_free(b);
    keel_world_free(w);
}

static keel_node *wide_body(size_t keys)
{
    keel_node *m = keel_node_new_map();
    char k[32];
    for (size_t i = 0; i < keys; i++) {
        snprintf(k, sizeof k, "k%zu", i);
        keel_node_put(m, k, keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    }
    return m;
}

static keel_status load_slot(keel_diags *d, double *took)
{
    keel_world *fresh = parse(scene);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0); /* CPU time: load on the machine is not ours */
    keel_status st = keel_persist_load(fresh, tmp_path, d);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    *took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    keel_world_free(fresh);
    return st;
}

/* Bodies in a slot are held to the scene reader's limits, and read in linear time. */
static void persist_wide_bodies_are_refused_quickly(void **state)
{
    keel_diags d;
    double took;
    /* 80,000 keys: over the collection length and the body size */
    keel_node *wide = wide_body(80000);
    write_slot_with_body(wide);
    keel_node_free(wide);
    keel_diags_init(&d);
    assert_int_equal(load_slot(&d, &took), KEEL_LIMIT_EXCEEDED);
    printf("# 80,000 keys: %s in %.3f s\n", d.items[0].message, took);
    assert_non_null(strstr(d.items[0].message, "collection is longer than the limit"));
    assert_true(took < 2.0);
    keel_diags_free(&d);

    /* 20,000 keys: within the collection length, over the body size */
    wide = wide_body(20000);
    write_slot_with_body(wide);
    keel_node_free(wide);
    keel_diags_init(&d);
    assert_int_equal(load_slot(&d, &took), KEEL_LIMIT_EXCEEDED);
    printf("# 20,000 keys: %s in %.3f s\n", d.items[0].message, took);
    assert_non_null(strstr(d.items[0].message, "a body is larger than the limit"));
    keel_diags_free(&d);

    /* 28 levels: deeper than a scene file can hold a component body */
    keel_node *deep = keel_node_new_map();
    keel_node_put(deep, "leaf", NULL);
    for (int i = 1; i < 28; i++) {
        keel_node *up = keel_node_new_map();
        keel_node_put(up, "in", deep);
        deep = up;
    }
    write_slot_with_body(deep);
    keel_node_free(deep);
    keel_diags_init(&d);
    assert_int_equal(load_slot(&d, &took), KEEL_LIMIT_EXCEEDED);
    assert_non_null(strstr(d.items[0].message, "nested deeper than the limit"));
    keel_diags_free(&d);

    /* 5,000 keys: within both, loaded */
    wide = wide_body(5000);
    write_slot_with_body(wide);
    keel_node_free(wide);
    keel_diags_init(&d);
    assert_int_equal(load_slot(&d, &took), KEEL_OK);
    printf("# 5,000 keys: loaded in %.3f s\n", took);
    keel_diags_free(&d);

    /* A key twice: damaged (keel never writes one) */
    wide = wide_body(3);
    keel_node_put(wide, "twin", NULL);
    wide->items[2 * 0].text[1] = 'x'; /* "k0" -> "kx" */
    wide->items[2 * 1].text[1] = 'x'; /* "k1" -> "kx" too: by hand, put would replace */
    write_slot_with_body(wide);
    keel_node_free(wide);
    keel_diags_init(&d);
    assert_int_equal(load_slot(&d, &took), KEEL_PARSE_ERROR);
    assert_non_null(strstr(d.items[0].message, "a key twice"));
    keel_diags_free(&d);
}

/* Writes `len` bytes to tmp_path and expects the load to be refused with `code`, world untouched. */
static void assert_refused(keel_world *fresh, const char *want_dump, const uint8_t *data, size_t len,
                           keel_status code)
{
    FILE *f = fopen(tmp_path, "wb");
    if (len) assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    keel_diags d;
    keel_diags_init(&d);
    uint64_t rev = keel_world_revision(fresh);
    assert_int_equal(keel_persist_load(fresh, tmp_path, &d), code);
    assert_true(d.errors > 0);
    assert_non_null(strstr(d.items[0].message, "save file"));
    keel_diags_free(&d);
    assert_int_equal(keel_world_revision(fresh), rev);
    (void)want_dump;
}

static void persist_refuses_damaged_files(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    play(w);
    save(w, b);
    char *good = NULL;
    size_t len;
    assert_int_equal(keel_read_file(tmp_path, 1 << 20, &good, &len, NULL), KEEL_OK);
    keel_world *fresh = parse(scene);
    char *before = dump(fresh);
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, good, len);
        copy[i] ^= (uint8_t)(1u << (i % 8));
        assert_refused(fresh, before, copy, len, KEEL_PARSE_ERROR);
    }
    for (size_t n = 0; n < len; n++) assert_refused(fresh, before, (const uint8_t *)good, n, KEEL_PARSE_ERROR);
    char *after = dump(fresh);
    assert_string_equal(after, before);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_persist_load(fresh, "/nonexistent/dir/x.sav", &d), KEEL_IO_ERROR);
    keel_diags_free(&d);
    free(after);
    free(before);
    free(copy);
    free(good);
    keel_world_free(fresh);
    keel_world_free(w);
    keel_baseline_free(b);
}

/* Damage behind a valid CRC and valid zlib: every byte of the decoded state altered in turn. A load
 * either succeeds or is refused with the world untouched; never a crash (ASan) or a half-applied save. */
static void persist_survives_hostile_state_behind_a_valid_crc(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    play(w);
    save(w, b);
    char *good = NULL;
    size_t len;
    assert_int_equal(keel_read_file(tmp_path, 1 << 20, &good, &len, NULL), KEEL_OK);
    const uint8_t *g = (const uint8_t *)good;
    size_t at = 16 + keel__get_u32(g + 12);
    uLongf raw_len = keel__get_u32(g + at), clen = keel__get_u32(g + at + 4);
    uint8_t *raw = malloc(raw_len), *mut = malloc(raw_len);
    assert_int_equal(uncompress(raw, &raw_len, g + at + 8, clen), Z_OK);
    uLongf bound = compressBound(raw_len);
    uint8_t *file = malloc(at + 8 + bound + 4);
    keel_world *fresh = parse(scene);
    char *pristine = dump(fresh);
    size_t refused = 0;
    for (size_t i = 0; i < raw_len; i++) {
        memcpy(mut, raw, raw_len);
        mut[i] ^= (i % 3 == 0) ? 0xFF : (uint8_t)(1u << (i % 8));
        memcpy(file, good, at);
        uLongf c = bound;
        assert_int_equal(compress2(file + at + 8, &c, mut, raw_len, 6), Z_OK);
        keel__put_u32(file + at, (uint32_t)raw_len);
        keel__put_u32(file + at + 4, (uint32_t)c);
        size_t flen = at + 8 + c;
        keel__put_u32(file + flen, (uint32_t)crc32(0L, file, (uInt)flen));
        flen += 4;
        FILE *f = fopen(tmp_path, "wb");
        assert_int_equal(fwrite(file, 1, flen, f), flen);
        fclose(f);
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = keel_persist_load(fresh, tmp_path, &d);
        if (s != KEEL_OK) {
            assert_true(d.errors > 0);
            char *now = dump(fresh);
            assert_string_equal(now, pristine);
            free(now);
            refused++;
        } else {
            keel_world_free(fresh);
            fresh = parse(scene);
        }
        keel_diags_free(&d);
    }
    assert_true(refused > raw_len / 2);
    free(pristine);
    keel_world_free(fresh);
    free(file);
    free(mut);
    free(raw);
    free(good);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_refuses_a_save_of_another_scene(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    play(w);
    save(w, b);
    char *other_text = strdup(scene);
    memcpy(strstr(other_text, "5a5e0000"), "6b6f0000", 8);
    keel_world *other = parse(other_text);
    char *before = dump(other);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_persist_load(other, tmp_path, &d), KEEL_INVALID_ARGUMENT);
    assert_non_null(strstr(d.items[0].message, "the save is of scene 5a5e0000"));
    keel_diags_free(&d);
    char *after = dump(other);
    assert_string_equal(after, before);
    /* saving against a baseline of another scene is refused too */
    keel_diags_init(&d);
    assert_int_equal(keel_persist_save(other, b, tmp_path, NULL, &d), KEEL_INVALID_ARGUMENT);
    keel_diags_free(&d);
    free(before);
    free(after);
    free(other_text);
    keel_world_free(other);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_failed_load_rolls_everything_back(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    play(w);
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = 7;
    assert_int_equal(keel_add(w, named(w, "Crate"), keel_kind_find("core:audio_source"), &o, NULL, NULL, NULL),
                     KEEL_OK);
    save(w, b);
    /* a world that is not quite the baseline: Crate's slot 7 is taken, so the last add must fail */
    keel_world *fresh = parse(scene);
    keel_entity crate = named(fresh, "Crate");
    keel_comp extra;
    assert_int_equal(keel_add(fresh, crate, keel_kind_find("core:audio_source"), &o, &extra, NULL, NULL), KEEL_OK);
    set_field(fresh, extra, "volume", (keel_value){ .as.f = 0.125 });
    char *before = dump(fresh);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_persist_load(fresh, tmp_path, &d), KEEL_INVALID_OPERATION);
    keel_diags_free(&d);
    char *after = dump(fresh);
    assert_string_equal(after, before);
    /* handles into the untouched world still work */
    assert_true(keel_alive(fresh, crate));
    assert_int_equal(keel_member_count(fresh, named(fresh, "Player")), 4);
    assert_true(keel_entity_enabled(fresh, named(fresh, "Lamp")));
    free(before);
    free(after);
    keel_world_free(fresh);
    keel_world_free(w);
    keel_baseline_free(b);
}

/* v2 of test:engine renamed velocity (km/h) to speed (m/s); written to cope with partial bodies. */
static keel_status migrate_engine(keel_node *body, int to_version, void *user, keel_diags *d)
{
    for (size_t i = 0; to_version == 2 && i < body->count; i++) {
        keel_node *k = &body->items[2 * i], *v = &body->items[2 * i + 1];
        if (strcmp(k->text, "velocity") != 0) continue;
        double kmh;
        if (!keel_node_as_float(v, &kmh)) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "velocity", "not a number");
        char buf[64];
        keel_format_double(kmh / 3.6, buf, sizeof buf);
        free(k->text);
        k->text = strdup("speed");
        k->len = 5;
        free(v->text);
        v->text = strdup(buf);
        v->len = strlen(buf);
    }
    return KEEL_OK;
}

static void persist_migrates_old_component_versions(void **state)
{
    static const keel_field_desc v1[] = { { .key = "velocity", .type = KEEL_T_FLOAT },
                                          { .key = "gear", .type = KEEL_T_INT } };
    static const keel_field_desc v2[] = { { .key = "speed", .type = KEEL_T_FLOAT },
                                          { .key = "gear", .type = KEEL_T_INT } };
    keel_kind_desc k = { .key = "test:engine", .version = 1, .multiplicity = KEEL_MANY, .fields = v1,
                         .field_count = 2 };
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);
    const char *text = "keel: 1\nscene:\n  uuid: 5a5e0000-0000-4000-8000-0000000000e1\n  name: Cars\n"
                       "entities:\n  - uuid: 00000000-0000-4000-8000-0000000000c1\n    name: Car\n    components:\n"
                       "      - kind: test:engine\n        version: 1\n        slot: 0\n        body:\n"
                       "          velocity: 18\n          gear: 1\n";
    keel_world *w = parse(text);
    keel_baseline *b = keel_baseline_capture(w);
    keel_entity car = named(w, "Car");
    set_field(w, comp(w, car, "test:engine", 0), "velocity", (keel_value){ .as.f = 36 });
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    keel_comp added;
    assert_int_equal(keel_add(w, car, keel_kind_find("test:engine"), &o, &added, NULL, NULL), KEEL_OK);
    set_field(w, added, "velocity", (keel_value){ .as.f = 72 });
    set_field(w, added, "gear", (keel_value){ .as.i = 4 });
    save(w, b);
    keel_world_free(w);
    keel_baseline_free(b);

    k.version = 2;
    k.fields = v2;
    k.migrate = migrate_engine;
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);
    keel_world *fresh = parse(text); /* the scene itself migrates: speed 5 */
    load_ok(fresh);
    car = named(fresh, "Car");
    keel_value v;
    keel_comp c0 = comp(fresh, car, "test:engine", 0), c1 = comp(fresh, car, "test:engine", 1);
    assert_int_equal(keel_get(fresh, c0, 0, &v, NULL), KEEL_OK);
    assert_true(v.as.f == 10);
    assert_int_equal(keel_get(fresh, c0, 1, &v, NULL), KEEL_OK);
    assert_int_equal(v.as.i, 1);
    assert_int_equal(keel_get(fresh, c1, 0, &v, NULL), KEEL_OK);
    assert_true(v.as.f == 20);
    assert_int_equal(keel_get(fresh, c1, 1, &v, NULL), KEEL_OK);
    assert_int_equal(v.as.i, 4);
    keel_member m;
    assert_true(keel_member_at(fresh, car, 1, &m));
    assert_int_equal(m.version, 2);
    keel_world_free(fresh);
}

/* inner_angle <= outer_angle: raising both needs outer written first, whatever order fields come in */
static void persist_applies_fields_a_validate_hook_ties_together(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    keel_entity crate = named(w, "Crate");
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    keel_comp spot;
    assert_int_equal(keel_add(w, crate, keel_kind_find("core:spot_light"), &o, &spot, NULL, NULL), KEEL_OK);
    keel_baseline_free(b);
    b = keel_baseline_capture(w); /* the baseline holds the spot light at 30 / 45 */
    set_field(w, spot, "outer_angle", (keel_value){ .as.f = 90 });
    set_field(w, spot, "inner_angle", (keel_value){ .as.f = 80 });
    save(w, b);
    keel_world *fresh = parse(scene);
    assert_int_equal(keel_add(fresh, named(fresh, "Crate"), keel_kind_find("core:spot_light"), &o, NULL, NULL, NULL),
                     KEEL_OK);
    load_ok(fresh);
    assert_same_world(fresh, w);
    /* and the other way round: lowering both needs inner first */
    keel_baseline_free(b);
    b = keel_baseline_capture(w);
    set_field(w, spot, "inner_angle", (keel_value){ .as.f = 5 });
    set_field(w, spot, "outer_angle", (keel_value){ .as.f = 10 });
    save(w, b);
    keel_world_free(fresh);
    fresh = parse(scene);
    keel_comp fs;
    assert_int_equal(keel_add(fresh, named(fresh, "Crate"), keel_kind_find("core:spot_light"), &o, &fs, NULL, NULL),
                     KEEL_OK);
    set_field(fresh, fs, "outer_angle", (keel_value){ .as.f = 90 });
    set_field(fresh, fs, "inner_angle", (keel_value){ .as.f = 80 });
    load_ok(fresh);
    assert_same_world(fresh, w);
    keel_world_free(fresh);
    keel_world_free(w);
    keel_baseline_free(b);
}

static void persist_rejects_null_arguments(void **state)
{
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_persist_save(NULL, NULL, tmp_path, NULL, &d), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel_persist_load(NULL, tmp_path, &d), KEEL_INVALID_ARGUMENT);
    assert_null(keel_baseline_capture(NULL));
    keel_baseline_free(NULL);
    keel_slot_info_free(NULL);
    keel_diags_free(&d);
}

/* info.fields is a MAP of scalars or NULL: a SEQ or a scalar is refused, empty or not */
static void persist_refuses_fields_that_are_not_a_map(void **state)
{
    keel_world *w = parse(scene);
    keel_baseline *b = keel_baseline_capture(w);
    keel_node *wrong[3] = { keel_node_new_seq(), keel_node_new_seq(), keel_node_new_scalar("3", KEEL_STYLE_PLAIN) };
    keel_node_push(wrong[1], keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    for (int i = 0; i < 3; i++) {
        keel_slot_info info = { .title = "x", .fields = wrong[i] };
        keel_diags d;
        keel_diags_init(&d);
        assert_int_equal(keel_persist_save(w, b, tmp_path, &info, &d), KEEL_INVALID_ARGUMENT);
        assert_int_equal(d.count, 1);
        assert_int_equal(d.items[0].code, KEEL_INVALID_ARGUMENT);
        assert_string_equal(d.items[0].message, "slot fields must be a map of scalars");
        assert_string_equal(d.items[0].path, "fields");
        keel_diags_free(&d);
        keel_node_free(wrong[i]);
    }
    /* an empty map is no fields at all */
    keel_node *empty = keel_node_new_map();
    keel_slot_info info = { .title = "x", .fields = empty };
    assert_int_equal(keel_persist_save(w, b, tmp_path, &info, NULL), KEEL_OK);
    keel_node_free(empty);
    keel_baseline_free(b);
    keel_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(persist_played_scene_loads_over_fresh_baseline, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_baseline_serves_any_world_of_the_scene, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_save_applies_over_the_cooked_scene, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_unchanged_world_saves_nothing_to_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_field_back_to_baseline_comes_back_as_baseline, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_two_hundred_cycles_are_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_info_reads_slot_details_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_refuses_damaged_files, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_survives_hostile_state_behind_a_valid_crc, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_refuses_a_save_of_another_scene, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_failed_load_rolls_everything_back, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_migrates_old_component_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_applies_fields_a_validate_hook_ties_together, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_rejects_null_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_refuses_fields_that_are_not_a_map, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_refuses_slot_details_over_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(persist_wide_bodies_are_refused_quickly, setup, teardown),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
