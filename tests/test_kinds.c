/* test_kinds.c — the kind registry: declaration refusals, ids, layout, field checks, records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "model/record.h"

static int setup(void **state)
{
    return keel_init() == KEEL_OK ? 0 : -1;
}

static int teardown(void **state)
{
    keel_shutdown();
    return 0;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const modes[] = { "walk", "run" };
static const keel_field_desc stamina_fields[] = {
    { .key = "value", .type = KEEL_T_FLOAT, .has_default = true, .def = { .type = KEEL_T_FLOAT, .as.f = 100 },
      .has_min = true, .min = 0, .has_max = true, .max = 100 },
    { .key = "sprinting", .type = KEEL_T_BOOL },
    { .key = "mode", .type = KEEL_T_ENUM, .choices = modes, .choice_count = 2, .has_default = true,
      .def = { .type = KEEL_T_ENUM, .as.i = 1 } },
    { .key = "label", .type = KEEL_T_STRING, .has_default = true, .def = { .type = KEEL_T_STRING, .as.s = "tired" } },
    { .key = "range", .type = KEEL_T_FLOAT, .has_default = true, .def = { .type = KEEL_T_FLOAT, .as.f = 1 },
      .has_min = true, .min = 0, .min_exclusive = true },
    { .key = "count", .type = KEEL_T_INT, .has_min = true, .min = -5, .has_max = true, .max = 5 },
    { .key = "facing", .type = KEEL_T_QUAT },
    { .key = "target", .type = KEEL_T_ENTITY },
    { .key = "note", .type = KEEL_T_STRING },
};

static keel_kind_desc stamina(void)
{
    keel_kind_desc d = { .key = "game:stamina", .version = 1, .fields = stamina_fields,
                         .field_count = N(stamina_fields) };
    return d;
}

/* Declares `d`, expects `code` and a first diagnostic whose message is `msg`. */
static void expect_refused(const keel_kind_desc *d, keel_status code, const char *msg)
{
    keel_diags g;
    keel_diags_init(&g);
    keel_kind_id id = 77;
    size_t before = keel_kind_count();
    assert_int_equal(keel_kind_declare(d, &id, &g), code);
    assert_int_equal(id, KEEL_NO_KIND);
    assert_int_equal(keel_kind_count(), before);
    assert_true(g.errors >= 1);
    assert_int_equal(g.items[0].code, code);
    assert_string_equal(g.items[0].message, msg);
    keel_diags_free(&g);
}

static void kinds_init_registers_builtins_once(void **state)
{
    size_t n = keel_kind_count();
    assert_int_equal(n, 9);
    assert_int_equal(keel_init(), KEEL_OK);
    assert_int_equal(keel_kind_count(), n);
    assert_int_not_equal(keel_kind_find("core:transform"), KEEL_NO_KIND);
    assert_int_equal(keel_kind_find("core:nothing"), KEEL_NO_KIND);
    assert_int_equal(keel_kind_find(NULL), KEEL_NO_KIND);
}

static void kinds_refuse_bad_keys(void **state)
{
    static const char *const bad[] = { "stamina", "Game:stamina", "game:", ":stamina", "game:sta-mina",
                                       "game:stamina:x", "game stamina", "" };
    for (size_t i = 0; i < N(bad); i++) {
        keel_kind_desc d = stamina();
        d.key = bad[i];
        char want[160];
        snprintf(want, sizeof want, "bad kind key '%s': expected ns:name with [a-z0-9_]+ on both sides", bad[i]);
        expect_refused(&d, KEEL_INVALID_ARGUMENT, want);
    }
    keel_kind_desc d = stamina();
    d.key = NULL;
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "bad kind key '': expected ns:name with [a-z0-9_]+ on both sides");
}

static void kinds_refuse_bad_version_and_max(void **state)
{
    keel_kind_desc d = stamina();
    d.version = -1;
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: version -1 is below 1");
    d = stamina();
    d.max = 3;
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: max applies to many kinds only");
    d = stamina();
    d.version = 0; /* read as 1 */
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    assert_int_equal(keel_kind_describe(id)->version, 1);
}

