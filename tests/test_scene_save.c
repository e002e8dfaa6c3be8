/* test_scene_save.c — canonical YAML output: round trips of every field type, byte identity, preservation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"
#include "files/scene_write.h"

static const char *const choices[] = { "alpha", "beta", "yes" };

static keel_field_desc all_fields[] = {
    { .key = "b", .type = KEEL_T_BOOL },
    { .key = "i", .type = KEEL_T_INT },
    { .key = "f", .type = KEEL_T_FLOAT },
    { .key = "v2", .type = KEEL_T_VEC2 },
    { .key = "v3", .type = KEEL_T_VEC3 },
    { .key = "v4", .type = KEEL_T_VEC4 },
    { .key = "q", .type = KEEL_T_QUAT },
    { .key = "c", .type = KEEL_T_COLOR },
    { .key = "e", .type = KEEL_T_ENUM, .choices = choices, .choice_count = 3 },
    { .key = "s", .type = KEEL_T_STRING },
    { .key = "a", .type = KEEL_T_ASSET },
    { .key = "t", .type = KEEL_T_ENTITY },
    { .key = "scratch", .type = KEEL_T_FLOAT, .flags = KEEL_FIELD_TRANSIENT },
};
enum { F_B, F_I, F_F, F_V2, F_V3, F_V4, F_Q, F_C, F_E, F_S, F_A, F_T, F_SCRATCH };

static keel_field_desc runtime_fields[] = { { .key = "x", .type = KEEL_T_FLOAT } };

static keel_kind_id all_kind;

static int setup(void **state)
{
    assert_int_equal(keel_init(), KEEL_OK);
    keel_kind_desc k;
    memset(&k, 0, sizeof k);
    k.key = "test:all";
    k.version = 1;
    k.multiplicity = KEEL_MANY;
    k.fields = all_fields;
    k.field_count = sizeof all_fields / sizeof *all_fields;
    assert_int_equal(keel_kind_declare(&k, &all_kind, NULL), KEEL_OK);
    memset(&k, 0, sizeof k);
    k.key = "test:runtime";
    k.version = 1;
    k.flags = KEEL_KIND_NOSAVE;
    k.fields = runtime_fields;
    k.field_count = 1;
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);
    return 0;
}

static int teardown(void **state)
{
    keel_shutdown();
    return 0;
}

static char *dump(const keel_world *w)
{
    char *out = NULL;
    size_t len = 0;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_dump(w, &out, &len, &d), KEEL_OK);
    assert_int_equal(strlen(out), len);
    keel_diags_free(&d);
    return out;
}

static keel_world *reparse(const char *text)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_scene_parse(text, strlen(text), NULL, &w, &d);
    if (st != KEEL_OK) {
        char buf[1024];
        for (size_t i = 0; i < d.count; i++) printf("# %s\n", keel_diag_format(&d.items[i], buf, sizeof buf));
        printf("%s\n", text);
    }
    assert_int_equal(st, KEEL_OK);
    keel_diags_free(&d);
    return w;
}

/* dump -> parse -> dump is byte-identical; returns the reloaded world. */
static keel_world *round_trip(const keel_world *w)
{
    char *a = dump(w);
    keel_world *w2 = reparse(a);
    char *b = dump(w2);
    assert_string_equal(a, b);
    free(a);
    free(b);
    return w2;
}

