/* test_registry.c — what the registry owes its readers: tooltips, derived fields of a C kind (get/set
 * through every write, YAML, cooked files and save games), canonical quaternions, per-kind sync
 * radius and summon flags, the scene's features header and the counted skipped-field warnings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "keel.h"
#include "keel_test.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define PI 3.14159265358979323846

static int gets, sets;
static bool refuse_set;

/* the record: the stored field cos_cone only (the derived `cone` has no storage of its own) */
typedef struct spot_rec {
    double cos_cone;
} spot_rec;

static keel_status cone_get(const keel_call *call, int field, keel_value *out)
{
    (void)field;
    gets++;
    const spot_rec *r = call->record;
    out->type = KEEL_T_FLOAT;
    out->as.f = acos(r->cos_cone) * 180 / PI * 2;
    return KEEL_OK;
}

static keel_status cone_set(const keel_call *call, int field, const keel_value *v)
{
    (void)field;
    sets++;
    spot_rec *r = call->record;
    r->cos_cone = cos(v->as.f / 2 * PI / 180);
    if (refuse_set) return KEEL_ERROR(call->diags, KEEL_INVALID_ARGUMENT, "cone", "the lamp refuses");
    return KEEL_OK;
}

static const keel_field_desc spot_fields[] = {
    { .key = "cos_cone", .type = KEEL_T_FLOAT, .flags = KEEL_FIELD_RUNTIME | KEEL_FIELD_HIDDEN },
    { .key = "cone",
      .type = KEEL_T_FLOAT,
      .has_min = true,
      .min = 1,
      .has_max = true,
      .max = 179,
      .has_default = true,
      .def = { .type = KEEL_T_FLOAT, .as.f = 45 },
      .tooltip = "Cone angle in degrees",
      .get = cone_get,
      .set = cone_set },
};

static keel_kind_id spot;

static int setup(void **state)
{
    (void)state;
    if (keel_init() != KEEL_OK) return -1;
    keel_kind_desc k = { .key = "game:spot",
                         .version = 1,
                         .fields = spot_fields,
                         .field_count = N(spot_fields),
                         .tooltip = "A spot light" };
    keel_diags d;
    keel_diags_init(&d);
    gets = sets = 0;
    refuse_set = false;
    keel_status st = keel_kind_declare(&k, &spot, &d);
    keel_diags_free(&d);
    return st == KEEL_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    keel_shutdown();
    return 0;
}

static keel_comp add_spot(keel_world *w, keel_entity *e)
{
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_spawn(w, "Lamp", KEEL_NO_ENTITY, NULL, e, NULL, &d), KEEL_OK);
    keel_comp c;
    assert_int_equal(keel_add(w, *e, spot, NULL, &c, NULL, &d), KEEL_OK);
    keel_diags_free(&d);
    return c;
}

static double get_f(keel_world *w, keel_comp c, int field)
{
    keel_value v;
    assert_int_equal(keel_get(w, c, field, &v, NULL), KEEL_OK);
    return v.as.f;
}

static keel_status set_f(keel_world *w, keel_comp c, int field, double x, keel_diags *d)
{
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = x };
    return keel_set(w, c, field, &v, NULL, d);
}

static void registry_tooltips_are_kept_and_bounded(void **state)
{
    (void)state;
    const keel_kind_desc *kd = keel_kind_describe(spot);
    assert_string_equal(kd->tooltip, "A spot light");
    assert_string_equal(kd->fields[1].tooltip, "Cone angle in degrees");
    assert_null(kd->fields[0].tooltip);

    char *big = malloc(KEEL_TOOLTIP_MAX + 2);
    memset(big, 'a', KEEL_TOOLTIP_MAX + 1);
    big[KEEL_TOOLTIP_MAX + 1] = '\0';
    keel_field_desc f = { .key = "x", .type = KEEL_T_INT, .tooltip = big };
    keel_kind_desc k = { .key = "game:tip", .fields = &f, .field_count = 1 };
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
    keel_diags_free(&d);
    f.tooltip = NULL;
    k.tooltip = big;
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
    keel_diags_free(&d);
    big[KEEL_TOOLTIP_MAX] = '\0'; /* exactly the limit: fine */
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&k, &id, &d), KEEL_OK);
    assert_int_equal(strlen(keel_kind_describe(id)->tooltip), KEEL_TOOLTIP_MAX);
    k.tooltip = "\xff\xfe not UTF-8";
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
    assert_string_equal(keel_kind_describe(id)->tooltip, big); /* the refused redeclaration changed nothing */
    keel_diags_free(&d);
    free(big);
}

