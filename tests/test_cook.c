/* test_cook.c — the cooked binary scene: identity with the YAML source, refusals, hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "keel_test.h"
#include "keel.h"
#include "base/bytes.h"
#include "model/kind.h"
#include "model/record.h"

/* ---- test kinds: every field type, an editor-only kind, a runtime-only kind ---- */

static const char *const moods[] = { "calm", "angry", "asleep" };
static const keel_field_desc all_fields[] = {
    { .key = "flag", .type = KEEL_T_BOOL },
    { .key = "count", .type = KEEL_T_INT, .has_default = true, .def = { .type = KEEL_T_INT, .as.i = 3 } },
    { .key = "speed", .type = KEEL_T_FLOAT, .has_min = true, .min = 0 },
    { .key = "v2", .type = KEEL_T_VEC2 },
    { .key = "v3", .type = KEEL_T_VEC3 },
    { .key = "v4", .type = KEEL_T_VEC4 },
    { .key = "rot", .type = KEEL_T_QUAT, .has_default = true, .def = { .type = KEEL_T_QUAT, .as.v = { 0, 0, 0, 1 } } },
    { .key = "tint", .type = KEEL_T_COLOR },
    { .key = "mood", .type = KEEL_T_ENUM, .choices = moods, .choice_count = 3 },
    { .key = "label", .type = KEEL_T_STRING },
    { .key = "icon", .type = KEEL_T_ASSET, .has_default = true, .def = { .type = KEEL_T_ASSET, .nil = true } },
    { .key = "target", .type = KEEL_T_ENTITY, .has_default = true, .def = { .type = KEEL_T_ENTITY, .nil = true } },
    { .key = "scratch", .type = KEEL_T_FLOAT, .flags = KEEL_FIELD_TRANSIENT },
};
static const keel_field_desc gizmo_fields[] = { { .key = "size", .type = KEEL_T_FLOAT } };

/* v2 renamed "label" to "title": rename the key in place */
static keel_status migrate_all(keel_node *body, int to_version, void *user, keel_diags *d)
{
    for (size_t i = 0; to_version == 2 && i < body->count; i++) {
        keel_node *k = &body->items[2 * i];
        if (strcmp(k->text, "label") == 0) {
            free(k->text);
            k->text = strdup("title");
            k->len = 5;
        }
    }
    return KEEL_OK;
}

static void declare(const char *key, const keel_field_desc *f, size_t n, unsigned flags, int version)
{
    keel_kind_desc k = { .key = key, .version = version, .multiplicity = KEEL_MANY, .flags = flags,
                         .fields = f, .field_count = n };
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_kind_declare(&k, NULL, &d), KEEL_OK);
    keel_diags_free(&d);
}

static int group_setup(void **state)
{
    keel_init();
    declare("test:all", all_fields, sizeof all_fields / sizeof *all_fields, 0, 1);
    declare("test:gizmo", gizmo_fields, 1, KEEL_KIND_EDITOR_ONLY, 1);
    declare("test:runtime", gizmo_fields, 1, KEEL_KIND_NOSAVE, 1);
    return 0;
}

static int group_teardown(void **state)
{
    keel_shutdown();
    return 0;
}

/* ---- helpers ---- */

/* A fixture's text, or NULL when it cannot be read. */
static char *read_all(const char *path)
{
    char *s = NULL;
    return keel_read_file(path, keel_limits_default().document_size, &s, NULL, NULL) == KEEL_OK ? s : NULL;
}

static keel_world *parse(const char *text, const keel_assets *assets)
{
    keel_load_opts o = keel_load_opts_default();
    o.assets = assets;
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_scene_parse(text, strlen(text), &o, &w, &d);
    if (s != KEEL_OK) {
        char buf[512];
        for (size_t i = 0; i < d.count; i++) print_error("%s\n", keel_diag_format(&d.items[i], buf, sizeof buf));
    }
    assert_int_equal(s, KEEL_OK);
    keel_diags_free(&d);
    return w;
}

static char *dump(const keel_world *w)
{
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(keel_scene_dump(w, &out, &len, NULL), KEEL_OK);
    return out;
}