static void kinds_refuse_bad_fields(void **state)
{
    keel_field_desc f[2];
    keel_kind_desc d = stamina();
    d.fields = f;
    d.field_count = 1;

    memset(f, 0, sizeof f);
    f[0].key = "x";
    f[0].type = KEEL_T_COUNT_;
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: field 'x' has an unknown type (12)");

    memset(f, 0, sizeof f);
    f[0].key = "";
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: fields[0] has no key");

    memset(f, 0, sizeof f);
    f[0].key = "x";
    f[1].key = "x";
    f[1].type = KEEL_T_INT;
    d.field_count = 2;
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: field 'x' is declared twice");
    d.field_count = 1;

    memset(f, 0, sizeof f);
    f[0] = (keel_field_desc){ .key = "hp", .type = KEEL_T_FLOAT, .has_default = true,
                              .def = { .type = KEEL_T_FLOAT, .as.f = 200 }, .has_max = true, .max = 100 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT,
                   "game:stamina: bad default for hp: 200 is above the maximum (<= 100)");

    f[0] = (keel_field_desc){ .key = "range", .type = KEEL_T_FLOAT, .has_default = true,
                              .def = { .type = KEEL_T_FLOAT, .as.f = 0 }, .has_min = true, .min = 0,
                              .min_exclusive = true };
    expect_refused(&d, KEEL_INVALID_ARGUMENT,
                   "game:stamina: bad default for range: 0 is below the minimum (> 0)");

    f[0] = (keel_field_desc){ .key = "mode", .type = KEEL_T_ENUM, .choices = modes, .choice_count = 2,
                              .has_default = true, .def = { .type = KEEL_T_ENUM, .as.i = 2 } };
    expect_refused(&d, KEEL_INVALID_ARGUMENT,
                   "game:stamina: bad default for mode: choice 2 is out of range (0 to 1)");

    f[0] = (keel_field_desc){ .key = "mode", .type = KEEL_T_ENUM, .choices = modes, .choice_count = 2,
                              .has_default = true, .def = { .type = KEEL_T_STRING, .as.s = "fly" } };
    expect_refused(&d, KEEL_INVALID_ARGUMENT,
                   "game:stamina: bad default for mode: 'fly' is not one of its choices");

    f[0] = (keel_field_desc){ .key = "mode", .type = KEEL_T_ENUM };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: field 'mode': an enum needs at least one choice");

    f[0] = (keel_field_desc){ .key = "name", .type = KEEL_T_STRING, .has_max = true, .max = 3 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: field 'name': min/max apply to numbers only, not string");

    f[0] = (keel_field_desc){ .key = "v", .type = KEEL_T_FLOAT, .has_min = true, .min = 2, .has_max = true, .max = 1 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: field 'v': min is greater than max");

    f[0] = (keel_field_desc){ .key = "v", .type = KEEL_T_FLOAT, .has_default = true,
                              .def = { .type = KEEL_T_BOOL, .as.b = true } };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: bad default for v: expected float, got bool");

    f[0] = (keel_field_desc){ .key = "q", .type = KEEL_T_QUAT, .has_default = true,
                              .def = { .type = KEEL_T_QUAT } };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: bad default for q: a zero quaternion cannot be normalized");

    f[0] = (keel_field_desc){ .key = "v", .type = KEEL_T_FLOAT, .has_default = true,
                              .def = { .type = KEEL_T_FLOAT, .as.f = NAN } };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:stamina: bad default for v: .nan is not a finite number");
    assert_int_equal(keel_kind_find("game:stamina"), KEEL_NO_KIND);
}

static void kinds_ids_count_from_one_and_stay(void **state)
{
    keel_shutdown();
    keel_kind_desc d = stamina();
    keel_kind_id a, b, again;
    assert_int_equal(keel_kind_declare(&d, &a, NULL), KEEL_OK);
    assert_int_equal(a, 1);
    d.key = "game:alpha";
    assert_int_equal(keel_kind_declare(&d, &b, NULL), KEEL_OK);
    assert_int_equal(b, 2);
    d.key = "game:stamina";
    d.display = "Renamed";
    d.version = 3;
    assert_int_equal(keel_kind_declare(&d, &again, NULL), KEEL_OK);
    assert_int_equal(again, a);
    assert_int_equal(keel_kind_count(), 2);
    assert_string_equal(keel_kind_describe(a)->display, "Renamed");
    assert_int_equal(keel_kind_describe(a)->version, 3);
}

static void kinds_listing_is_sorted(void **state)
{
    keel_kind_desc d = stamina();
    const char *keys[] = { "zz:last", "aa:first", "game:middle" };
    for (int i = 0; i < 3; i++) {
        d.key = keys[i];
        assert_int_equal(keel_kind_declare(&d, NULL, NULL), KEEL_OK);
    }
    size_t n = keel_kind_count();
    assert_int_equal(n, 12);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(keel_kind_describe(keel_kind_at(i - 1))->key, keel_kind_describe(keel_kind_at(i))->key) < 0);
    assert_string_equal(keel_kind_describe(keel_kind_at(0))->key, "aa:first");
    assert_string_equal(keel_kind_describe(keel_kind_at(n - 1))->key, "zz:last");
    assert_int_equal(keel_kind_at(n), KEEL_NO_KIND);
    assert_null(keel_kind_describe(KEEL_NO_KIND));
    assert_null(keel_kind_describe(999));
}

static void kinds_describe_returns_owned_copy(void **state)
{
    char key[] = "game:copied", req[] = "core:transform", fname[] = "speed", choice[] = "slow";
    const char *reqs[] = { req };
    const char *choices[] = { choice, "fast" };
    keel_field_desc f[] = {
        { .key = fname, .type = KEEL_T_FLOAT, .has_default = true, .def = { .type = KEEL_T_INT, .as.i = 3 },
          .has_min = true, .min = 0, .flags = KEEL_FIELD_TRANSIENT },
        { .key = "gear", .type = KEEL_T_ENUM, .choices = choices, .choice_count = 2 },
        { .key = "tag", .type = KEEL_T_STRING, .has_default = true, .def = { .type = KEEL_T_STRING, .as.s = "x" } },
    };
    keel_kind_desc d = { .key = key, .version = 2, .multiplicity = KEEL_MANY, .max = 4, .requires = reqs,
                         .requires_count = 1, .flags = KEEL_KIND_NOSAVE, .fields = f, .field_count = 3 };
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    key[0] = req[0] = fname[0] = choice[0] = 'X'; /* the registry must not point at these */

    const keel_kind_desc *k = keel_kind_describe(id);
    assert_string_equal(k->key, "game:copied");
    assert_string_equal(k->display, "Copied");
    assert_string_equal(k->category, "General");
    assert_int_equal(k->version, 2);
    assert_int_equal(k->multiplicity, KEEL_MANY);
    assert_int_equal(k->max, 4);
    assert_int_equal(k->requires_count, 1);
    assert_string_equal(k->requires[0], "core:transform");
    assert_int_equal(k->rejects_count, 0);
    assert_int_equal(k->flags, KEEL_KIND_NOSAVE);
    assert_false(k->builtin);
    assert_int_equal(k->field_count, 3);
    assert_string_equal(k->fields[0].key, "speed");
    assert_int_equal(k->fields[0].def.type, KEEL_T_FLOAT); /* the int default became a float */
    assert_true(k->fields[0].def.as.f == 3.0);
    assert_int_equal(k->fields[0].flags, KEEL_FIELD_TRANSIENT);
    assert_true(k->fields[0].has_min && k->fields[0].min == 0);
    assert_string_equal(k->fields[1].choices[0], "slow");
    assert_true(k->fields[1].has_default);
    assert_int_equal(k->fields[1].def.as.i, 0);
    assert_string_equal(k->fields[2].def.as.s, "x");
    assert_int_equal(keel_kind_field(id, "gear"), 1);
    assert_int_equal(keel_kind_field(id, "nope"), -1);

    const keel_kind_desc *m = keel_kind_describe(keel_kind_find("core:mesh_renderer"));
    assert_string_equal(m->display, "Mesh Renderer");
    assert_true(m->builtin);
}

static void kinds_display_derived_from_key(void **state)
{
    keel_kind_desc d = stamina();
    d.key = "game:power_up_2";
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    assert_string_equal(keel_kind_describe(id)->display, "Power Up 2");
}

static void kinds_freeze_catches_unknown_references(void **state)
{
    const char *reqs[] = { "game:missing" }, *rejs[] = { "core:transform", "mod:gone" };
    keel_kind_desc d = stamina();
    d.requires = reqs;
    d.requires_count = 1;
    d.rejects = rejs;
    d.rejects_count = 2;
    /* Before freeze: accepted (kind files may load in any order). */
    assert_int_equal(keel_kind_declare(&d, NULL, NULL), KEEL_OK);
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_registry_freeze(&g), KEEL_NOT_FOUND);
    assert_int_equal(g.count, 2);
    assert_string_equal(g.items[0].message, "game:stamina requires 'game:missing', which is not declared");
    assert_string_equal(g.items[1].message, "game:stamina rejects 'mod:gone', which is not declared");
    keel_diags_free(&g);

    /* After freeze: refused at declaration. */
    d.key = "game:late";
    expect_refused(&d, KEEL_NOT_FOUND, "game:late requires 'game:missing', which is not declared");
    d.requires_count = 0;
    d.rejects_count = 1; /* only core:transform: fine */
    assert_int_equal(keel_kind_declare(&d, NULL, NULL), KEEL_OK);
}