static void registry_derived_needs_both_and_a_plain_type(void **state)
{
    (void)state;
    keel_diags d;
    keel_diags_init(&d);
    keel_field_desc f = { .key = "x", .type = KEEL_T_FLOAT, .get = cone_get };
    keel_kind_desc k = { .key = "game:half", .fields = &f, .field_count = 1 };
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
    assert_non_null(strstr(d.items[0].message, "both get and set"));
    keel_diags_free(&d);
    f.get = NULL;
    f.set = cone_set;
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
    keel_diags_free(&d);
    f.get = cone_get;
    f.type = KEEL_T_STRING;
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
    assert_non_null(strstr(d.items[0].message, "plain value"));
    keel_diags_free(&d);
    assert_int_equal(keel_kind_find("game:half"), KEEL_NO_KIND);
}

static void registry_derived_field_has_no_storage_and_defaults_through_set(void **state)
{
    (void)state;
    /* a C struct over the stored fields is the record's start */
    assert_int_equal(keel_kind_field_offset(spot, 0), 0);
    assert_true(sets > 0); /* the default 45 went through set */
    keel_world *w = keel_world_new("T");
    keel_entity e;
    keel_comp c = add_spot(w, &e);
    const spot_rec *r = keel_record(w, c);
    assert_true(fabs(r->cos_cone - cos(22.5 * PI / 180)) < 1e-12);
    assert_true(fabs(get_f(w, c, 1) - 45) < 1e-9);
    keel_world_free(w);
}

static void registry_derived_write_checks_then_sets(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("T");
    keel_entity e;
    keel_comp c = add_spot(w, &e);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(set_f(w, c, 1, 90, &d), KEEL_OK);
    assert_true(fabs(((const spot_rec *)keel_record(w, c))->cos_cone - cos(45 * PI / 180)) < 1e-12);
    assert_true(fabs(get_f(w, c, 1) - 90) < 1e-9);
    /* the range check comes first: set never sees 200 */
    int before = sets;
    assert_int_equal(set_f(w, c, 1, 200, &d), KEEL_INVALID_ARGUMENT);
    assert_int_equal(sets, before);
    keel_diags_free(&d);
    /* a set that fails leaves the record as it was (it wrote before refusing) */
    refuse_set = true;
    assert_int_equal(set_f(w, c, 1, 30, &d), KEEL_INVALID_ARGUMENT);
    assert_non_null(strstr(d.items[0].message, "the lamp refuses"));
    keel_diags_free(&d);
    refuse_set = false;
    assert_true(fabs(get_f(w, c, 1) - 90) < 1e-9);
    assert_true(fabs(((const spot_rec *)keel_record(w, c))->cos_cone - cos(45 * PI / 180)) < 1e-12);
    /* writing the stored field shows through the derived one */
    assert_int_equal(set_f(w, c, 0, 0.5, &d), KEEL_OK);
    assert_true(fabs(get_f(w, c, 1) - 120) < 1e-9);
    /* the inverse of a derived write puts the old derived value back */
    keel_cmd inv;
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 60 };
    assert_int_equal(keel_set(w, c, 1, &v, &inv, &d), KEEL_OK);
    assert_true(fabs(get_f(w, c, 1) - 60) < 1e-9);
    assert_int_equal(keel_cmd_apply(w, &inv, NULL, &d), KEEL_OK);
    assert_true(fabs(get_f(w, c, 1) - 120) < 1e-9);
    keel_cmd_free(&inv);
    keel_diags_free(&d);
    keel_world_free(w);
}

static keel_world *reparse(const char *text, size_t len)
{
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    keel_status st = keel_scene_parse(text, len, NULL, &w, &d);
    if (st) fail_msg("%s", d.items[0].message);
    keel_diags_free(&d);
    return w;
}