static void *cook(const keel_world *w, const keel_assets *assets, size_t *len)
{
    void *data = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_cook(w, assets, &data, len, &d);
    if (s != KEEL_OK) {
        char buf[512];
        for (size_t i = 0; i < d.count; i++) print_error("%s\n", keel_diag_format(&d.items[i], buf, sizeof buf));
    }
    assert_int_equal(s, KEEL_OK);
    keel_diags_free(&d);
    return data;
}

/* Reads and expects failure with `code`; returns the first message (static copy). */
static const char *read_fails(const void *data, size_t len, keel_status code)
{
    static char msg[512];
    keel_world *w = (keel_world *)1;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_cook_read(data, len, NULL, &w, &d);
    assert_int_equal(s, code);
    assert_null(w);
    assert_true(d.errors > 0);
    snprintf(msg, sizeof msg, "%s", d.items[0].message);
    keel_diags_free(&d);
    return msg;
}

/* cook -> read -> dump must equal the dump of the source world. */
static void assert_identity(const char *text, const keel_assets *assets)
{
    keel_world *w = parse(text, assets);
    char *want = dump(w);
    size_t len;
    void *data = cook(w, assets, &len);
    keel_world *back = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_load_opts o = keel_load_opts_default();
    o.assets = assets;
    assert_int_equal(keel_cook_read(data, len, &o, &back, &d), KEEL_OK);
    keel_diags_free(&d);
    char *got = dump(back);
    assert_string_equal(got, want);
    /* cooking is deterministic */
    size_t len2;
    void *data2 = cook(back, assets, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(data2, data, len);
    free(data2);
    free(got);
    free(want);
    free(data);
    keel_world_free(back);
    keel_world_free(w);
}

static const char *const all_types_scene =
    "keel: 1\n"
    "scene:\n  uuid: 9b2d4f7e-0c1a-4d3b-8e5f-112233445566\n  name: \"All: types\"\n"
    "settings:\n  grid:\n    enabled: false\n    origin: [1, 2, 3]\n    orientation: [0, 0, 0, 1]\n"
    "    base_spacing: 0.25\n    major_line_every: 4\n"
    "root:\n  - kind: core:world_settings\n    version: 1\n    slot: 0\n    body:\n      exposure: 1.5\n"
    "entities:\n"
    "  - uuid: 11111111-0000-4000-8000-000000000001\n    name: First\n    components:\n"
    "      - kind: test:all\n        version: 1\n        slot: 0\n        body:\n"
    "          flag: true\n          count: -9007199254740993\n          speed: 0.1\n"
    "          v2: [1e-300, -0]\n          v3: [0.30000000000000004, 2, 3]\n          v4: [1, 2, 3, 4]\n"
    "          rot: [0, 0.7071067811865476, 0, 0.7071067811865476]\n          tint: [0.5, 0.25, 1, 1]\n"
    "          mood: asleep\n          label: \"héllo \\\"quoted\\\"\\nline\"\n"
    "          target: 11111111-0000-4000-8000-000000000002\n"
    "      - kind: test:all\n        version: 1\n        slot: 3\n        body: {}\n"
    "  - uuid: 11111111-0000-4000-8000-000000000002\n    name: \"\"\n    enabled: false\n"
    "    parent: 11111111-0000-4000-8000-000000000001\n    components: []\n"
    "  - uuid: 11111111-0000-4000-8000-000000000003\n    name: Third\n"
    "    parent: 11111111-0000-4000-8000-000000000002\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        slot: 0\n        body:\n"
    "          position: [1, 2, 3]\n"
    "  - uuid: 11111111-0000-4000-8000-000000000004\n    name: First\n    components: []\n";

/* ---- identity ---- */

static void cook_identity_design_example(void **state)
{
    char *text = read_all(KEEL_FIXTURES "/good_design_example.yaml");
    assert_non_null(text);
    assert_identity(text, NULL);
    free(text);
}

static void cook_identity_all_field_types(void **state)
{
    assert_identity(all_types_scene, NULL);
}

static bool cookable_fixture(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "good_", 5) == 0 && n > 5 && strcmp(name + n - 5, ".yaml") == 0 &&
           strstr(name, "unknown") == NULL;
}

