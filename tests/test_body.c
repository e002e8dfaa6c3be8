/* test_body.c — decoding bodies into records (defaults, warnings, errors, migrations) and encoding back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "model/body.h"
#include "model/record.h"
#include "files/yaml_read.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const modes[] = { "walk", "run" };
static const keel_field_desc fields[] = {
    { .key = "value", .type = KEEL_T_FLOAT, .has_default = true, .def = { .type = KEEL_T_FLOAT, .as.f = 100 },
      .has_min = true, .min = 0, .has_max = true, .max = 100 },
    { .key = "sprinting", .type = KEEL_T_BOOL },
    { .key = "mode", .type = KEEL_T_ENUM, .choices = modes, .choice_count = 2 },
    { .key = "range", .type = KEEL_T_FLOAT, .has_default = true, .def = { .type = KEEL_T_FLOAT, .as.f = 1 },
      .has_min = true, .min = 0, .min_exclusive = true },
    { .key = "steps", .type = KEEL_T_INT },
    { .key = "offset", .type = KEEL_T_VEC3 },
    { .key = "label", .type = KEEL_T_STRING },
    { .key = "icon", .type = KEEL_T_ASSET },
    { .key = "scratch", .type = KEEL_T_FLOAT, .flags = KEEL_FIELD_TRANSIENT },
};

static keel_kind_id kid;
static void *rec;

static int setup(void **state)
{
    if (keel_init())
        return -1;
    keel_kind_desc d = { .key = "game:stamina", .version = 1, .fields = fields, .field_count = N(fields) };
    if (keel_kind_declare(&d, &kid, NULL))
        return -1;
    rec = calloc(1, keel_kind_record_size(kid));
    keel__record_init(kid, rec);
    return 0;
}

static int teardown(void **state)
{
    keel__record_fini(kid, rec);
    free(rec);
    keel_shutdown();
    return 0;
}

static keel_node *parse(const char *yaml)
{
    keel_limits lim = keel_limits_default();
    keel_node *n = NULL;
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel__yaml_parse(yaml, strlen(yaml), &lim, "t.yaml", &n, &g), KEEL_OK);
    keel_diags_free(&g);
    assert_non_null(n);
    return n;
}

static keel_status decode(const char *yaml, bool strict, keel_diags *g)
{
    keel_node *n = parse(yaml);
    keel_status st = keel__body_decode(kid, n, 1, strict, rec, "body", "t.yaml", g);
    keel_node_free(n);
    return st;
}

static double getf(const char *field)
{
    keel_value v;
    keel__record_get(kid, rec, keel_kind_field(kid, field), &v);
    return v.as.f;
}

static int64_t geti(const char *field)
{
    keel_value v;
    keel__record_get(kid, rec, keel_kind_field(kid, field), &v);
    return v.as.i;
}

static void expect_diag(const keel_diag *g, keel_severity sev, keel_status code, const char *path, int line,
                        int col, const char *msg)
{
    assert_int_equal(g->severity, sev);
    assert_int_equal(g->code, code);
    assert_string_equal(g->path, path);
    assert_string_equal(g->file, "t.yaml");
    assert_int_equal(g->line, line);
    assert_int_equal(g->col, col);
    assert_string_equal(g->message, msg);
}

static void body_missing_fields_keep_defaults(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("value: 40\n", false, &g), KEEL_OK);
    assert_int_equal(g.count, 0);
    assert_true(getf("value") == 40);
    assert_true(getf("range") == 1);
    assert_int_equal(geti("mode"), 0);
    /* An empty body and a NULL one: everything stays at the defaults. */
    assert_int_equal(keel__body_decode(kid, NULL, 1, false, rec, "body", NULL, &g), KEEL_OK);
    keel_node *empty = keel_node_new_scalar("", KEEL_STYLE_PLAIN);
    assert_int_equal(keel__body_decode(kid, empty, 0, false, rec, "body", NULL, &g), KEEL_OK);
    keel_node_free(empty);
    assert_int_equal(g.count, 0);
    assert_true(getf("value") == 40);
    keel_diags_free(&g);
}