static keel_comp add_all(keel_world *w, keel_entity *e_out)
{
    keel_entity e;
    assert_int_equal(keel_spawn(w, "Holder", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    keel_comp c;
    assert_int_equal(keel_add(w, e, all_kind, NULL, &c, NULL, NULL), KEEL_OK);
    if (e_out) *e_out = e;
    return c;
}

static keel_comp find_all(const keel_world *w)
{
    keel_entity e = keel_find_name(w, "Holder");
    assert_true(e != KEEL_NO_ENTITY);
    keel_comp c;
    assert_true(keel_get_comp(w, e, all_kind, KEEL_SLOT_AUTO, &c));
    return c;
}

static void set_value(keel_world *w, keel_comp c, int f, keel_value v)
{
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_set(w, c, f, &v, NULL, &d), KEEL_OK);
    keel_diags_free(&d);
}

static void scene_save_floats_round_trip_exactly(void **state)
{
    const double values[] = { 0.1, 1.0 / 3.0, 1e-7, -0.0, 0.0, 1e300, 5e-324, -123.456, 9007199254740993.0,
                              1.5, 100, 1e16, 123456789.125 };
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        keel_world *w = keel_world_new("floats");
        keel_comp c = add_all(w, NULL);
        keel_value v = { .type = KEEL_T_FLOAT };
        v.as.f = values[i];
        set_value(w, c, F_F, v);
        keel_value vv = { .type = KEEL_T_VEC3 };
        vv.as.v[0] = values[i];
        vv.as.v[1] = -values[i];
        vv.as.v[2] = 0.25;
        set_value(w, c, F_V3, vv);
        keel_world *w2 = round_trip(w);
        keel_value got;
        assert_int_equal(keel_get(w2, find_all(w2), F_F, &got, NULL), KEEL_OK);
        assert_memory_equal(&got.as.f, &values[i], sizeof(double)); /* bitwise: -0.0 stays -0.0 */
        assert_int_equal(keel_get(w2, find_all(w2), F_V3, &got, NULL), KEEL_OK);
        assert_memory_equal(got.as.v, vv.as.v, 3 * sizeof(double));
        keel_world_free(w);
        keel_world_free(w2);
    }
}

static void scene_save_float_text_is_shortest(void **state)
{
    keel_world *w = keel_world_new("floats");
    keel_comp c = add_all(w, NULL);
    keel_value v = { .type = KEEL_T_FLOAT };
    v.as.f = 0.1;
    set_value(w, c, F_F, v);
    keel_value vv = { .type = KEEL_T_VEC2 };
    vv.as.v[0] = 1e-7;
    vv.as.v[1] = -0.0;
    set_value(w, c, F_V2, vv);
    char *text = dump(w);
    assert_non_null(strstr(text, "      f: 0.1\n"));
    assert_non_null(strstr(text, "      v2: [1e-7, -0]\n"));
    free(text);
    keel_world_free(w);
}

static void scene_save_integers_round_trip(void **state)
{
    const int64_t values[] = { 0, -1, 9007199254740993LL, INT64_MIN, INT64_MAX, 42 };
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        keel_world *w = keel_world_new("ints");
        keel_comp c = add_all(w, NULL);
        keel_value v = { .type = KEEL_T_INT };
        v.as.i = values[i];
        set_value(w, c, F_I, v);
        keel_world *w2 = round_trip(w);
        keel_value got;
        keel_get(w2, find_all(w2), F_I, &got, NULL);
        assert_true(got.as.i == values[i]);
        char *text = dump(w2);
        char expect[64];
        snprintf(expect, sizeof expect, "      i: %lld\n", (long long)values[i]);
        assert_non_null(strstr(text, expect));
        free(text);
        keel_world_free(w);
        keel_world_free(w2);
    }
}

static const char *const tricky[] = {
    "yes", "no", "on", "Off", "y", "123", "-5", "1.5", "1e3", "0x1F", "0o17", ".inf", "-.inf", ".nan", "null", "Null",
    "~", "true", "FALSE", "", " lead", "trail ", "a: b", "a:b", "#x", "x #y", "x# y", "- dash", "-", "?", "[a]",
    "{a}", "a, b", "!tag", "&anchor", "*alias", "|", ">", "'single'", "\"double\"", "%pct", "@at", "`tick`",
    "line\nbreak", "tab\there", "back\\slash", "unicode é 日本語", "emoji 🎉", "2001-12-14", "1_000", "1:30",
    "plain words", "Player", "under_score", "path/to/thing.glb", "\x7f", "bell\x07", "nbsp\xc2\xa0x", "x\xe2\x80\xa8y",
    "0b101", "0bcf6031-ab80-4d63-9187-59b89f125083", "0xZZ", "0o8", "0b",
};