static void kinds_freeze_passes_builtins(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_registry_freeze(&g), KEEL_OK);
    assert_int_equal(g.count, 0);
    keel_diags_free(&g);
}

static void kinds_layout_follows_declared_order(void **state)
{
    keel_kind_id t = keel_kind_find("core:transform");
    assert_int_equal(keel_kind_record_size(t), sizeof(keel_transform));
    assert_int_equal(keel_kind_field_offset(t, 0), offsetof(keel_transform, position));
    assert_int_equal(keel_kind_field_offset(t, 1), offsetof(keel_transform, rotation));
    assert_int_equal(keel_kind_field_offset(t, 2), offsetof(keel_transform, scale));

    keel_kind_desc d = stamina();
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    /* value f64 @0, sprinting bool @8 (padded), mode @16, label @24, range @32, count @40,
     * facing quat @48, target uuid @80, note @96 -> 104 */
    size_t want[] = { 0, 8, 16, 24, 32, 40, 48, 80, 96 };
    for (int i = 0; i < 9; i++)
        assert_int_equal(keel_kind_field_offset(id, i), want[i]);
    assert_int_equal(keel_kind_record_size(id), 104);
    assert_int_equal(keel_type_size(KEEL_T_BOOL), 8);
    assert_int_equal(keel_type_size(KEEL_T_ENTITY), 16);
    assert_int_equal(keel_type_size(KEEL_T_COLOR), 32);
}

static void kinds_type_names_round_trip(void **state)
{
    for (int t = 0; t < KEEL_T_COUNT_; t++) {
        keel_type back;
        assert_true(keel_type_parse(keel_type_name((keel_type)t), &back));
        assert_int_equal(back, t);
    }
    keel_type x;
    assert_false(keel_type_parse("vector", &x));
    assert_string_equal(keel_type_name(KEEL_T_QUAT), "quat");
    assert_int_equal(keel_type_width(KEEL_T_VEC2), 2);
    assert_int_equal(keel_type_width(KEEL_T_COLOR), 4);
    assert_int_equal(keel_type_width(KEEL_T_FLOAT), 1);
}

/* keel_field_check: status, diagnostic text, conversions. */
static keel_status check(keel_kind_id id, const char *field, keel_value *v, const char *msg)
{
    keel_diags g;
    keel_diags_init(&g);
    keel_status st = keel_field_check(id, keel_kind_field(id, field), v, &g);
    if (msg) {
        assert_int_equal(g.count, 1);
        assert_string_equal(g.items[0].message, msg);
        assert_string_equal(g.items[0].path, field);
    } else {
        assert_int_equal(g.count, 0);
    }
    keel_diags_free(&g);
    return st;
}