static void body_reads_each_type(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("value: 12.5\nsprinting: true\nmode: run\nrange: 3\nsteps: 0x10\n"
                            "offset: [1, -2.5, 3e2]\nlabel: 42\n"
                            "icon: 550e8400-e29b-41d4-a716-446655440000\n",
                            false, &g),
                     KEEL_OK);
    assert_int_equal(g.count, 0);
    keel_value v;
    assert_true(getf("value") == 12.5);
    keel__record_get(kid, rec, keel_kind_field(kid, "sprinting"), &v);
    assert_true(v.as.b);
    assert_int_equal(geti("mode"), 1);
    assert_true(getf("range") == 3); /* an int for a float field */
    assert_int_equal(geti("steps"), 16);
    keel__record_get(kid, rec, keel_kind_field(kid, "offset"), &v);
    assert_true(v.as.v[0] == 1 && v.as.v[1] == -2.5 && v.as.v[2] == 300);
    keel__record_get(kid, rec, keel_kind_field(kid, "label"), &v);
    assert_string_equal(v.as.s, "42"); /* any scalar's text */
    keel__record_get(kid, rec, keel_kind_field(kid, "icon"), &v);
    assert_false(v.nil);
    assert_int_equal(v.as.u.bytes[0], 0x55);
    assert_int_equal(decode("icon: null\nsteps: 7.0\n", false, &g), KEEL_OK);
    keel__record_get(kid, rec, keel_kind_field(kid, "icon"), &v);
    assert_true(v.nil);
    assert_int_equal(geti("steps"), 7);
    keel_diags_free(&g);
}

static void body_unknown_field_is_a_warning(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("value: 5\nvelocity: 3\n", false, &g), KEEL_OK);
    assert_int_equal(g.count, 1);
    assert_int_equal(g.errors, 0);
    expect_diag(&g.items[0], KEEL_SEV_WARNING, KEEL_NOT_FOUND, "body.velocity", 2, 1,
                "game:stamina: field 'velocity' is no longer declared; skipped");
    assert_true(getf("value") == 5);
    keel_diags_free(&g);
}

static void body_wrong_type(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("value: 5\nsprinting: yes\n", false, &g), KEEL_INVALID_ARGUMENT);
    assert_int_equal(g.count, 1);
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.sprinting", 2, 12,
                "sprinting: expected bool, got 'yes'");
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(decode("value: \"7\"\n", false, &g), KEEL_INVALID_ARGUMENT);
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.value", 1, 8,
                "value: expected float, got '7'"); /* quoted: a string */
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(decode("label:\n  a: 1\n", false, &g), KEEL_INVALID_ARGUMENT);
    assert_string_equal(g.items[0].message, "label: expected string, got a map");
    keel_diags_free(&g);
}

static void body_not_finite_and_out_of_range(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("value: .nan\nrange: 0\nsteps: 1.5\n", false, &g), KEEL_INVALID_ARGUMENT);
    assert_int_equal(g.errors, 3); /* every problem, not only the first */
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.value", 1, 8,
                "value: .nan is not a finite number");
    expect_diag(&g.items[1], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.range", 2, 8,
                "range: 0 is below the minimum (> 0)");
    expect_diag(&g.items[2], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.steps", 3, 8,
                "steps: expected int, got 1.5");
    assert_true(getf("value") == 100); /* refused values are not written */
    assert_true(getf("range") == 1);
    keel_diags_free(&g);
}

static void body_vectors_need_exact_length(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("offset: [1, 2]\n", false, &g), KEEL_INVALID_ARGUMENT);
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.offset", 1, 9,
                "offset: expected vec3 (a sequence of 3 numbers), got a sequence of another length");
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(decode("offset: [1, x, 3]\n", false, &g), KEEL_INVALID_ARGUMENT);
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.offset", 1, 13,
                "offset: expected vec3 (a sequence of 3 numbers), got a non-number in it");
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(decode("offset: 3\n", false, &g), KEEL_INVALID_ARGUMENT);
    assert_string_equal(g.items[0].message, "offset: expected vec3 (a sequence of 3 numbers), got '3'");
    keel_diags_free(&g);
}