static void scene_save_strings_round_trip(void **state)
{
    for (size_t i = 0; i < sizeof tricky / sizeof *tricky; i++) {
        keel_world *w = keel_world_new(tricky[i]);
        keel_entity e;
        keel_comp c = add_all(w, &e);
        keel_value v = { .type = KEEL_T_STRING };
        v.as.s = tricky[i];
        set_value(w, c, F_S, v);
        keel_entity named;
        assert_int_equal(keel_spawn(w, tricky[i], KEEL_NO_ENTITY, NULL, &named, NULL, NULL), KEEL_OK);
        keel_world *w2 = round_trip(w);
        keel_value got;
        keel_get(w2, find_all(w2), F_S, &got, NULL);
        assert_string_equal(got.as.s, tricky[i]);
        assert_string_equal(keel_world_name(w2), tricky[i]);
        keel_entity n2 = keel_find(w2, keel_entity_uuid(w, named));
        assert_string_equal(keel_entity_name(w2, n2), tricky[i]);
        keel_world_free(w);
        keel_world_free(w2);
    }
}

static void scene_save_quotes_only_when_needed(void **state)
{
    keel_world *w = keel_world_new("plain words");
    keel_entity e;
    assert_int_equal(keel_spawn(w, "yes", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "Player One", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "123", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "a: b", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "0b101", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    /* a number prefix without its digits is text: a UUID may begin with 0b (one in 256 do) */
    assert_int_equal(keel_spawn(w, "0bcf6031-ab80", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    char *text = dump(w);
    assert_non_null(strstr(text, "  name: plain words\n"));
    assert_non_null(strstr(text, "  name: \"yes\"\n"));
    assert_non_null(strstr(text, "  name: Player One\n"));
    assert_non_null(strstr(text, "  name: \"123\"\n"));
    assert_non_null(strstr(text, "  name: \"\"\n"));
    assert_non_null(strstr(text, "  name: \"a: b\"\n"));
    assert_non_null(strstr(text, "  name: \"0b101\"\n"));
    assert_non_null(strstr(text, "  name: 0bcf6031-ab80\n"));
    free(text);
    keel_world_free(w);
}

static void scene_save_every_field_type(void **state)
{
    keel_world *w = keel_world_new("types");
    keel_entity e, target;
    keel_comp c = add_all(w, &e);
    assert_int_equal(keel_spawn(w, "Target", KEEL_NO_ENTITY, NULL, &target, NULL, NULL), KEEL_OK);
    keel_value v;
    memset(&v, 0, sizeof v);
    v.type = KEEL_T_BOOL, v.as.b = true, set_value(w, c, F_B, v);
    v.type = KEEL_T_VEC4, v.as.v[0] = 1, v.as.v[1] = 2, v.as.v[2] = 3, v.as.v[3] = 4, set_value(w, c, F_V4, v);
    v.type = KEEL_T_QUAT, v.as.v[0] = 0, v.as.v[1] = 0, v.as.v[2] = 0.6, v.as.v[3] = 0.8, set_value(w, c, F_Q, v);
    v.type = KEEL_T_COLOR, v.as.v[0] = 0.5, v.as.v[1] = 0.25, v.as.v[2] = 0, v.as.v[3] = 1, set_value(w, c, F_C, v);
    v.type = KEEL_T_ENUM, v.as.i = 2, set_value(w, c, F_E, v);
    keel_uuid asset;
    assert_true(keel_uuid_parse("aaaaaaaa-0000-4000-8000-000000000001", &asset));
    v.type = KEEL_T_ASSET, v.nil = false, v.as.u = asset, set_value(w, c, F_A, v);
    v.type = KEEL_T_ENTITY, v.nil = false, v.as.u = keel_entity_uuid(w, target), set_value(w, c, F_T, v);
    v.type = KEEL_T_FLOAT, v.nil = false, v.as.f = 7, set_value(w, c, F_SCRATCH, v);
    keel_world *w2 = round_trip(w);
    keel_comp c2 = find_all(w2);
    for (int f = F_B; f <= F_T; f++) {
        keel_value a, b;
        keel_get(w, c, f, &a, NULL);
        keel_get(w2, c2, f, &b, NULL);
        if (f == F_S) assert_string_equal(a.as.s, b.as.s);
        else if (f == F_A || f == F_T) assert_true(keel_uuid_equal(a.as.u, b.as.u));
        else assert_memory_equal(&a.as, &b.as, sizeof(double) * 4 > sizeof a.as ? sizeof a.as : sizeof(double) * 4);
    }
    keel_value s;
    keel_get(w2, c2, F_SCRATCH, &s, NULL);
    assert_true(s.as.f == 0); /* transient: not saved */
    char *text = dump(w2);
    assert_non_null(strstr(text, "      e: \"yes\"\n")); /* an enum choice that looks like a bool is quoted */
    assert_non_null(strstr(text, "      q: [0, 0, 0.6, 0.8]\n"));
    assert_non_null(strstr(text, "      a: aaaaaaaa-0000-4000-8000-000000000001\n"));
    assert_null(strstr(text, "scratch"));
    free(text);
    keel_world_free(w);
    keel_world_free(w2);
}

static void scene_save_layout_is_canonical(void **state)
{
    keel_world *w = keel_world_new("Layout");
    keel_uuid su;
    keel_uuid_parse("550e8400-e29b-41d4-a716-446655440000", &su);
    assert_int_equal(keel_world_set_uuid(w, su, NULL), KEEL_OK);
    assert_int_equal(keel_world_set_uuid(w, (keel_uuid){ { 0 } }, NULL), KEEL_INVALID_ARGUMENT); /* never nil */
    assert_true(keel_uuid_equal(keel_world_uuid(w), su));
    keel_uuid u1, u2;
    keel_uuid_parse("11111111-1111-1111-1111-111111111111", &u1);
    keel_uuid_parse("22222222-2222-2222-2222-222222222222", &u2);
    keel_entity a, b;
    assert_int_equal(keel_spawn(w, "A", KEEL_NO_ENTITY, &u1, &a, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "B", a, &u2, &b, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_set_enabled(w, b, false, NULL, NULL), KEEL_OK);
    keel_comp c;
    assert_int_equal(keel_add(w, a, keel_kind_find("core:transform"), NULL, &c, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(w, c, false, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, a, keel_kind_find("test:runtime"), NULL, NULL, NULL, NULL), KEEL_OK);
    char *text = dump(w);
    const char *expect =
        "keel: 1\n"
        "scene:\n"
        "  uuid: 550e8400-e29b-41d4-a716-446655440000\n"
        "  name: Layout\n"
        "settings:\n"
        "  grid:\n"
        "    enabled: true\n"
        "    origin: [0, 0, 0]\n"
        "    orientation: [0, 0, 0, 1]\n"
        "    base_spacing: 1\n"
        "    major_line_every: 10\n"
        "root: []\n"
        "entities:\n"
        "- uuid: 11111111-1111-1111-1111-111111111111\n"
        "  name: A\n"
        "  components:\n"
        "  - kind: core:transform\n"
        "    version: 1\n"
        "    slot: 0\n"
        "    enabled: false\n"
        "    body:\n"
        "      position: [0, 0, 0]\n"
        "      rotation: [0, 0, 0, 1]\n"
        "      scale: [1, 1, 1]\n"
        "- uuid: 22222222-2222-2222-2222-222222222222\n"
        "  name: B\n"
        "  parent: 11111111-1111-1111-1111-111111111111\n"
        "  enabled: false\n"
        "  components: []\n";
    assert_string_equal(text, expect);
    free(text);
    keel_world *w2 = round_trip(w);
    keel_world_free(w2);
    keel_world_free(w);
}

static void scene_save_grid_round_trip(void **state)
{
    keel_world *w = keel_world_new("grid");
    keel_grid g = *keel_world_grid(w);
    g.enabled = false;
    g.origin[0] = 0.1;
    g.origin[2] = -3;
    g.orientation[0] = 0;
    g.orientation[1] = 0.6;
    g.orientation[2] = 0;
    g.orientation[3] = 0.8;
    g.base_spacing = 0.25;
    g.major_line_every = 4;
    assert_int_equal(keel_world_set_grid(w, &g, NULL), KEEL_OK);
    keel_world *w2 = round_trip(w);
    const keel_grid *h = keel_world_grid(w2);
    assert_false(h->enabled);
    assert_true(h->origin[0] == 0.1 && h->origin[2] == -3);
    assert_true(h->orientation[1] == 0.6 && h->orientation[3] == 0.8);
    assert_true(h->base_spacing == 0.25);
    assert_int_equal(h->major_line_every, 4);
    keel_world_free(w);
    keel_world_free(w2);
}

static char *fixture_text(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", KEEL_FIXTURES, name);
    char *text = NULL;
    assert_int_equal(keel_read_file(path, 1 << 24, &text, len, NULL), KEEL_OK);
    return text;
}

static keel_world *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", KEEL_FIXTURES, name);
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_load(path, NULL, &w, &d), KEEL_OK);
    keel_diags_free(&d);
    return w;
}

/* keel fmt: load -> save -> load -> save is byte-identical, and a canonical file is a fixed point. */
static void scene_save_fmt_idempotent(void **state)
{
    const char *good[] = { "good_design_example.yaml", "good_child_before_parent.yaml", "good_unknown_kinds.yaml",
                           "good_canonical.yaml" };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        keel_world *w = load(good[i]);
        keel_world *w2 = round_trip(w);
        keel_world_free(w);
        keel_world_free(w2);
    }
    size_t len;
    char *text = fixture_text("good_canonical.yaml", &len);
    keel_world *w = reparse(text);
    char *again = dump(w);
    assert_string_equal(again, text);
    free(again);
    free(text);
    keel_world_free(w);
}

/* Found by fuzz_scene: a quaternion that is normalized up to rounding must
 * not move by an ulp on every load, or load -> save -> load -> save differs. */
static void scene_save_quaternion_is_a_fixed_point(void **state)
{
    keel_world *w = load("good_quat_renormalized.yaml");
    keel_world *w2 = round_trip(w);
    keel_world *w3 = round_trip(w2);
    keel_world_free(w);
    keel_world_free(w2);
    keel_world_free(w3);
}

static void scene_save_unknown_bodies_unchanged(void **state)
{
    keel_world *w = load("good_unknown_kinds.yaml");
    char *text = dump(w);
    assert_non_null(strstr(text, "      rope: {len: 12.50, 'mode': \"fast\"}\n"));
    assert_non_null(strstr(text, "      tags: [a, 'b', 1e3]\n"));
    assert_non_null(strstr(text, "      note: |\n        multi\n        line\n"));
    assert_non_null(strstr(text, "      speed: 0x1F\n"));
    /* the newer-version transform keeps its own body, unknown key included */
    assert_non_null(strstr(text, "    version: 99\n    slot: 0\n    body:\n      position: [1, 2, 3]\n      wobble: yes\n"));
    assert_non_null(strstr(text, "  - kind: mod:winch\n    version: 3\n    slot: 4\n    enabled: false\n    body: {}\n"));
    free(text);
    keel_world_free(w);
}

static __attribute__((noinline)) size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0, at = 0;
    for (const char *p; (p = strstr(hay + at, needle)); at = (size_t)(p - hay) + 1) n++;
    return n;
}

static void scene_save_unknown_duplicated_and_removed(void **state)
{
    keel_world *w = load("good_unknown_kinds.yaml");
    keel_uuid u;
    keel_uuid_parse("11111111-1111-1111-1111-111111111111", &u);
    keel_entity e = keel_find(w, u), copy;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_duplicate(w, e, KEEL_NO_ENTITY, &copy, NULL, &d), KEEL_OK);
    char *text = dump(w);
    assert_int_equal(count_of(text, "rope: {len: 12.50, 'mode': \"fast\"}"), 2);
    free(text);
    assert_int_equal(keel_remove(w, e, "mod:winch", 0, NULL, &d), KEEL_OK);
    text = dump(w);
    assert_int_equal(count_of(text, "rope: {len: 12.50, 'mode': \"fast\"}"), 1);
    keel_world *w2 = reparse(text);
    free(text);
    keel_world *w3 = round_trip(w2);
    keel_world_free(w3);
    keel_world_free(w2);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void scene_save_writes_file_atomically(void **state)
{
    char dir[] = "/tmp/keel_save_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/scene.yaml", dir);
    keel_world *w = load("good_design_example.yaml");
    assert_int_equal(keel_scene_save(w, path, NULL), KEEL_OK);
    keel_world *w2 = NULL;
    assert_int_equal(keel_scene_load(path, NULL, &w2, NULL), KEEL_OK);
    char *a = dump(w), *b = dump(w2);
    assert_string_equal(a, b);
    size_t len;
    char *onfile = NULL;
    assert_int_equal(keel_read_file(path, 1 << 20, &onfile, &len, NULL), KEEL_OK);
    assert_string_equal(onfile, a);
    free(a);
    free(b);
    free(onfile);
    remove(path);
    rmdir(dir);
    keel_world_free(w);
    keel_world_free(w2);
}

static double random_double(unsigned i)
{
    static const double edges[] = { 1e-4, 0.00011, 9.9999e-5, 1e15, 999999999999999.0, 1e15 - 0.5, 0.1 + 0.2,
                                    123456.789012, 1e-6, 1.0000001, 4.35, 2.675, 1e14 + 0.25, 0.3333333 };
    if (i % 5 == 4) {
        double scale = pow(10, rand() % 12 - 5);
        return i % 50 == 4 ? edges[(i / 50) % (sizeof edges / sizeof *edges)] : (double)(rand() % 1000000) / scale;
    }
    switch (i % 4) {
    case 0: { /* any finite bit pattern */
        uint64_t bits = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
        double v;
        memcpy(&v, &bits, sizeof v);
        return isfinite(v) ? v : 1.0 / (i + 1);
    }
    case 1: return (double)(rand() % 100000) / 1000.0; /* short decimals */
    case 2: return (double)rand() / (double)(rand() + 1); /* long ones */
    default: return ldexp((double)(rand() % 1000), -(rand() % 60)) * ((i & 4) ? -1 : 1);
    }
}

/* The writer emits records directly; keel_body_encode must give the same bytes,
 * and the writer's float text must be keel_format_double's. */
static void scene_save_direct_matches_body_encode(void **state)
{
    srand(7);
    keel_world *w = keel_world_new("direct");
    for (unsigned i = 0; i < 5000; i++) {
        keel_entity e;
        keel_comp c = add_all(w, &e);
        keel_value v = { .type = KEEL_T_FLOAT };
        v.as.f = random_double(i);
        set_value(w, c, F_F, v);
        keel_value vv = { .type = KEEL_T_VEC3 };
        for (int k = 0; k < 3; k++) vv.as.v[k] = random_double(i + (unsigned)k);
        set_value(w, c, F_V3, vv);
        keel_value iv = { .type = KEEL_T_INT };
        iv.as.i = (int64_t)rand() * (i % 2 ? -1 : 1);
        set_value(w, c, F_I, iv);
        keel_value sv = { .type = KEEL_T_STRING };
        sv.as.s = tricky[i % (sizeof tricky / sizeof *tricky)];
        set_value(w, c, F_S, sv);
    }
    keel_entity e;
    assert_int_equal(keel_spawn(w, "lights", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, keel_kind_find("core:transform"), NULL, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, keel_kind_find("core:camera"), NULL, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, keel_kind_find("core:audio_source"), NULL, NULL, NULL, NULL), KEEL_OK);
    char *direct = dump(w);
    keel__scene_write_via_encode(true);
    char *encoded = dump(w);
    keel__scene_write_via_encode(false);
    assert_string_equal(direct, encoded);
    free(direct);
    free(encoded);
    keel_world_free(w);
}

/* The writer's own double formatter gives keel_format_double's text for every double: ties
 * at the 15th-17th digit, both sides of powers of two and ten, subnormals, the extremes. */
static void scene_save_float_formatter_matches_reference(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252u;
    char a[64], b[64];
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        switch (i % 6) {
        case 0: memcpy(&v, &x, sizeof v); break; /* any bit pattern */
        case 1: v = (double)(x % 100000000) / pow(10, (int)(x >> 60)); break;
        case 2: v = (double)(x >> 11) / (double)((x & 0xfffff) + 1); break;
        case 3: v = ldexp((double)(x & ((UINT64_C(1) << 53) - 1)), -(int)(x >> 58)); break; /* exact binary: ties */
        case 4: { /* a few ulps around a power of ten or two */
            v = x & 1 ? pow(10, (int)(x % 26) - 6) : ldexp(1, (int)(x % 80) - 20);
            for (int k = 0; k < (int)(x >> 61); k++) v = nextafter(v, x & 2 ? INFINITY : 0);
            break;
        }
        default: v = (double)(x % 1000000000000000u) * pow(10, -(int)(x >> 59)); break;
        }
        if (!isfinite(v)) continue;
        if (i & 1) v = -v;
        int na = keel_format_double(v, a, sizeof a), nb = keel__scene_format_double(v, b);
        if (na != nb || strcmp(a, b) != 0) fail_msg("%.17g: keel_format_double %s, writer %s", v, a, b);
    }
    static const double edges[] = { 1e-4, 1e15, 999999999999999.9, 999999999999999.0, 1e15 - 0.5, 0.1 + 0.2,
                                    2.675, 1e14 + 0.25, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                                    1.0 / 3, 2.0 / 3, 100, 1e16, 4503599627370496.5, 0.000123456789012345678 };
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        for (int k = -1; k <= 1; k++) {
            double v = k < 0 ? nextafter(edges[i], 0) : k > 0 ? nextafter(edges[i], INFINITY) : edges[i];
            keel_format_double(v, a, sizeof a);
            keel__scene_format_double(v, b);
            assert_string_equal(a, b);
        }
}