static void kinds_field_check_rules(void **state)
{
    keel_kind_desc d = stamina();
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    keel_value v;

    v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = 0 };
    assert_int_equal(check(id, "range", &v, "range: 0 is below the minimum (> 0)"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = 100.5 };
    assert_int_equal(check(id, "value", &v, "value: 100.5 is above the maximum (<= 100)"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = -1 };
    assert_int_equal(check(id, "value", &v, "value: -1 is below the minimum (>= 0)"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = INFINITY };
    assert_int_equal(check(id, "range", &v, "range: .inf is not a finite number"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "x" };
    assert_int_equal(check(id, "value", &v, "value: expected float, got string"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_INT, .as.i = 1 };
    assert_int_equal(check(id, "sprinting", &v, "sprinting: expected bool, got int"), KEEL_INVALID_ARGUMENT);

    /* int -> float, integral float -> int */
    v = (keel_value){ .type = KEEL_T_INT, .as.i = 50 };
    assert_int_equal(check(id, "value", &v, NULL), KEEL_OK);
    assert_int_equal(v.type, KEEL_T_FLOAT);
    assert_true(v.as.f == 50.0);
    v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = 3.0 };
    assert_int_equal(check(id, "count", &v, NULL), KEEL_OK);
    assert_int_equal(v.type, KEEL_T_INT);
    assert_int_equal(v.as.i, 3);
    v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = 2.5 };
    assert_int_equal(check(id, "count", &v, "count: expected int, got 2.5"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_INT, .as.i = 6 };
    assert_int_equal(check(id, "count", &v, "count: 6 is above the maximum (<= 5)"), KEEL_INVALID_ARGUMENT);

    /* enums: index or choice name */
    v = (keel_value){ .type = KEEL_T_ENUM, .as.i = 2 };
    assert_int_equal(check(id, "mode", &v, "mode: choice 2 is out of range (0 to 1)"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_ENUM, .as.i = -1 };
    assert_int_equal(check(id, "mode", &v, "mode: choice -1 is out of range (0 to 1)"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "run" };
    assert_int_equal(check(id, "mode", &v, NULL), KEEL_OK);
    assert_int_equal(v.type, KEEL_T_ENUM);
    assert_int_equal(v.as.i, 1);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "fly" };
    assert_int_equal(check(id, "mode", &v, "mode: 'fly' is not one of its choices"), KEEL_INVALID_ARGUMENT);

    /* quats are normalized; the zero quat cannot be */
    v = (keel_value){ .type = KEEL_T_QUAT, .as.v = { 0, 0, 0, 2 } };
    assert_int_equal(check(id, "facing", &v, NULL), KEEL_OK);
    assert_true(v.as.v[3] == 1.0);
    v = (keel_value){ .type = KEEL_T_QUAT, .as.v = { 0, 0, 0, 0 } };
    assert_int_equal(check(id, "facing", &v, "facing: a zero quaternion cannot be normalized"),
                     KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_QUAT, .as.v = { 0, NAN, 0, 1 } };
    assert_int_equal(check(id, "facing", &v, "facing: .nan is not a finite number"), KEEL_INVALID_ARGUMENT);
    v = (keel_value){ .type = KEEL_T_VEC3, .as.v = { 0, 0, 1 } };
    assert_int_equal(check(id, "facing", &v, "facing: expected quat, got vec3"), KEEL_INVALID_ARGUMENT);
    /* huge or tiny parts still normalize (their squares would leave the doubles) */
    v = (keel_value){ .type = KEEL_T_QUAT, .as.v = { 1e300, 1e300, 0, 0 } };
    assert_int_equal(check(id, "facing", &v, NULL), KEEL_OK);
    assert_true(fabs(v.as.v[0] - sqrt(0.5)) < 1e-15 && v.as.v[0] == v.as.v[1]);
    v = (keel_value){ .type = KEEL_T_QUAT, .as.v = { 1e-300, 0, 0, 0 } };
    assert_int_equal(check(id, "facing", &v, NULL), KEEL_OK);
    assert_true(v.as.v[0] == 1.0);

    /* strings are written to YAML: malformed UTF-8 is refused, not an emitter error at save */
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "caf\xc3\xa9 \xe2\x9c\x93" };
    assert_int_equal(check(id, "note", &v, NULL), KEEL_OK);
    static const char *const bad[] = { "\xff\xfe", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80" };
    for (size_t i = 0; i < N(bad); i++) {
        v = (keel_value){ .type = KEEL_T_STRING, .as.s = bad[i] };
        assert_int_equal(check(id, "note", &v, "note: a string must be valid UTF-8"), KEEL_INVALID_ARGUMENT);
    }
    assert_int_equal(keel_field_check(id, 0, NULL, NULL), KEEL_INVALID_ARGUMENT);

    /* entity fields: UUID text accepted, malformed refused */
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "550e8400-e29b-41d4-a716-446655440000" };
    assert_int_equal(check(id, "target", &v, NULL), KEEL_OK);
    assert_int_equal(v.type, KEEL_T_ENTITY);
    assert_false(v.nil);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "550E8400-E29B-41D4-A716-446655440000" };
    assert_int_equal(check(id, "target", &v, "target: '550E8400-E29B-41D4-A716-446655440000' is not a UUID"),
                     KEEL_INVALID_ARGUMENT);

    /* strings: the 64 KiB limit */
    char *big = malloc(65537 + 1);
    memset(big, 'a', 65537);
    big[65537] = '\0';
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = big };
    assert_int_equal(check(id, "note", &v, "note: string of 65537 bytes exceeds the limit of 65536"),
                     KEEL_LIMIT_EXCEEDED);
    big[65536] = '\0';
    assert_int_equal(check(id, "note", &v, NULL), KEEL_OK);
    free(big);

    /* bad kind or field index */
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_field_check(id, 99, &v, &g), KEEL_NOT_FOUND);
    assert_int_equal(keel_field_check(999, 0, &v, &g), KEEL_NOT_FOUND);
    keel_diags_free(&g);
}

static void kinds_records_defaults_copy_fini(void **state)
{
    keel_kind_desc d = stamina();
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    void *r = calloc(1, keel_kind_record_size(id));
    keel__record_init(id, r);
    keel_value v;
    keel__record_get(id, r, keel_kind_field(id, "value"), &v);
    assert_true(v.as.f == 100);
    keel__record_get(id, r, keel_kind_field(id, "mode"), &v);
    assert_int_equal(v.type, KEEL_T_ENUM);
    assert_int_equal(v.as.i, 1);
    keel__record_get(id, r, keel_kind_field(id, "label"), &v);
    assert_string_equal(v.as.s, "tired");
    keel__record_get(id, r, keel_kind_field(id, "note"), &v);
    assert_non_null(v.as.s);
    assert_string_equal(v.as.s, ""); /* never NULL */
    keel__record_get(id, r, keel_kind_field(id, "facing"), &v);
    assert_true(v.as.v[0] == 0 && v.as.v[3] == 1); /* identity */
    keel__record_get(id, r, keel_kind_field(id, "target"), &v);
    assert_true(v.nil);
    keel__record_get(id, r, keel_kind_field(id, "range"), &v);
    assert_true(v.as.f == 1);

    keel_value s = { .type = KEEL_T_STRING, .as.s = "changed" };
    keel__record_put(id, r, keel_kind_field(id, "label"), &s);
    void *c = calloc(1, keel_kind_record_size(id));
    keel__record_copy(id, c, r);
    keel__record_fini(id, r); /* the copy owns its own strings */
    keel__record_get(id, c, keel_kind_field(id, "label"), &v);
    assert_string_equal(v.as.s, "changed");
    keel__record_get(id, c, keel_kind_field(id, "value"), &v);
    assert_true(v.as.f == 100);
    keel__record_fini(id, c);
    free(r);
    free(c);
}