static void body_enum_by_name_lenient_and_strict(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("mode: run\n", false, &g), KEEL_OK);
    assert_int_equal(geti("mode"), 1);
    assert_int_equal(decode("mode: fly\n", false, &g), KEEL_OK);
    assert_int_equal(g.count, 1);
    expect_diag(&g.items[0], KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, "body.mode", 1, 7,
                "mode: 'fly' is not one of its choices; kept the default");
    assert_int_equal(geti("mode"), 1); /* unchanged */
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(decode("mode: fly\n", true, &g), KEEL_INVALID_ARGUMENT);
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.mode", 1, 7,
                "mode: 'fly' is not one of its choices");
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(decode("mode: 1\n", true, &g), KEEL_INVALID_ARGUMENT); /* by name, never by index */
    keel_diags_free(&g);
}

static void body_bad_uuid_is_parse_error(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("icon: 550E8400-E29B-41D4-A716-446655440000\n", false, &g), KEEL_PARSE_ERROR);
    expect_diag(&g.items[0], KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "body.icon", 1, 7,
                "icon: '550E8400-E29B-41D4-A716-446655440000' is not a canonical UUID");
    keel_diags_free(&g);
}

static void body_must_be_a_map(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    keel_node *n = parse("- 1\n- 2\n");
    assert_int_equal(keel__body_decode(kid, n, 1, false, rec, "body", "t.yaml", &g), KEEL_PARSE_ERROR);
    assert_string_equal(g.items[0].message, "game:stamina: a body must be a map of fields");
    assert_string_equal(g.items[0].path, "body");
    keel_node_free(n);
    keel_diags_free(&g);
}

/* ---- migrations ---- */

static int calls[8], ncalls;

/* v2: "velocity" (km/h) became "speed" (m/s); v3: "speed" became "value". */
static keel_status migrate(keel_node *body, int to, void *user, keel_diags *d)
{
    calls[ncalls++] = to;
    if (to == 2) {
        double kmh = 0;
        const keel_node *v = keel_node_get(body, "velocity");
        if (v && !keel_node_as_float(v, &kmh))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "velocity", "velocity is not a number");
        char buf[40];
        keel_format_double(kmh / 3.6, buf, sizeof buf);
        keel_node_put(body, "speed", keel_node_new_scalar(buf, KEEL_STYLE_PLAIN));
        keel_node_put(body, "velocity", keel_node_new_scalar("", KEEL_STYLE_PLAIN));
    }
    if (to == 3) {
        const keel_node *s = keel_node_get(body, "speed");
        keel_node_put(body, "value", keel_node_copy(s));
    }
    return KEEL_OK;
}

static void declare_v3(void)
{
    keel_field_desc f[] = {
        { .key = "value", .type = KEEL_T_FLOAT },
        { .key = "velocity", .type = KEEL_T_STRING },
        { .key = "speed", .type = KEEL_T_FLOAT },
    };
    keel_kind_desc d = { .key = "game:stamina", .version = 3, .fields = f, .field_count = 3, .migrate = migrate };
    keel__record_fini(kid, rec);
    assert_int_equal(keel_kind_declare(&d, NULL, NULL), KEEL_OK);
    rec = realloc(rec, keel_kind_record_size(kid));
    keel__record_init(kid, rec);
}

static void body_migrations_run_in_order_on_a_copy(void **state)
{
    declare_v3();
    ncalls = 0;
    keel_node *n = parse("velocity: 36\n");
    keel_node *before = keel_node_copy(n);
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel__body_decode(kid, n, 1, false, rec, "body", "t.yaml", &g), KEEL_OK);
    assert_int_equal(g.count, 0);
    assert_int_equal(ncalls, 2);
    assert_int_equal(calls[0], 2);
    assert_int_equal(calls[1], 3);
    assert_true(getf("speed") == 10);
    assert_true(getf("value") == 10);
    assert_true(keel_node_equal(n, before)); /* the caller's body is untouched */

    /* From version 2 only the step to 3 runs; the current version runs none. */
    ncalls = 0;
    keel_node *v2 = parse("speed: 4\n");
    assert_int_equal(keel__body_decode(kid, v2, 2, false, rec, "body", "t.yaml", &g), KEEL_OK);
    assert_int_equal(ncalls, 1);
    assert_true(getf("value") == 4);
    ncalls = 0;
    assert_int_equal(keel__body_decode(kid, v2, 3, false, rec, "body", "t.yaml", &g), KEEL_OK);
    assert_int_equal(ncalls, 0);
    keel_node_free(v2);
    keel_node_free(before);
    keel_node_free(n);
    keel_diags_free(&g);
}

