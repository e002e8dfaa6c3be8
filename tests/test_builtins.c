/* test_builtins.c — the built-in kinds: keys, fields, defaults, rules and validate hooks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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

typedef struct want_kind {
    const char *key, *category;
    keel_multiplicity mult;
    unsigned flags;
    const char *requires, *rejects; /* space-separated */
    const char *fields;             /* "name:type ..." in declared order */
} want_kind;

static const want_kind table[] = {
    { "core:transform", "Scene", KEEL_ONE, KEEL_KIND_NOT_ON_ROOT, "", "core:world_settings",
      "position:vec3 rotation:quat scale:vec3" },
    { "core:mesh_renderer", "Rendering", KEEL_ONE, 0, "core:transform", "",
      "mesh:asset material:asset visible:bool casts_shadow:bool color:color metallic:float roughness:float" },
    { "core:point_light", "Lighting", KEEL_ONE, 0, "core:transform", "core:spot_light core:directional_light",
      "color:color intensity:float range:float" },
    { "core:spot_light", "Lighting", KEEL_ONE, 0, "core:transform", "core:point_light core:directional_light",
      "color:color intensity:float range:float inner_angle:float outer_angle:float" },
    { "core:directional_light", "Lighting", KEEL_ONE, 0, "core:transform", "core:point_light core:spot_light",
      "color:color intensity:float" },
    { "core:reflection_probe", "Lighting", KEEL_ONE, 0, "core:transform", "",
      "radius:float intensity:float box_projection:bool" },
    { "core:camera", "Rendering", KEEL_ONE, 0, "core:transform", "",
      "projection:enum fov:float near:float far:float" },
    { "core:audio_source", "Audio", KEEL_MANY, 0, "core:transform", "",
      "clip:asset bus:enum volume:float pitch:float loop:bool spatial:bool min_distance:float max_distance:float "
      "play_on_start:bool" },
    { "core:world_settings", "Scene", KEEL_ONE, KEEL_KIND_ROOT_ONLY, "", "core:transform",
      "ambient:color sky_color:color fog:bool fog_density:float exposure:float" },
};

static void join(char *buf, size_t cap, const char *const *items, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(buf, i ? " " : "", cap - strlen(buf) - 1);
        strncat(buf, items[i], cap - strlen(buf) - 1);
    }
}

static void builtins_match_the_design_table(void **state)
{
    assert_int_equal(keel_kind_count(), sizeof table / sizeof *table);
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const want_kind *w = &table[i];
        keel_kind_id id = keel_kind_find(w->key);
        assert_int_not_equal(id, KEEL_NO_KIND);
        const keel_kind_desc *k = keel_kind_describe(id);
        assert_true(k->builtin);
        assert_int_equal(k->version, 1);
        assert_string_equal(k->category, w->category);
        assert_int_equal(k->multiplicity, w->mult);
        assert_int_equal(k->flags, w->flags);
        char buf[512];
        join(buf, sizeof buf, k->requires, k->requires_count);
        assert_string_equal(buf, w->requires);
        join(buf, sizeof buf, k->rejects, k->rejects_count);
        assert_string_equal(buf, w->rejects);
        buf[0] = '\0';
        for (size_t f = 0; f < k->field_count; f++) {
            char one[64];
            snprintf(one, sizeof one, "%s%s:%s", f ? " " : "", k->fields[f].key, keel_type_name(k->fields[f].type));
            strncat(buf, one, sizeof buf - strlen(buf) - 1);
            assert_true(k->fields[f].has_default);
        }
        assert_string_equal(buf, w->fields);
    }
    keel_diags g;
    keel_diags_init(&g);
    assert_int_equal(keel_registry_freeze(&g), KEEL_OK); /* every reference resolves */
    keel_diags_free(&g);
}

static const keel_field_desc *field(const char *kind, const char *name)
{
    keel_kind_id id = keel_kind_find(kind);
    int f = keel_kind_field(id, name);
    assert_true(f >= 0);
    return &keel_kind_describe(id)->fields[f];
}

static void builtins_defaults_and_ranges(void **state)
{
    keel_kind_id t = keel_kind_find("core:transform");
    keel_transform tr;
    keel__record_init(t, &tr);
    assert_true(tr.position[0] == 0 && tr.position[1] == 0 && tr.position[2] == 0);
    assert_true(tr.rotation[0] == 0 && tr.rotation[1] == 0 && tr.rotation[2] == 0 && tr.rotation[3] == 1);
    assert_true(tr.scale[0] == 1 && tr.scale[1] == 1 && tr.scale[2] == 1);
    keel__record_fini(t, &tr);

    const keel_field_desc *f = field("core:point_light", "range");
    assert_true(f->has_min && f->min == 0 && f->min_exclusive);
    f = field("core:point_light", "intensity");
    assert_true(f->has_min && f->min == 0 && !f->min_exclusive);
    f = field("core:camera", "fov");
    assert_true(f->has_min && f->min == 1 && f->has_max && f->max == 179 && f->def.as.f == 60);
    f = field("core:camera", "near");
    assert_true(f->min_exclusive && f->def.as.f == 0.1);
    f = field("core:camera", "projection");
    assert_int_equal(f->choice_count, 2);
    assert_string_equal(f->choices[0], "perspective");
    assert_string_equal(f->choices[1], "orthographic");
    f = field("core:audio_source", "bus");
    assert_int_equal(f->choice_count, 4);
    const char *buses[] = { "music", "effects", "ambience", "voice" };
    for (int i = 0; i < 4; i++)
        assert_string_equal(f->choices[i], buses[i]);
    f = field("core:mesh_renderer", "roughness");
    assert_true(f->def.as.f == 0.5 && f->has_max && f->max == 1);
    f = field("core:mesh_renderer", "visible");
    assert_true(f->def.as.b);
    f = field("core:mesh_renderer", "mesh");
    assert_true(f->def.nil);
    f = field("core:reflection_probe", "radius");
    assert_true(f->min_exclusive && f->def.as.f > 0);
}