static void kinds_implicit_defaults_respect_bounds(void **state)
{
    keel_field_desc f[] = {
        { .key = "a", .type = KEEL_T_FLOAT, .has_min = true, .min = 5 },
        { .key = "b", .type = KEEL_T_FLOAT, .has_min = true, .min = 0, .min_exclusive = true },
        { .key = "c", .type = KEEL_T_INT, .has_max = true, .max = -3 },
    };
    keel_kind_desc d = { .key = "game:bounds", .fields = f, .field_count = 3 };
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    const keel_kind_desc *k = keel_kind_describe(id);
    assert_true(k->fields[0].def.as.f == 5);
    assert_true(k->fields[1].def.as.f > 0);
    assert_int_equal(k->fields[2].def.as.i, -3);
}

static int user_frees;
static void count_free(void *u)
{
    user_frees++;
    free(u);
}

static void kinds_redeclare_replaces_fields_and_user(void **state)
{
    user_frees = 0;
    keel_kind_desc d = stamina();
    d.user = malloc(4);
    d.user_free = count_free;
    keel_kind_id id, again;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    keel_field_desc f[] = { { .key = "value", .type = KEEL_T_FLOAT }, { .key = "extra", .type = KEEL_T_VEC3 } };
    keel_kind_desc e = { .key = "game:stamina", .version = 2, .fields = f, .field_count = 2,
                         .user = malloc(4), .user_free = count_free };
    assert_int_equal(keel_kind_declare(&e, &again, NULL), KEEL_OK);
    assert_int_equal(again, id);
    assert_int_equal(user_frees, 1); /* the old user value */
    assert_int_equal(keel_kind_describe(id)->field_count, 2);
    assert_int_equal(keel_kind_record_size(id), 32);
    assert_int_equal(keel_kind_field(id, "extra"), 1);
    assert_int_equal(keel_kind_field(id, "mode"), -1);
    /* A refused redeclaration leaves the kind as it was. */
    e.version = -4;
    expect_refused(&e, KEEL_INVALID_ARGUMENT, "game:stamina: version -4 is below 1");
    assert_int_equal(keel_kind_describe(id)->version, 2);
    keel_shutdown();
    assert_int_equal(user_frees, 2); /* shutdown frees the current one */
    assert_int_equal(keel_kind_count(), 0);
    assert_int_equal(keel_init(), KEEL_OK); /* and init works again */
    assert_int_equal(keel_kind_count(), 9);
}

/* Redeclaring through the registry reaches live worlds: carried over by name, unknowns adopted. */
static void kinds_redeclare_relayouts_and_adopts_in_worlds(void **state)
{
    keel_field_desc v1[] = { { .key = "value", .type = KEEL_T_FLOAT, .has_default = true,
                               .def = { .type = KEEL_T_FLOAT, .as.f = 100 } },
                             { .key = "name", .type = KEEL_T_STRING } };
    keel_kind_desc d = { .key = "game:stamina", .fields = v1, .field_count = 2 };
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    keel_world *w = keel_world_new("W");
    keel_entity e;
    assert_int_equal(keel_spawn(w, "E", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    keel_comp c;
    assert_int_equal(keel_add(w, e, id, NULL, &c, NULL, NULL), KEEL_OK);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 40 };
    assert_int_equal(keel_set(w, c, 0, &v, NULL, NULL), KEEL_OK);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "kept" };
    assert_int_equal(keel_set(w, c, 1, &v, NULL, NULL), KEEL_OK);

    /* v2 puts a new field first: the record is re-laid out, values follow their names. */
    keel_field_desc v2[] = { { .key = "extra", .type = KEEL_T_VEC3 },
                             { .key = "name", .type = KEEL_T_STRING },
                             { .key = "value", .type = KEEL_T_FLOAT } };
    keel_kind_desc d2 = { .key = "game:stamina", .version = 2, .fields = v2, .field_count = 3 };
    keel_kind_id again;
    assert_int_equal(keel_kind_declare(&d2, &again, NULL), KEEL_OK);
    assert_int_equal(again, id);
    keel_value got;
    assert_int_equal(keel_get(w, c, keel_kind_field(id, "value"), &got, NULL), KEEL_OK);
    assert_true(got.as.f == 40);
    assert_int_equal(keel_get(w, c, keel_kind_field(id, "name"), &got, NULL), KEEL_OK);
    assert_string_equal(got.as.s, "kept");

    /* An unknown component under a key declared later comes alive in its slot. */
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "pull", keel_node_new_scalar("3.5", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(w, e, "mod:winch", 1, 0, body, NULL), KEEL_OK);
    keel_node_free(body);
    keel_field_desc wf[] = { { .key = "pull", .type = KEEL_T_FLOAT } };
    keel_kind_desc wd = { .key = "mod:winch", .fields = wf, .field_count = 1 };
    keel_kind_id winch;
    assert_int_equal(keel_kind_declare(&wd, &winch, NULL), KEEL_OK);
    keel_comp wc;
    assert_true(keel_get_comp(w, e, winch, 0, &wc));
    assert_int_equal(keel_get(w, wc, 0, &got, NULL), KEEL_OK);
    assert_true(got.as.f == 3.5);
    keel_world_free(w);
}