static void cook_identity_every_fixture_and_scene(void **state)
{
    const char *dirs[] = { KEEL_FIXTURES, KEEL_SOURCE_DIR "/scenes" };
    int seen = 0;
    for (int di = 0; di < 2; di++) {
        DIR *dir = opendir(dirs[di]);
        if (!dir) continue;
        keel_assets *assets = NULL;
        char path[1024];
        snprintf(path, sizeof path, "%s/assets.yaml", dirs[di]);
        FILE *probe = fopen(path, "rb");
        if (probe) {
            fclose(probe);
            assert_int_equal(keel_assets_load(path, &assets, NULL), KEEL_OK);
        }
        struct dirent *de;
        while ((de = readdir(dir))) {
            size_t n = strlen(de->d_name);
            bool scene = di == 1 && n > 5 && strcmp(de->d_name + n - 5, ".yaml") == 0 &&
                         strcmp(de->d_name, "assets.yaml") != 0;
            if (!(di == 0 ? cookable_fixture(de->d_name) : scene)) continue;
            snprintf(path, sizeof path, "%s/%s", dirs[di], de->d_name);
            char *text = read_all(path);
            keel_world *w = NULL;
            keel_load_opts o = keel_load_opts_default();
            o.assets = assets;
            /* scenes naming Lua kinds that are not declared here are not cookable: skip those */
            if (keel_scene_parse(text, strlen(text), &o, &w, NULL) == KEEL_OK) {
                void *data = NULL;
                size_t len = 0;
                if (keel_cook(w, assets, &data, &len, NULL) == KEEL_OK) {
                    print_message("identity: %s\n", de->d_name);
                    assert_identity(text, assets);
                    seen++;
                }
                free(data);
                keel_world_free(w);
            }
            free(text);
        }
        closedir(dir);
        keel_assets_free(assets);
    }
    assert_true(seen >= 2);
}

static void cook_drops_editor_only_and_nosave(void **state)
{
    const char *with =
        "keel: 1\nscene:\n  uuid: 9b2d4f7e-0c1a-4d3b-8e5f-000000000001\n  name: S\n"
        "entities:\n  - uuid: 11111111-0000-4000-8000-000000000001\n    name: A\n    components:\n"
        "      - kind: test:gizmo\n        version: 1\n        slot: 0\n        body:\n          size: 2\n"
        "      - kind: test:all\n        version: 1\n        slot: 0\n        body:\n          count: 7\n";
    keel_world *w = parse(with, NULL);
    keel_entity e = keel_find_name(w, "A");
    keel_add_opts ao = KEEL_ADD_OPTS_INIT;
    assert_int_equal(keel_add(w, e, keel_kind_find("test:runtime"), &ao, NULL, NULL, NULL), KEEL_OK);
    /* a transient field is not cooked: it comes back as its default */
    keel_comp c;
    assert_true(keel_get_comp(w, e, keel_kind_find("test:all"), 0, &c));
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 42 };
    assert_int_equal(keel_set(w, c, keel_kind_field(c.kind, "scratch"), &v, NULL, NULL), KEEL_OK);
    size_t len;
    void *data = cook(w, NULL, &len);
    keel_world *back = NULL;
    assert_int_equal(keel_cook_read(data, len, NULL, &back, NULL), KEEL_OK);
    keel_entity b = keel_find_name(back, "A");
    assert_int_equal(keel_member_count(back, b), 1);
    keel_member m;
    assert_true(keel_member_at(back, b, 0, &m));
    assert_string_equal(m.key, "test:all");
    assert_true(keel_get_comp(back, b, keel_kind_find("test:all"), 0, &c));
    assert_int_equal(keel_get(back, c, keel_kind_field(c.kind, "scratch"), &v, NULL), KEEL_OK);
    assert_true(v.as.f == 0);
    assert_int_equal(keel_get(back, c, keel_kind_field(c.kind, "count"), &v, NULL), KEEL_OK);
    assert_int_equal(v.as.i, 7);
    free(data);
    keel_world_free(back);
    keel_world_free(w);
}

/* ---- refusals ---- */

static void assert_cook_refused(const keel_world *w, const keel_assets *a, keel_status code, const char *needle)
{
    void *data = (void *)1;
    size_t len = 1;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_cook(w, a, &data, &len, &d), code);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_true(d.errors >= 1);
    if (!strstr(d.items[0].message, needle)) fail_msg("message \"%s\" lacks \"%s\"", d.items[0].message, needle);
    keel_diags_free(&d);
}