static void body_migration_failure_and_newer_version(void **state)
{
    declare_v3();
    keel_node *n = parse("velocity: fast\n");
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel__body_decode(kid, n, 1, false, rec, "body", "t.yaml", &g), KEEL_INVALID_ARGUMENT);
    assert_int_equal(g.count, 1);
    assert_string_equal(g.items[0].message, "velocity is not a number");
    assert_string_equal(g.items[0].path, "body.velocity");
    keel_diags_free(&g);
    keel_diags_init(&g);
    assert_int_equal(keel__body_decode(kid, n, 4, false, rec, "body", "t.yaml", &g), KEEL_UNSUPPORTED);
    assert_string_equal(g.items[0].message, "game:stamina: version 4 is newer than the declared version 3");
    keel_node_free(n);
    keel_diags_free(&g);
}

/* ---- encoding ---- */

static void body_encode_declared_order_and_forms(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(decode("label: \"hello world\"\nvalue: 0.1\noffset: [1, 1e-7, -0]\nsteps: -3\nmode: run\n"
                            "sprinting: true\nscratch: 2\n",
                            false, &g),
                     KEEL_OK);
    keel_diags_free(&g);
    keel_node *m = keel__body_encode(kid, rec, KEEL__BODY_SCENE);
    assert_int_equal(m->kind, KEEL_NODE_MAP);
    static const char *const order[] = { "value", "sprinting", "mode", "range", "steps", "offset", "label", "icon" };
    assert_int_equal(m->count, N(order)); /* the transient field is left out */
    for (size_t i = 0; i < N(order); i++)
        assert_string_equal(m->items[2 * i].text, order[i]);
    assert_string_equal(keel_node_get(m, "value")->text, "0.1");
    assert_string_equal(keel_node_get(m, "sprinting")->text, "true");
    assert_string_equal(keel_node_get(m, "mode")->text, "run");
    assert_string_equal(keel_node_get(m, "range")->text, "1");
    assert_string_equal(keel_node_get(m, "steps")->text, "-3");
    const keel_node *off = keel_node_get(m, "offset");
    assert_int_equal(off->kind, KEEL_NODE_SEQ);
    assert_int_equal(off->style, KEEL_STYLE_FLOW);
    assert_string_equal(off->items[1].text, "1e-7");
    assert_string_equal(off->items[2].text, "-0");
    assert_string_equal(keel_node_get(m, "label")->text, "hello world");
    assert_int_equal(keel_node_get(m, "label")->style, KEEL_STYLE_ANY);
    assert_string_equal(keel_node_get(m, "icon")->text, "null");
    assert_true(keel_node_is_null(keel_node_get(m, "icon")));

    /* Decoding the encoding gives the same record. */
    void *copy = calloc(1, keel_kind_record_size(kid));
    keel__record_init(kid, copy);
    keel_diags_init(&g);
    assert_int_equal(keel__body_decode(kid, m, 1, false, copy, "body", NULL, &g), KEEL_OK);
    assert_int_equal(g.count, 0);
    keel_node *again = keel__body_encode(kid, copy, KEEL__BODY_SCENE);
    assert_true(keel_node_equal(m, again));
    keel_node_free(again);
    keel__record_fini(kid, copy);
    free(copy);

    keel_node *all = keel__body_encode(kid, rec, 0);
    assert_int_equal(all->count, N(order) + 1);
    assert_string_equal(keel_node_get(all, "scratch")->text, "2");
    keel_node_free(all);
    keel_node_free(m);
    keel_diags_free(&g);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(body_missing_fields_keep_defaults),
        T(body_reads_each_type),
        T(body_unknown_field_is_a_warning),
        T(body_wrong_type),
        T(body_not_finite_and_out_of_range),
        T(body_vectors_need_exact_length),
        T(body_enum_by_name_lenient_and_strict),
        T(body_bad_uuid_is_parse_error),
        T(body_must_be_a_map),
        T(body_migrations_run_in_order_on_a_copy),
        T(body_migration_failure_and_newer_version),
        T(body_encode_declared_order_and_forms),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