/* Kinds no entity could hold, and built-in kinds (read by the core as fixed structs), are refused. */
static void kinds_refuse_impossible_and_builtin_declarations(void **state)
{
    static const char *const self[] = { "game:loop" };
    keel_kind_desc d = { .key = "game:loop", .requires = self, .requires_count = 1 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:loop: a kind cannot require itself");
    static const char *const tr[] = { "core:transform" };
    d = (keel_kind_desc){ .key = "game:torn", .requires = tr, .requires_count = 1, .rejects = tr, .rejects_count = 1 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:torn: requires and rejects core:transform");
    d = (keel_kind_desc){ .key = "game:nowhere", .flags = KEEL_KIND_ROOT_ONLY | KEEL_KIND_NOT_ON_ROOT };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:nowhere: root_only and not_on_root together leave it no place");
    d = (keel_kind_desc){ .key = "game:odd", .flags = 0x100 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:odd: unknown kind flags 0x100");
    keel_field_desc bad_name[] = { { .key = "n\xff", .type = KEEL_T_INT } };
    d = (keel_kind_desc){ .key = "game:utf", .fields = bad_name, .field_count = 1 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:utf: fields[0]: a field name must be valid UTF-8");
    static const char *const bad_choices[] = { "a", "b\xfe" };
    keel_field_desc bad_choice[] = { { .key = "m", .type = KEEL_T_ENUM, .choices = bad_choices, .choice_count = 2 } };
    d = (keel_kind_desc){ .key = "game:utf", .fields = bad_choice, .field_count = 1 };
    expect_refused(&d, KEEL_INVALID_ARGUMENT, "game:utf: field 'm': a choice must be valid UTF-8");

    keel_field_desc f[] = { { .key = "scale", .type = KEEL_T_VEC3 } };
    keel_kind_desc again = *keel_kind_describe(keel_kind_find("core:transform"));
    again.fields = f;
    again.field_count = 1;
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_kind_declare(&again, NULL, &g), KEEL_INVALID_OPERATION);
    assert_string_equal(g.items[0].message, "core:transform is built in: it cannot be redeclared");
    keel_diags_free(&g);
    assert_int_equal(keel_kind_describe(keel_kind_find("core:transform"))->field_count, 3);
}

/* A migration (a pure rewrite of a body) may not change the registry under the loader. */
static keel_status redeclaring_migration(keel_node *body, int to_version, void *user, keel_diags *d)
{
    keel_kind_desc again = { .key = "game:mig", .version = 2 };
    return keel_kind_declare(&again, NULL, d);
}

static void kinds_refuse_declaring_from_a_migration(void **state)
{
    keel_kind_desc d = { .key = "game:mig", .version = 2, .migrate = redeclaring_migration };
    assert_int_equal(keel_kind_declare(&d, NULL, NULL), KEEL_OK);
    static const char doc[] = "keel: 1\nscene: {uuid: 550e8400-e29b-41d4-a716-446655440000, name: M}\n"
                              "entities:\n- uuid: 550e8400-e29b-41d4-a716-446655440001\n  name: A\n"
                              "  components:\n  - {kind: game:mig, version: 1, body: {}}\n";
    keel_world *w = NULL;
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_scene_parse(doc, sizeof doc - 1, NULL, &w, &g), KEEL_INVALID_OPERATION);
    assert_null(w);
    assert_non_null(strstr(g.items[0].message, "game:mig: kinds cannot be declared from a validate or migrate callback"));
    keel_diags_free(&g);
}

/* A redeclaration whose rules a live component would break is refused, naming it, and the
 * old declaration stays; values outside new bounds go back to their defaults, with a warning. */
static void kinds_redeclare_checks_live_components(void **state)
{
    keel_field_desc f1[] = { { .key = "v", .type = KEEL_T_FLOAT, .has_default = true,
                               .def = { .type = KEEL_T_FLOAT, .as.f = 1 } } };
    keel_kind_desc d = { .key = "game:pips", .multiplicity = KEEL_MANY, .fields = f1, .field_count = 1 };
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    keel_world *w = keel_world_new("W");
    keel_entity e;
    assert_int_equal(keel_spawn(w, "E", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    keel_comp c0, c1;
    assert_int_equal(keel_add(w, e, id, NULL, &c0, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, id, NULL, &c1, NULL, NULL), KEEL_OK);

    keel_kind_desc one = d;
    one.multiplicity = KEEL_ONE;
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_kind_declare(&one, NULL, &g), KEEL_INVALID_OPERATION);
    assert_int_equal(g.count, 1);
    assert_non_null(strstr(g.items[0].message, "holds game:pips in slot 1, and it is now a one kind"));
    keel_diags_free(&g);
    assert_int_equal(keel_kind_describe(id)->multiplicity, KEEL_MANY);

    keel_kind_desc capped = d;
    capped.max = 1;
    keel_diags_init(&g);
    assert_int_equal(keel_kind_declare(&capped, NULL, &g), KEEL_INVALID_OPERATION);
    assert_non_null(strstr(g.items[0].message, "holds 2 game:pips components, and it now allows at most 1"));
    keel_diags_free(&g);
    assert_int_equal(keel_kind_describe(id)->max, 0);

    /* once the world is gone, nothing stands in the way */
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 8 };
    assert_int_equal(keel_set(w, c0, 0, &v, NULL, NULL), KEEL_OK);
    keel_field_desc f2[] = { { .key = "v", .type = KEEL_T_FLOAT, .has_default = true,
                               .def = { .type = KEEL_T_FLOAT, .as.f = 2 }, .has_max = true, .max = 5 } };
    keel_kind_desc bounded = d;
    bounded.fields = f2;
    uint64_t rev = keel_world_revision(w);
    keel_diags_init(&g);
    assert_int_equal(keel_kind_declare(&bounded, NULL, &g), KEEL_OK);
    assert_int_equal(g.count, 1);
    assert_int_equal(g.items[0].severity, KEEL_SEV_WARNING);
    assert_non_null(strstr(g.items[0].message, "game:pips slot 0: v: 8 is above the maximum"));
    keel_diags_free(&g);
    keel_value got;
    assert_int_equal(keel_get(w, c0, 0, &got, NULL), KEEL_OK);
    assert_true(got.as.f == 2);
    assert_int_equal(keel_get(w, c1, 0, &got, NULL), KEEL_OK);
    assert_true(got.as.f == 1);
    assert_true(keel_world_revision(w) > rev);

    keel_world_free(w);
    assert_int_equal(keel_kind_declare(&one, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_kind_describe(id)->multiplicity, KEEL_ONE);
}

/* Enums mean choice names: a redeclare that reorders or drops choices remaps live
 * components by name; a choice that is gone takes the new default. */
static void kinds_redeclare_remaps_enum_choices_by_name(void **state)
{
    static const char *const c1[] = { "walk", "run", "swim" };
    keel_field_desc f1[] = { { .key = "gait", .type = KEEL_T_ENUM, .choices = c1, .choice_count = 3 } };
    keel_kind_desc d = { .key = "game:gait", .fields = f1, .field_count = 1 };
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&d, &id, NULL), KEEL_OK);
    keel_world *w = keel_world_new("W");
    keel_comp c[3];
    for (int i = 0; i < 3; i++) {
        keel_entity e;
        assert_int_equal(keel_spawn(w, "E", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, id, NULL, &c[i], NULL, NULL), KEEL_OK);
        keel_value v = { .type = KEEL_T_STRING, .as.s = c1[i] };
        assert_int_equal(keel_set(w, c[i], 0, &v, NULL, NULL), KEEL_OK);
    }
    /* same field, same type: only the choices move (and "swim" goes, "fly" comes) */
    static const char *const c2[] = { "fly", "run", "walk" };
    keel_field_desc f2[] = { { .key = "gait", .type = KEEL_T_ENUM, .choices = c2, .choice_count = 3,
                               .has_default = true, .def = { .type = KEEL_T_ENUM, .as.i = 1 } } };
    keel_kind_desc d2 = { .key = "game:gait", .fields = f2, .field_count = 1 };
    assert_int_equal(keel_kind_declare(&d2, NULL, NULL), KEEL_OK);
    static const char *const want[] = { "walk", "run", "run" /* swim is gone: the default */ };
    for (int i = 0; i < 3; i++) {
        keel_value got;
        assert_int_equal(keel_get(w, c[i], 0, &got, NULL), KEEL_OK);
        assert_true(got.as.i >= 0 && got.as.i < 3);
        assert_string_equal(c2[got.as.i], want[i]);
        keel_node *b = keel_body_encode(w, c[i], false);
        assert_string_equal(keel_node_get(b, "gait")->text, want[i]);
        keel_node_free(b);
    }
    /* fewer choices than a stored index: no out-of-range index survives */
    static const char *const c3[] = { "walk" };
    keel_field_desc f3[] = { { .key = "gait", .type = KEEL_T_ENUM, .choices = c3, .choice_count = 1 } };
    keel_kind_desc d3 = { .key = "game:gait", .fields = f3, .field_count = 1 };
    assert_int_equal(keel_kind_declare(&d3, NULL, NULL), KEEL_OK);
    for (int i = 0; i < 3; i++) {
        keel_value got;
        assert_int_equal(keel_get(w, c[i], 0, &got, NULL), KEEL_OK);
        assert_int_equal(got.as.i, 0);
    }
    keel_world_free(w);
}

/* Adoption goes through the kind's rules: what the stack would refuse stays unknown, reported. */
static void kinds_adoption_keeps_rule_breakers_unknown(void **state)
{
    keel_world *w = keel_world_new("W");
    keel_entity a, b;
    assert_int_equal(keel_spawn(w, "A", KEEL_NO_ENTITY, NULL, &a, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "B", KEEL_NO_ENTITY, NULL, &b, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, b, keel_kind_find("core:transform"), NULL, NULL, NULL, NULL), KEEL_OK);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "pull", keel_node_new_scalar("2", KEEL_STYLE_PLAIN));
    /* a: two under a key that turns out a one kind, and no transform */
    assert_int_equal(keel_add_unknown(w, a, "mod:hoist", 1, 0, body, NULL), KEEL_OK);
    assert_int_equal(keel_add_unknown(w, a, "mod:hoist", 1, 1, body, NULL), KEEL_OK);
    assert_int_equal(keel_add_unknown(w, b, "mod:hoist", 1, 0, body, NULL), KEEL_OK);
    keel_node_free(body);

    static const char *const needs[] = { "core:transform" };
    keel_field_desc hf[] = { { .key = "pull", .type = KEEL_T_FLOAT } };
    keel_kind_desc hd = { .key = "mod:hoist", .fields = hf, .field_count = 1 };
    keel_kind_id hoist;
    keel_diags d;
    keel_diags_init(&d);
    /* first without requires: slot 0 on A comes alive, slot 1 breaks multiplicity one */
    assert_int_equal(keel_kind_declare(&hd, &hoist, &d), KEEL_OK);
    assert_int_equal(d.errors, 0);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].severity, KEEL_SEV_WARNING);
    assert_int_equal(d.items[0].code, KEEL_INVALID_OPERATION);
    assert_non_null(strstr(d.items[0].message, "mod:hoist slot 1 on entity"));
    assert_non_null(strstr(d.items[0].message, "only slot 0"));
    keel_diags_free(&d);
    keel_member m;
    assert_true(keel_member_at(w, a, 0, &m));
    assert_true(m.loaded);
    assert_true(keel_member_at(w, a, 1, &m));
    assert_false(m.loaded);
    assert_string_equal(m.key, "mod:hoist");
    assert_int_equal(m.slot, 1);
    assert_non_null(keel_node_get(m.preserved, "pull"));
    assert_true(keel_member_at(w, b, 1, &m));
    assert_true(m.loaded);

    /* a key whose kind requires a transform: adopted on B only */
    keel_node *e = keel_node_new_map();
    assert_int_equal(keel_add_unknown(w, a, "mod:crane", 1, 0, e, NULL), KEEL_OK);
    assert_int_equal(keel_add_unknown(w, b, "mod:crane", 1, 0, e, NULL), KEEL_OK);
    keel_node_free(e);
    keel_kind_desc cd = { .key = "mod:crane", .requires = needs, .requires_count = 1 };
    keel_kind_id crane;
    keel_diags_init(&d);
    assert_int_equal(keel_kind_declare(&cd, &crane, &d), KEEL_OK);
    assert_int_equal(d.count, 1);
    assert_non_null(strstr(d.items[0].message, "requires core:transform"));
    keel_diags_free(&d);
    assert_false(keel_get_comp(w, a, crane, KEEL_SLOT_AUTO, NULL));
    assert_true(keel_get_comp(w, b, crane, KEEL_SLOT_AUTO, NULL));
    assert_int_equal(keel_check_rules(w, a, "", NULL), KEEL_OK);
    assert_int_equal(keel_check_rules(w, b, "", NULL), KEEL_OK);
    keel_world_free(w);
}