static void cook_refuses_unknown_components(void **state)
{
    char *text = read_all(KEEL_FIXTURES "/good_unknown_kinds.yaml");
    assert_non_null(text);
    keel_world *w = parse(text, NULL);
    assert_cook_refused(w, NULL, KEEL_UNSUPPORTED, "unknown component cannot be cooked");
    free(text);
    keel_world_free(w);
}

/* Cooking drops editor_only kinds: one that a cooked kind requires would leave a file
 * keel_cook_read refuses, so the cook is refused, naming entity, kind and requirement. */
static void cook_refuses_a_kind_requiring_an_editor_only_one(void **state)
{
    static const char *const needs[] = { "t:editor" };
    keel_kind_desc ed = { .key = "t:editor", .version = 1, .flags = KEEL_KIND_EDITOR_ONLY };
    keel_kind_desc ne = { .key = "t:needs_editor", .version = 1, .requires = needs, .requires_count = 1 };
    assert_int_equal(keel_kind_declare(&ed, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_kind_declare(&ne, NULL, NULL), KEEL_OK);
    const char *text =
        "keel: 1\nscene:\n  uuid: 9b2d4f7e-0c1a-4d3b-8e5f-000000000001\n  name: S\n"
        "entities:\n  - uuid: 11111111-0000-4000-8000-000000000001\n    name: Rig\n    components:\n"
        "      - {kind: t:editor, version: 1}\n"
        "      - {kind: t:needs_editor, version: 1}\n";
    keel_world *w = parse(text, NULL);
    void *data = (void *)1;
    size_t len = 1;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_cook(w, NULL, &data, &len, &d), KEEL_INVALID_OPERATION);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_int_equal(d.errors, 1);
    assert_int_equal(d.items[0].code, KEEL_INVALID_OPERATION);
    assert_string_equal(d.items[0].message, "entity 'Rig' (11111111-0000-4000-8000-000000000001): t:needs_editor "
                                            "requires t:editor, which is editor_only: cooking drops it");
    assert_string_equal(d.items[0].path, "entities[0].components[1]");
    keel_diags_free(&d);
    keel_world_free(w);
}

/* Sets the UUID field `field` (entity or asset) of First's test:all. */
static void set_first_uuid(keel_world *w, const char *field, keel_type type, const char *uuid)
{
    keel_comp c;
    assert_true(keel_get_comp(w, keel_find_name(w, "First"), keel_kind_find("test:all"), 0, &c));
    keel_value v = { .type = type };
    assert_true(keel_uuid_parse(uuid, &v.as.u));
    assert_int_equal(keel_set(w, c, keel_kind_field(c.kind, field), &v, NULL, NULL), KEEL_OK);
}

static void cook_refuses_unresolved_entity_reference(void **state)
{
    keel_world *w = parse(all_types_scene, NULL);
    set_first_uuid(w, "target", KEEL_T_ENTITY, "99999999-0000-4000-8000-000000000009");
    assert_cook_refused(w, NULL, KEEL_NOT_FOUND, "which is not in the scene");
    keel_world_free(w);
}

static void cook_refuses_assets_missing_from_manifest(void **state)
{
    keel_world *w = parse(all_types_scene, NULL);
    set_first_uuid(w, "icon", KEEL_T_ASSET, "aaaaaaaa-0000-4000-8000-000000000001");
    /* no manifest: a non-nil asset cannot be checked, so it is refused */
    assert_cook_refused(w, NULL, KEEL_NOT_FOUND, "no asset manifest was given");
    const char *manifest = "assets:\n- uuid: bbbbbbbb-0000-4000-8000-000000000002\n  path: a.png\n  type: texture\n";
    keel_assets *a = NULL;
    assert_int_equal(keel_assets_parse(manifest, strlen(manifest), "assets.yaml", &a, NULL), KEEL_OK);
    assert_cook_refused(w, a, KEEL_NOT_FOUND, "not in the manifest");
    /* in the manifest: cooks, and the reader checks it too */
    const char *good = "assets:\n- uuid: aaaaaaaa-0000-4000-8000-000000000001\n  path: b.png\n  type: texture\n";
    keel_assets *g = NULL;
    assert_int_equal(keel_assets_parse(good, strlen(good), "assets.yaml", &g, NULL), KEEL_OK);
    size_t len;
    void *data = cook(w, g, &len);
    keel_load_opts o = keel_load_opts_default();
    o.assets = a;
    o.strict = true;
    keel_world *back = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_cook_read(data, len, &o, &back, &d), KEEL_NOT_FOUND);
    assert_null(back);
    assert_non_null(strstr(d.items[0].message, "not in the manifest"));
    keel_diags_free(&d);
    o.strict = false; /* editing: a warning */
    keel_diags_init(&d);
    assert_int_equal(keel_cook_read(data, len, &o, &back, &d), KEEL_OK);
    assert_int_equal(d.errors, 0);
    assert_true(d.count >= 1);
    keel_diags_free(&d);
    keel_world_free(back);
    free(data);
    keel_assets_free(a);
    keel_assets_free(g);
    keel_world_free(w);
}