/* Runs a kind's validate hook on a record whose fields are set by name. */
static keel_status run_validate(const char *kind, const char *const *names, const double *vals, size_t n,
                                keel_diags *g)
{
    keel_kind_id id = keel_kind_find(kind);
    const keel_kind_desc *k = keel_kind_describe(id);
    assert_non_null(k->validate);
    void *rec = calloc(1, keel_kind_record_size(id));
    keel__record_init(id, rec);
    for (size_t i = 0; i < n; i++) {
        keel_value v = { .type = KEEL_T_FLOAT, .as.f = vals[i] };
        int f = keel_kind_field(id, names[i]);
        assert_int_equal(keel_field_check(id, f, &v, NULL), KEEL_OK);
        keel__record_put(id, rec, f, &v);
    }
    keel_call call = { .comp = { 0, id, 0 }, .record = rec, .phase = KEEL_PHASE_COUNT_, .diags = g };
    keel_status st = k->validate(&call, keel_kind_field(id, names[0]));
    keel__record_fini(id, rec);
    free(rec);
    return st;
}

static void builtins_validate_hooks_on_records(void **state)
{
    keel_diags g;
    keel_diags_init(&g);
    const char *spot[] = { "inner_angle", "outer_angle" };
    assert_int_equal(run_validate("core:spot_light", spot, (double[]){ 50, 40 }, 2, &g), KEEL_INVALID_ARGUMENT);
    assert_string_equal(g.items[0].message, "inner_angle must not exceed outer_angle");
    assert_int_equal(run_validate("core:spot_light", spot, (double[]){ 40, 40 }, 2, &g), KEEL_OK);
    assert_int_equal(run_validate("core:spot_light", spot, NULL, 0, &g), KEEL_OK); /* defaults 30 <= 45 */

    const char *cam[] = { "near", "far" };
    assert_int_equal(run_validate("core:camera", cam, (double[]){ 10, 5 }, 2, &g), KEEL_INVALID_ARGUMENT);
    assert_string_equal(g.items[1].message, "far must be greater than near");
    assert_int_equal(run_validate("core:camera", cam, (double[]){ 5, 5 }, 2, &g), KEEL_INVALID_ARGUMENT);
    assert_int_equal(run_validate("core:camera", cam, (double[]){ 0.1, 0.2 }, 2, &g), KEEL_OK);

    const char *audio[] = { "min_distance", "max_distance" };
    assert_int_equal(run_validate("core:audio_source", audio, (double[]){ 20, 10 }, 2, &g), KEEL_INVALID_ARGUMENT);
    assert_string_equal(g.items[3].message, "max_distance must not be less than min_distance");
    assert_int_equal(run_validate("core:audio_source", audio, (double[]){ 10, 10 }, 2, &g), KEEL_OK);
    assert_int_equal(g.errors, 4);
    keel_diags_free(&g);
}

static void builtins_validate_through_a_world(void **state)
{
    keel_world *w = keel_world_new("Test");
    assert_non_null(w);
    keel_entity e;
    assert_int_equal(keel_spawn(w, "Lamp", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    keel_kind_id spot = keel_kind_find("core:spot_light");
    assert_int_equal(keel_add(w, e, keel_kind_find("core:transform"), &o, NULL, NULL, NULL), KEEL_OK);
    keel_comp c;
    assert_int_equal(keel_add(w, e, spot, &o, &c, NULL, NULL), KEEL_OK);

    keel_diags g;
    keel_diags_init(&g);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 60 };
    int inner = keel_kind_field(spot, "inner_angle");
    assert_int_equal(keel_set(w, c, inner, &v, NULL, &g), KEEL_INVALID_ARGUMENT);
    assert_int_equal(g.count, 1);
    assert_string_equal(g.items[0].message, "inner_angle must not exceed outer_angle");
    keel_value now;
    assert_int_equal(keel_get(w, c, inner, &now, NULL), KEEL_OK);
    assert_true(now.as.f == 30); /* the old value is back */
    v.as.f = 45;
    assert_int_equal(keel_set(w, c, inner, &v, NULL, &g), KEEL_OK);
    v.as.f = 180; /* the field range comes first */
    assert_int_equal(keel_set(w, c, inner, &v, NULL, &g), KEEL_INVALID_ARGUMENT);
    assert_string_equal(g.items[1].message, "inner_angle: 180 is above the maximum (<= 179)");

    /* The light rules are kind metadata: a point light is refused next to a spot light. */
    assert_int_equal(keel_add(w, e, keel_kind_find("core:point_light"), &o, NULL, NULL, NULL),
                     KEEL_INVALID_OPERATION);
    keel_diags_free(&g);
    keel_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(builtins_match_the_design_table, setup, teardown),
        cmocka_unit_test_setup_teardown(builtins_defaults_and_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(builtins_validate_hooks_on_records, setup, teardown),
        cmocka_unit_test_setup_teardown(builtins_validate_through_a_world, setup, teardown),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