/* ---- diagnostics (diag.c) ---- */

static void diags_status_names(void **state)
{
    static const char *const names[] = { "OK", "NotFound", "Unsupported", "ProtectedEntity", "InvalidOperation",
                                         "InvalidArgument", "LimitExceeded", "ParseError", "IOError" };
    for (int s = KEEL_OK; s <= KEEL_IO_ERROR; s++)
        assert_string_equal(keel_status_name((keel_status)s), names[s]);
}

static void diags_add_count_and_status(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_diags_status(&g), KEEL_OK);
    assert_int_equal(keel_diag_add(&g, KEEL_SEV_WARNING, KEEL_NOT_FOUND, NULL, NULL, 0, 0, "w %d", 1), KEEL_NOT_FOUND);
    assert_int_equal(keel_diags_status(&g), KEEL_OK); /* warnings are not errors */
    assert_int_equal(KEEL_ERROR(&g, KEEL_PARSE_ERROR, "a.b", "first %s", "error"), KEEL_PARSE_ERROR);
    assert_int_equal(KEEL_ERROR(&g, KEEL_IO_ERROR, "", "second"), KEEL_IO_ERROR);
    assert_int_equal(g.count, 3);
    assert_int_equal(g.errors, 2);
    assert_int_equal(keel_diags_status(&g), KEEL_PARSE_ERROR);
    assert_string_equal(g.items[0].path, "");
    assert_null(g.items[0].file);
    assert_string_equal(g.items[1].message, "first error");
    assert_int_equal(KEEL_ERROR(NULL, KEEL_NOT_FOUND, "", "nowhere"), KEEL_NOT_FOUND); /* NULL list */
    keel_diags_free(&g);
    keel_diags_free(&g); /* twice is fine */
    assert_int_equal(g.count, 0);
}