static void registry_derived_round_trips_yaml_cooked_and_save_games(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("T");
    keel_entity e;
    keel_comp c = add_spot(w, &e);
    assert_int_equal(set_f(w, c, 1, 70, NULL), KEEL_OK);
    keel_diags d;
    keel_diags_init(&d);
    char *text;
    size_t len;
    assert_int_equal(keel_scene_dump(w, &text, &len, &d), KEEL_OK);
    assert_non_null(strstr(text, "cone: 70")); /* stored in the derived form */
    assert_null(strstr(text, "cos_cone"));     /* runtime: not in scene files */
    keel_world *y = reparse(text, len);
    keel_comp yc;
    assert_true(keel_get_comp(y, keel_find(y, keel_entity_uuid(w, e)), spot, 0, &yc));
    assert_true(fabs(get_f(y, yc, 1) - 70) < 1e-9);
    assert_true(fabs(((const spot_rec *)keel_record(y, yc))->cos_cone - cos(35 * PI / 180)) < 1e-12);
    free(text);

    void *cooked;
    assert_int_equal(keel_cook(w, NULL, &cooked, &len, &d), KEEL_OK);
    keel_world *k = NULL;
    assert_int_equal(keel_cook_read(cooked, len, NULL, &k, &d), KEEL_OK);
    keel_comp kc;
    assert_true(keel_get_comp(k, keel_find(k, keel_entity_uuid(w, e)), spot, 0, &kc));
    assert_true(fabs(get_f(k, kc, 1) - 70) < 1e-9);
    free(cooked);

    char path[64];
    snprintf(path, sizeof path, "/tmp/keel_registry_%d.sav", (int)getpid());
    keel_baseline *b = keel_baseline_capture(y);
    assert_int_equal(set_f(y, yc, 1, 100, &d), KEEL_OK);
    keel_slot_info info = { .title = "t" };
    assert_int_equal(keel_persist_save(y, b, path, &info, &d), KEEL_OK);
    assert_int_equal(keel_scene_dump(w, &text, &len, &d), KEEL_OK);
    keel_world *fresh = reparse(text, len);
    free(text);
    assert_int_equal(keel_persist_load(fresh, path, &d), KEEL_OK);
    keel_comp fc;
    assert_true(keel_get_comp(fresh, keel_find(fresh, keel_entity_uuid(w, e)), spot, 0, &fc));
    assert_true(fabs(get_f(fresh, fc, 1) - 100) < 1e-9);
    unlink(path);
    keel_baseline_free(b);
    keel_diags_free(&d);
    keel_world_free(fresh);
    keel_world_free(k);
    keel_world_free(y);
    keel_world_free(w);
}

static const char *const HEAD = "keel: 1\nscene:\n  uuid: 8135d215-5bf0-4c91-89ed-6a88c0d55267\n  name: t\n";

static void registry_quaternions_are_canonical(void **state)
{
    (void)state;
    char text[1024];
    snprintf(
        text, sizeof text,
        "%sentities:\n- uuid: 00000000-0000-4000-8000-000000000001\n  name: A\n  components:\n"
        "  - kind: core:transform\n    version: 1\n    slot: 0\n    body:\n      rotation: [0, -0.6, 0, -0.8]\n",
        HEAD);
    keel_world *w = reparse(text, strlen(text));
    double pos[3], rot[4], scale[3];
    keel_entity e = keel_next(w, 0);
    assert_int_equal(keel_world_transform(w, e, pos, rot, scale), KEEL_OK);
    assert_true(rot[3] > 0);
    assert_true(fabs(rot[1] - 0.6) < 1e-12);
    char *out;
    size_t len;
    assert_int_equal(keel_scene_dump(w, &out, &len, NULL), KEEL_OK);
    assert_non_null(strstr(out, "rotation: [0, 0.6, 0, 0.8]"));
    free(out);
    keel_world_free(w);
}