/* ---- hostile input ---- */

static void *cooked_example(size_t *len)
{
    keel_world *w = parse(all_types_scene, NULL);
    void *data = cook(w, NULL, len);
    keel_world_free(w);
    return data;
}

static void recrc(uint8_t *p, size_t len)
{
    uint32_t c = (uint32_t)crc32(0L, p, (uInt)(len - 4));
    keel__put_u32(p + len - 4, c);
}

static void cook_read_refuses_every_bit_flip(void **state)
{
    size_t len;
    uint8_t *data = cooked_example(&len);
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(copy, data, len);
            copy[i] ^= (uint8_t)(1u << bit);
            const char *msg = read_fails(copy, len, KEEL_PARSE_ERROR);
            assert_non_null(strstr(msg, "cooked file"));
        }
    free(copy);
    free(data);
}

static void cook_read_refuses_every_truncation(void **state)
{
    size_t len;
    uint8_t *data = cooked_example(&len);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size, so ASan sees any over-read */
        memcpy(copy, data, n);
        read_fails(copy, n, KEEL_PARSE_ERROR);
        free(copy);
    }
    free(data);
}

static void cook_read_names_what_is_wrong(void **state)
{
    size_t len;
    uint8_t *data = cooked_example(&len);
    uint8_t *c = malloc(len);

    memcpy(c, data, len);
    c[0] = 'X';
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "bad magic"));

    memcpy(c, data, len);
    keel__put_u32(c + 8, 99);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "format version 99"));

    memcpy(c, data, len);
    keel__put_u32(c + 12, 0x04030201);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "endianness"));

    memcpy(c, data, len);
    c[len / 2] ^= 0x10;
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "CRC mismatch"));

    /* valid CRC, hostile table: an offset past the end */
    memcpy(c, data, len);
    keel__put_u32(c + 24 + 16 * 2 + 4, (uint32_t)len);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "outside the file body"));

    /* a length that overflows 32 bits when added to its offset */
    memcpy(c, data, len);
    keel__put_u32(c + 24 + 16 * 2 + 8, 0xFFFFFFF0u);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "outside the file body"));

    /* two sections overlapping */
    memcpy(c, data, len);
    keel__put_u32(c + 24 + 16 * 1 + 4, keel__get_u32(c + 24 + 4));
    keel__put_u32(c + 24 + 16 * 1 + 8, 1);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "overlap"));

    /* a section id twice */
    memcpy(c, data, len);
    keel__put_u32(c + 24 + 16 * 3, 1);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "appears twice"));

    /* a huge entity count */
    memcpy(c, data, len);
    keel__put_u32(c + 24 + 16 * 2 + 12, 0x7FFFFFFF);
    recrc(c, len);
    read_fails(c, len, KEEL_LIMIT_EXCEEDED);

    /* a huge string count */
    memcpy(c, data, len);
    keel__put_u32(c + 24 + 12, 0xFFFFFFFF);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "string table claims"));

    /* a parent index that does not precede its child */
    memcpy(c, data, len);
    uint32_t ents = keel__get_u32(c + 24 + 16 * 2 + 4);
    keel__put_u32(c + ents + 20, 3);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "does not precede"));

    /* a name string index out of range */
    memcpy(c, data, len);
    keel__put_u32(c + ents + 16, 0xFFFFFF);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "out of range"));

    /* a duplicate entity UUID */
    memcpy(c, data, len);
    memcpy(c + ents + 25, c + ents, 16);
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "duplicate entity UUID"));

    /* a component type tag that does not exist */
    memcpy(c, data, len);
    uint32_t comps = keel__get_u32(c + 24 + 16 * 3 + 4);
    c[comps + 21 + 4] = 200; /* root's world_settings: first field's type tag */
    recrc(c, len);
    assert_non_null(strstr(read_fails(c, len, KEEL_PARSE_ERROR), "unknown type tag"));

    free(c);
    free(data);
}