static void diags_append_prefixes_paths(void **state)
{
    keel_diags dst, src;
    keel_diags_init(&dst);
    keel_diags_init(&src);
    KEEL_ERROR(&dst, KEEL_NOT_FOUND, "x", "already");
    KEEL_ERROR(&src, KEEL_INVALID_ARGUMENT, "range", "one");
    keel_diag_add(&src, KEEL_SEV_WARNING, KEEL_NOT_FOUND, "[2].name", "f.yaml", 3, 4, "two");
    KEEL_ERROR(&src, KEEL_PARSE_ERROR, "", "three");
    keel_diags_append(&dst, &src, "entities[3].components[1].body");
    assert_int_equal(src.count, 0);
    assert_int_equal(dst.count, 4);
    assert_int_equal(dst.errors, 3);
    assert_string_equal(dst.items[1].path, "entities[3].components[1].body.range");
    assert_string_equal(dst.items[2].path, "entities[3].components[1].body[2].name");
    assert_string_equal(dst.items[2].file, "f.yaml");
    assert_int_equal(dst.items[2].line, 3);
    assert_string_equal(dst.items[3].path, "entities[3].components[1].body");
    KEEL_ERROR(&src, KEEL_IO_ERROR, "p", "four");
    keel_diags_append(&dst, &src, NULL);
    assert_string_equal(dst.items[4].path, "p");
    keel_diags_free(&dst);
    keel_diags_free(&src);
}

static void diags_format_lines(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    keel_diag_add(&g, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "entities[0].components[0].body.range", "a.yaml", 12, 9,
                  "range: 0 is below the minimum (> 0)");
    KEEL_ERROR(&g, KEEL_NOT_FOUND, "", "no such kind");
    keel_diag_add(&g, KEEL_SEV_WARNING, KEEL_NOT_FOUND, "", "a.yaml", 0, 0, "mod:winch is not declared: 3 components kept");
    char buf[256];
    assert_string_equal(keel_diag_format(&g.items[0], buf, sizeof buf),
                        "a.yaml:12:9: error: InvalidArgument: range: 0 is below the minimum (> 0) "
                        "(at entities[0].components[0].body.range)");
    assert_string_equal(keel_diag_format(&g.items[1], buf, sizeof buf), "error: NotFound: no such kind");
    assert_string_equal(keel_diag_format(&g.items[2], buf, sizeof buf),
                        "a.yaml: warning: NotFound: mod:winch is not declared: 3 components kept");
    char small[12];
    assert_string_equal(keel_diag_format(&g.items[1], small, sizeof small), "error: NotF");
    keel_diags_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(kinds_init_registers_builtins_once, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_refuse_bad_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_refuse_bad_version_and_max, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_refuse_bad_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_ids_count_from_one_and_stay, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_listing_is_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_describe_returns_owned_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_display_derived_from_key, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_freeze_catches_unknown_references, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_freeze_passes_builtins, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_layout_follows_declared_order, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_type_names_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_field_check_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_records_defaults_copy_fini, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_implicit_defaults_respect_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_redeclare_replaces_fields_and_user, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_redeclare_relayouts_and_adopts_in_worlds, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_redeclare_checks_live_components, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_refuse_impossible_and_builtin_declarations, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_refuse_declaring_from_a_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_redeclare_remaps_enum_choices_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(kinds_adoption_keeps_rule_breakers_unknown, setup, teardown),
        cmocka_unit_test(diags_status_names),
        cmocka_unit_test(diags_add_count_and_status),
        cmocka_unit_test(diags_append_prefixes_paths),
        cmocka_unit_test(diags_format_lines),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