/* Plain only when a YAML reader gets the same string back. */
static void scene_save_plain_safe_words_and_bytes(void **state)
{
    (void)state;
    static const char *const quoted[] = { "null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False",
                                          "FALSE", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on",
                                          "On", "ON", "off", "Off", "OFF", "=", "<<", "-x", "a: b", "a:", "a #b",
                                          " a", "a ", "1.5", "0x1f", "2001-12-14", "a\xe2\x80\xa8", "a\xc2\x85",
                                          "\xef\xbb\xbfx", "a\tb", "", "'x", "@x", "%x" };
    static const char *const plain[] = { "nul", "nulls", "yess", "ye", "o", "offf", "<", "<<<", "==", "FALSe",
                                         "Entity 1", "a#b", "a:b", "core:transform", "0xg", "caf\xc3\xa9" };
    for (size_t i = 0; i < sizeof quoted / sizeof *quoted; i++)
        if (keel__scene_plain_safe(quoted[i], strlen(quoted[i]))) fail_msg("'%s' written plain", quoted[i]);
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (!keel__scene_plain_safe(plain[i], strlen(plain[i]))) fail_msg("'%s' quoted", plain[i]);
    assert_false(keel__scene_plain_safe("a\0b", 3)); /* a NUL inside: never plain */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scene_save_floats_round_trip_exactly),
        cmocka_unit_test(scene_save_float_text_is_shortest),
        cmocka_unit_test(scene_save_integers_round_trip),
        cmocka_unit_test(scene_save_strings_round_trip),
        cmocka_unit_test(scene_save_quotes_only_when_needed),
        cmocka_unit_test(scene_save_every_field_type),
        cmocka_unit_test(scene_save_layout_is_canonical),
        cmocka_unit_test(scene_save_grid_round_trip),
        cmocka_unit_test(scene_save_fmt_idempotent),
        cmocka_unit_test(scene_save_quaternion_is_a_fixed_point),
        cmocka_unit_test(scene_save_unknown_bodies_unchanged),
        cmocka_unit_test(scene_save_unknown_duplicated_and_removed),
        cmocka_unit_test(scene_save_writes_file_atomically),
        cmocka_unit_test(scene_save_direct_matches_body_encode),
        cmocka_unit_test(scene_save_float_formatter_matches_reference),
        cmocka_unit_test(scene_save_plain_safe_words_and_bytes),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