static void cook_read_checks_values_and_rules(void **state)
{
    size_t len;
    uint8_t *data = cooked_example(&len);
    uint8_t *c = malloc(len);
    /* a float out of range (speed >= 0): find test:all's "speed" (tag float) and negate it */
    memcpy(c, data, len);
    uint32_t strs = keel__get_u32(c + 24 + 4), nstr = keel__get_u32(c + 24 + 12);
    uint32_t speed = UINT32_MAX, at = strs;
    for (uint32_t i = 0; i < nstr; i++) {
        uint32_t n = keel__get_u32(c + at);
        if (n == 5 && memcmp(c + at + 4, "speed", 5) == 0) speed = i;
        at += 4 + n;
    }
    assert_true(speed != UINT32_MAX);
    uint32_t comps = keel__get_u32(c + 24 + 16 * 3 + 4), clen = keel__get_u32(c + 24 + 16 * 3 + 8);
    bool patched = false;
    for (uint32_t p = comps; p + 13 < comps + clen && !patched; p++)
        if (keel__get_u32(c + p) == speed && c[p + 4] == 2 /* KEEL_T_FLOAT */) {
            c[p + 5 + 7] |= 0x80; /* sign bit of the double */
            patched = true;
        }
    assert_true(patched);
    recrc(c, len);
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    assert_int_equal(keel_cook_read(c, len, NULL, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_null(w);
    assert_non_null(strstr(d.items[0].path, "speed"));
    keel_diags_free(&d);
    free(c);
    free(data);
}

static void cook_read_keeps_undeclared_kinds_unknown(void **state)
{
    size_t len;
    uint8_t *data = cooked_example(&len);
    /* rename "test:all" to "test:zzz" in the string table: a kind this process has not declared */
    uint8_t *hit = NULL;
    for (size_t i = 0; i + 8 <= len; i++)
        if (memcmp(data + i, "test:all", 8) == 0) hit = data + i;
    assert_non_null(hit);
    memcpy(hit, "test:zzz", 8);
    recrc(data, len);
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_cook_read(data, len, NULL, &w, &d), KEEL_OK);
    keel_entity e = keel_find_name(w, "First");
    keel_member m;
    assert_true(keel_member_at(w, e, 0, &m));
    assert_string_equal(m.key, "test:zzz");
    assert_false(m.loaded);
    assert_non_null(keel_node_get(m.preserved, "mood"));
    assert_string_equal(keel_node_get(m.preserved, "mood")->text, "asleep");
    keel_diags_free(&d);
    keel_world_free(w);
    free(data);
}

static void cook_read_respects_limits(void **state)
{
    size_t len;
    uint8_t *data = cooked_example(&len);
    keel_load_opts o = keel_load_opts_default();
    o.limits.entities = 2;
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_cook_read(data, len, &o, &w, &d), KEEL_LIMIT_EXCEEDED);
    assert_null(w);
    assert_non_null(strstr(d.items[0].message, "4 entities"));
    keel_diags_free(&d);
    o = keel_load_opts_default();
    o.limits.document_size = 100;
    keel_diags_init(&d);
    assert_int_equal(keel_cook_read(data, len, &o, &w, &d), KEEL_LIMIT_EXCEEDED);
    keel_diags_free(&d);
    o = keel_load_opts_default();
    o.limits.hierarchy_depth = 2;
    keel_diags_init(&d);
    assert_int_equal(keel_cook_read(data, len, &o, &w, &d), KEEL_LIMIT_EXCEEDED);
    assert_string_equal(d.items[0].path, "entities[2]");
    keel_diags_free(&d);
    free(data);
}

/* Each string within its limit but the body past its own: a cooked file is input too, and a world
 * built from it must save what a load reads back. The world is made by writing the record itself
 * (as C may), since keel_set refuses the last string. */