static void registry_sync_radius_is_finite_positive_and_capped(void **state)
{
    (void)state;
    keel_field_desc f = { .key = "x", .type = KEEL_T_INT, .flags = KEEL_FIELD_SYNC };
    keel_kind_desc k = { .key = "game:far", .fields = &f, .field_count = 1 };
    keel_diags d;
    keel_diags_init(&d);
    double bad[] = { -1, NAN, INFINITY, KEEL_SYNC_RADIUS_MAX + 1 };
    for (size_t i = 0; i < N(bad); i++) {
        k.sync_radius = bad[i];
        assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_INVALID_ARGUMENT);
        keel_diags_free(&d);
    }
    k.sync_radius = 50;
    k.no_summon = true;
    keel_kind_id id;
    assert_int_equal(keel_kind_declare(&k, &id, &d), KEEL_OK);
    assert_true(keel_kind_describe(id)->sync_radius == 50);
    assert_true(keel_kind_describe(id)->no_summon);
    keel_diags_free(&d);
}

static void registry_unknown_feature_is_refused(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "%sfeatures: [canonical_quaternions, time_travel]\nentities: []\n", HEAD);
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    assert_int_equal(keel_scene_parse(text, strlen(text), NULL, &w, &d), KEEL_UNSUPPORTED);
    assert_null(w);
    assert_non_null(strstr(d.items[0].message, "time_travel"));
    assert_string_equal(d.items[0].path, "features[1]");
    assert_int_equal(d.items[0].line, 5);
    keel_diags_free(&d);

    /* a known one is kept: written back, and carried as a bit by the cooked header */
    snprintf(text, sizeof text, "%sfeatures: [canonical_quaternions]\nentities: []\n", HEAD);
    w = reparse(text, strlen(text));
    char *out;
    size_t len;
    assert_int_equal(keel_scene_dump(w, &out, &len, NULL), KEEL_OK);
    assert_non_null(strstr(out, "features: [canonical_quaternions]"));
    free(out);
    void *cooked;
    assert_int_equal(keel_cook(w, NULL, &cooked, &len, &d), KEEL_OK);
    unsigned char *p = cooked;
    assert_int_equal(p[20], 1);
    keel_world *k = NULL;
    assert_int_equal(keel_cook_read(cooked, len, NULL, &k, &d), KEEL_OK);
    keel_world_free(k);
    k = NULL;
    /* a bit this keel does not know: refused whole (the CRC made right, so only the bit is wrong) */
    p[20] = 3;
    uint32_t crc = (uint32_t)crc32_z(0L, p, len - 4);
    for (int i = 0; i < 4; i++) p[len - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
    assert_int_equal(keel_cook_read(cooked, len, NULL, &k, &d), KEEL_UNSUPPORTED);
    assert_null(k);
    assert_non_null(strstr(d.items[d.count - 1].message, "feature bit 1"));
    free(cooked);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void registry_skipped_fields_warn_once_with_a_count(void **state)
{
    (void)state;
    char text[4096];
    int n = snprintf(text, sizeof text, "%sentities:\n", HEAD);
    for (int i = 1; i <= 3; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "- uuid: 00000000-0000-4000-8000-00000000000%d\n  name: L%d\n  components:\n"
                      "  - kind: game:spot\n    version: 1\n    slot: 0\n    body: { cone: 40, glow: 1 }\n",
                      i, i);
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    assert_int_equal(keel_scene_parse(text, strlen(text), NULL, &w, &d), KEEL_OK);
    size_t glow = 0;
    for (size_t i = 0; i < d.count; i++)
        if (strstr(d.items[i].message, "'glow'")) {
            glow++;
            assert_non_null(strstr(d.items[i].message, "(3 components)"));
            assert_string_equal(d.items[i].path, "entities[0].components[0].body.glow");
        }
    assert_int_equal(glow, 1);
    assert_int_equal(d.warnings, d.count);
    keel_diags_free(&d);
    keel_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(registry_tooltips_are_kept_and_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_derived_needs_both_and_a_plain_type, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_derived_field_has_no_storage_and_defaults_through_set, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(registry_derived_write_checks_then_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_derived_round_trips_yaml_cooked_and_save_games, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_quaternions_are_canonical, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_sync_radius_is_finite_positive_and_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_unknown_feature_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(registry_skipped_fields_warn_once_with_a_count, setup, teardown),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