static void cook_read_refuses_a_body_over_the_limit(void **state)
{
    static const keel_field_desc texts[] = {
        { .key = "a", .type = KEEL_T_STRING }, { .key = "b", .type = KEEL_T_STRING }, { .key = "c", .type = KEEL_T_STRING }
    };
    declare("test:texts", texts, 3, 0, 1);
    keel_kind_id k = keel_kind_find("test:texts");
    keel_world *w = keel_world_new("Big");
    keel_entity e;
    keel_comp c;
    assert_int_equal(keel_spawn(w, "E", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, k, NULL, &c, NULL, NULL), KEEL_OK);
    const keel__layout *L;
    keel__kind_parts(k, &L);
    char *big = malloc(60001);
    memset(big, 'x', 60000);
    big[60000] = 0;
    for (int f = 0; f < 3; f++) {
        keel_value v = { .type = KEEL_T_STRING, .as.s = big };
        keel__record_put(k, keel_record(w, c), f, &v);
    }
    free(big);
    size_t len;
    void *data = cook(w, NULL, &len);
    keel_world_free(w);
    const char *msg = read_fails(data, len, KEEL_LIMIT_EXCEEDED);
    assert_non_null(strstr(msg, "larger than the limit"));
    free(data);
}

static void cook_read_migrates_older_kind_versions(void **state)
{
    static const keel_field_desc v1[] = { { .key = "label", .type = KEEL_T_STRING } };
    static const keel_field_desc v2[] = { { .key = "title", .type = KEEL_T_STRING } };
    declare("test:renamed", v1, 1, 0, 1);
    const char *text = "keel: 1\nscene:\n  uuid: 9b2d4f7e-0c1a-4d3b-8e5f-000000000002\n  name: M\n"
                       "entities:\n  - uuid: 11111111-0000-4000-8000-000000000001\n    name: A\n    components:\n"
                       "      - kind: test:renamed\n        version: 1\n        slot: 0\n        body:\n"
                       "          label: old text\n";
    keel_world *w = parse(text, NULL);
    size_t len;
    void *data = cook(w, NULL, &len);
    keel_world_free(w);
    keel_kind_desc k = { .key = "test:renamed", .version = 2, .multiplicity = KEEL_MANY, .fields = v2,
                         .field_count = 1, .migrate = migrate_all };
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);
    keel_world *back = NULL;
    assert_int_equal(keel_cook_read(data, len, NULL, &back, NULL), KEEL_OK);
    keel_entity e = keel_find_name(back, "A");
    keel_comp c;
    assert_true(keel_get_comp(back, e, keel_kind_find("test:renamed"), 0, &c));
    keel_value v;
    assert_int_equal(keel_get(back, c, 0, &v, NULL), KEEL_OK);
    assert_string_equal(v.as.s, "old text");
    keel_world_free(back);
    free(data);
}

static void cook_rejects_null_arguments(void **state)
{
    void *data;
    size_t len;
    assert_int_equal(keel_cook(NULL, NULL, &data, &len, NULL), KEEL_INVALID_ARGUMENT);
    keel_world *w;
    assert_int_equal(keel_cook_read(NULL, 0, NULL, &w, NULL), KEEL_PARSE_ERROR);
    assert_null(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cook_identity_design_example),
        cmocka_unit_test(cook_identity_all_field_types),
        cmocka_unit_test(cook_identity_every_fixture_and_scene),
        cmocka_unit_test(cook_drops_editor_only_and_nosave),
        cmocka_unit_test(cook_refuses_a_kind_requiring_an_editor_only_one),
        cmocka_unit_test(cook_refuses_unknown_components),
        cmocka_unit_test(cook_refuses_unresolved_entity_reference),
        cmocka_unit_test(cook_refuses_assets_missing_from_manifest),
        cmocka_unit_test(cook_read_refuses_every_bit_flip),
        cmocka_unit_test(cook_read_refuses_every_truncation),
        cmocka_unit_test(cook_read_names_what_is_wrong),
        cmocka_unit_test(cook_read_checks_values_and_rules),
        cmocka_unit_test(cook_read_keeps_undeclared_kinds_unknown),
        cmocka_unit_test(cook_read_respects_limits),
        cmocka_unit_test(cook_read_refuses_a_body_over_the_limit),
        cmocka_unit_test(cook_read_migrates_older_kind_versions),
        cmocka_unit_test(cook_rejects_null_arguments),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
