/* test_scene_load.c — loading scene documents: good files, every refusal with its code and position. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"

#define FIX(name) KEEL_FIXTURES "/" name

static const char *const E1 = "11111111-1111-1111-1111-111111111111";
static const char *const E2 = "22222222-2222-2222-2222-222222222222";

static keel_uuid U(const char *s)
{
    keel_uuid u;
    assert_true(keel_uuid_parse(s, &u));
    return u;
}

static const keel_diag *first_error(const keel_diags *d)
{
    for (size_t i = 0; i < d->count; i++)
        if (d->items[i].severity == KEEL_SEV_ERROR) return &d->items[i];
    return NULL;
}

static void print_diags(const keel_diags *d)
{
    char buf[1024];
    for (size_t i = 0; i < d->count; i++) printf("# %s\n", keel_diag_format(&d->items[i], buf, sizeof buf));
}

static keel_status load_fixture(const char *name, const keel_load_opts *o, keel_world **w, keel_diags *d)
{
    char *path = malloc(strlen(KEEL_FIXTURES) + strlen(name) + 2);
    sprintf(path, "%s/%s", KEEL_FIXTURES, name);
    keel_status st = keel_scene_load(path, o, w, d);
    free(path);
    return st;
}

static keel_status parse(const char *text, const keel_load_opts *o, keel_world **w, keel_diags *d)
{
    return keel_scene_parse(text, strlen(text), o, w, d);
}

/* ---- good files ---- */

static void scene_load_design_example(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("good_design_example.yaml", NULL, &w, &d), KEEL_OK);
    assert_int_equal(d.errors, 0);
    assert_non_null(w);
    assert_string_equal(keel_world_name(w), "MainLevel");
    char u[37];
    keel_uuid_format(keel_world_uuid(w), u);
    assert_string_equal(u, "550e8400-e29b-41d4-a716-446655440000");
    assert_int_equal(keel_world_entity_count(w), 2);
    keel_entity player = keel_find(w, U(E1));
    assert_true(player != KEEL_NO_ENTITY);
    assert_string_equal(keel_entity_name(w, player), "Player");
    keel_entity child = keel_find_name(w, "Child");
    assert_int_equal(keel_entity_parent(w, child), player);
    /* membership order and slots as written */
    assert_int_equal(keel_member_count(w, player), 3);
    keel_member m;
    assert_true(keel_member_at(w, player, 2, &m));
    assert_string_equal(m.key, "core:audio_source");
    assert_int_equal(m.slot, 2);
    keel_comp c;
    assert_true(keel_get_comp(w, player, keel_kind_find("core:transform"), 0, &c));
    const keel_transform *t = keel_record(w, c);
    assert_true(t->position[1] == 1.5);
    assert_true(keel_get_comp(w, player, keel_kind_find("core:audio_source"), 2, &c));
    keel_value v;
    assert_int_equal(keel_get(w, c, keel_kind_field(c.kind, "volume"), &v, NULL), KEEL_OK);
    assert_true(v.as.f == 0.5);
    /* root components */
    assert_int_equal(keel_member_count(w, keel_world_root(w)), 1);
    const keel_grid *g = keel_world_grid(w);
    assert_true(g->enabled);
    assert_int_equal(g->major_line_every, 10);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void scene_load_child_before_parent(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("good_child_before_parent.yaml", NULL, &w, &d), KEEL_OK);
    keel_entity child = keel_find(w, U(E1)), parent = keel_find(w, U(E2));
    assert_int_equal(keel_entity_parent(w, child), parent);
    keel_entity grand = keel_find_name(w, "Grandchild");
    assert_int_equal(keel_entity_parent(w, grand), child);
    assert_false(keel_entity_enabled(w, grand));
    /* pre-order: Parent, Child, Grandchild */
    assert_int_equal(keel_next(w, 0), parent);
    assert_int_equal(keel_next(w, parent), child);
    assert_int_equal(keel_next(w, child), grand);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void scene_load_unknown_kinds_kept_with_one_warning_each(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("good_unknown_kinds.yaml", NULL, &w, &d), KEEL_OK);
    assert_int_equal(d.errors, 0);
    int winch = 0, newer = 0;
    for (size_t i = 0; i < d.count; i++) {
        if (strstr(d.items[i].message, "mod:winch")) {
            winch++;
            assert_string_equal(d.items[i].message, "mod:winch is not declared: 3 components kept");
            assert_int_equal(d.items[i].severity, KEEL_SEV_WARNING);
        }
        if (strstr(d.items[i].message, "core:transform")) {
            newer++;
            assert_non_null(strstr(d.items[i].message, "newer"));
        }
    }
    assert_int_equal(winch, 1);
    assert_int_equal(newer, 1);
    keel_entity e = keel_find(w, U(E1));
    assert_int_equal(keel_member_count(w, e), 3);
    keel_member m;
    assert_true(keel_member_at(w, e, 1, &m));
    assert_false(m.loaded);
    assert_string_equal(m.key, "mod:winch");
    assert_int_equal(m.version, 3);
    assert_non_null(m.preserved);
    assert_true(keel_member_at(w, e, 2, &m));
    assert_int_equal(m.slot, 4);
    assert_false(m.enabled);
    /* a version newer than the kind knows: kept unknown, never guessed at */
    keel_entity e2 = keel_find(w, U(E2));
    assert_true(keel_member_at(w, e2, 1, &m));
    assert_string_equal(m.key, "core:transform");
    assert_false(m.loaded);
    assert_int_equal(m.version, 99);
    keel_world_free(w);
    keel_diags_free(&d);
}

/* ---- refusals: one fixture each ---- */

typedef struct refusal {
    const char *file;
    keel_status code;
    const char *path;
    int line, col;          /* 0: not checked */
    const char *message;    /* substring */
    size_t errors;
} refusal;

static const refusal refusals[] = {
    { "bad_duplicate_uuid.yaml", KEEL_PARSE_ERROR, "entities[1].uuid", 8, 11, "duplicate entity uuid", 1 },
    { "bad_malformed_uuid.yaml", KEEL_PARSE_ERROR, "entities[0].uuid", 6, 11, "malformed uuid", 1 },
    { "bad_uppercase_uuid.yaml", KEEL_PARSE_ERROR, "entities[0].uuid", 6, 11, "malformed uuid", 1 },
    { "bad_nil_uuid.yaml", KEEL_PARSE_ERROR, "entities[0].uuid", 6, 11, "nil uuid", 1 },
    { "bad_missing_uuid.yaml", KEEL_PARSE_ERROR, "entities[0]", 6, 5, "missing key 'uuid'", 1 },
    { "bad_unknown_parent.yaml", KEEL_NOT_FOUND, "entities[0].parent", 8, 13, "unknown parent", 1 },
    { "bad_cycle.yaml", KEEL_INVALID_OPERATION, "entities[1].parent", 11, 13, "hierarchy cycle: ", 1 },
    { "bad_self_parent.yaml", KEEL_INVALID_OPERATION, "entities[0].parent", 8, 13, "hierarchy cycle: ", 1 },
    { "bad_alias.yaml", KEEL_PARSE_ERROR, "entities[0].name", 7, 11, "aliases are not allowed", 1 },
    { "bad_anchor.yaml", KEEL_PARSE_ERROR, "entities[0].name", 7, 11, "anchors are not allowed", 1 },
    { "bad_custom_tag.yaml", KEEL_PARSE_ERROR, "entities[0].name", 7, 11, "tag !python/object is not allowed", 1 },
    { "bad_foreign_core_tag.yaml", KEEL_PARSE_ERROR, "entities[0].name", 7, 11, "is not allowed", 1 },
    { "bad_nan_float.yaml", KEEL_INVALID_ARGUMENT, "entities[0].components[0].body.position", 12, 0, "finite", 1 },
    { "bad_inf_float.yaml", KEEL_INVALID_ARGUMENT, "entities[0].components[0].body.position", 12, 0, "finite", 1 },
    { "bad_wrong_type.yaml", KEEL_INVALID_ARGUMENT, "entities[0].components[1].body.intensity", 17, 0, "bright", 1 },
    { "bad_out_of_range.yaml", KEEL_INVALID_ARGUMENT, "entities[0].components[1].body.range", 17, 0, "range", 1 },
    { "bad_second_singleton.yaml", KEEL_INVALID_OPERATION, "entities[0].components[1]", 13, 9, "core:transform", 1 },
    { "bad_missing_requirement.yaml", KEEL_INVALID_OPERATION, "entities[0].components[0]", 8, 9, "requires core:transform", 1 },
    { "bad_rejected_pair.yaml", KEEL_INVALID_OPERATION, "entities[0].components[1]", 13, 9, "rejects", 2 },
    { "bad_root_only_kind.yaml", KEEL_INVALID_OPERATION, "entities[0].components[0]", 8, 9, "root", 1 },
    { "bad_slot_for_singleton.yaml", KEEL_INVALID_OPERATION, "entities[0].components[0]", 0, 0, "slot 3", 1 },
    { "bad_kind_key.yaml", KEEL_PARSE_ERROR, "entities[0].components[0].kind", 8, 15, "malformed kind key", 1 },
    { "bad_document_version.yaml", KEEL_PARSE_ERROR, "keel", 1, 7, "unsupported document version", 1 },
    { "bad_missing_version.yaml", KEEL_PARSE_ERROR, "keel", 1, 1, "missing key 'keel'", 1 },
    { "bad_missing_scene_uuid.yaml", KEEL_PARSE_ERROR, "scene.uuid", 3, 3, "missing key 'uuid'", 1 },
    { "bad_unknown_top_key.yaml", KEEL_PARSE_ERROR, "extras", 5, 1, "unknown key 'extras'", 1 },
    { "bad_not_yaml.yaml", KEEL_PARSE_ERROR, NULL, 6, 3, "did not find expected", 1 },
    { "bad_multiple_documents.yaml", KEEL_PARSE_ERROR, "", 5, 1, "multiple documents are not allowed", 1 },
    { "bad_duplicate_key.yaml", KEEL_PARSE_ERROR, "", 6, 1, "duplicate key 'entities' (first at line 5)", 1 },
    { "bad_grid_not_normalized.yaml", KEEL_INVALID_ARGUMENT, "settings.grid.orientation", 7, 18, "normalized", 1 },
    { "bad_grid_spacing.yaml", KEEL_INVALID_ARGUMENT, "settings.grid.base_spacing", 7, 19, "> 0", 2 },
    { "bad_entities_not_list.yaml", KEEL_PARSE_ERROR, "entities", 5, 11, "must be a list", 1 },
    { "bad_three_errors.yaml", KEEL_PARSE_ERROR, "entities[0].uuid", 6, 11, "malformed uuid", 3 },
    { "bad_spot_angles.yaml", KEEL_INVALID_ARGUMENT, "entities[0].components[1].body.inner_angle", 17, 24,
      "inner_angle must not exceed outer_angle", 1 },
};

static void scene_load_refusals(void **state)
{
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        const refusal *r = &refusals[i];
        keel_world *w = (keel_world *)(uintptr_t)0x1; /* must stay untouched */
        keel_diags d;
        keel_diags_init(&d);
        keel_status st = load_fixture(r->file, NULL, &w, &d);
        printf("# %s -> %s\n", r->file, keel_status_name(st));
        print_diags(&d);
        assert_int_equal(st, r->code);
        assert_ptr_equal(w, (keel_world *)(uintptr_t)0x1);
        const keel_diag *g = first_error(&d);
        assert_non_null(g);
        assert_int_equal(g->code, r->code);
        assert_int_equal(d.errors, r->errors);
        if (r->path) assert_string_equal(g->path, r->path);
        assert_non_null(strstr(g->message, r->message));
        assert_non_null(g->file);
        assert_non_null(strstr(g->file, r->file));
        if (r->line) assert_int_equal(g->line, r->line);
        if (r->col) assert_int_equal(g->col, r->col);
        keel_diags_free(&d);
    }
}

/* Validate hooks run on bodies read from a file, as they do on keel_set. */
static void scene_parse_runs_validate_on_bodies(void **state)
{
    (void)state;
    char *path = malloc(strlen(KEEL_FIXTURES) + 32);
    sprintf(path, "%s/bad_spot_angles.yaml", KEEL_FIXTURES);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(keel_read_file(path, 1 << 20, &text, &len, NULL), KEEL_OK);
    free(path);
    keel_load_opts o = keel_load_opts_default();
    o.file = "spot.yaml";
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_parse(text, len, &o, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_null(w);
    const keel_diag *g = first_error(&d);
    assert_non_null(g);
    assert_int_equal(g->code, KEEL_INVALID_ARGUMENT);
    assert_string_equal(g->path, "entities[0].components[1].body.inner_angle");
    assert_string_equal(g->file, "spot.yaml");
    assert_int_equal(g->line, 17);
    assert_int_equal(g->col, 24);
    assert_non_null(strstr(g->message, "inner_angle must not exceed outer_angle"));
    keel_diags_free(&d);
    /* the same angles the right way round load */
    char *ok = strstr(text, "inner_angle: 60");
    assert_non_null(ok);
    memcpy(ok, "inner_angle: 30", 15);
    keel_diags_init(&d);
    assert_int_equal(keel_scene_parse(text, len, &o, &w, &d), KEEL_OK);
    assert_non_null(w);
    keel_world_free(w);
    keel_diags_free(&d);
    free(text);
}

static void scene_load_three_errors_all_listed(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("bad_three_errors.yaml", NULL, &w, &d), KEEL_PARSE_ERROR);
    assert_null(w);
    assert_int_equal(d.errors, 3);
    bool uuid = false, parent = false, enabled = false;
    for (size_t i = 0; i < d.count; i++) {
        const keel_diag *g = &d.items[i];
        if (!strcmp(g->path, "entities[0].uuid") && g->code == KEEL_PARSE_ERROR) uuid = true;
        if (!strcmp(g->path, "entities[1].parent") && g->code == KEEL_NOT_FOUND && g->line == 10) parent = true;
        if (!strcmp(g->path, "entities[2].enabled") && g->code == KEEL_INVALID_ARGUMENT && g->line == 13) enabled = true;
    }
    assert_true(uuid && parent && enabled);
    keel_diags_free(&d);
}

static void scene_load_enum_strict_and_lenient(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("bad_enum.yaml", NULL, &w, &d), KEEL_OK);
    assert_int_equal(d.errors, 0);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].severity, KEEL_SEV_WARNING);
    assert_string_equal(d.items[0].path, "entities[0].components[1].body.projection");
    assert_int_equal(d.items[0].line, 17);
    keel_comp c;
    assert_true(keel_get_comp(w, keel_find(w, U(E1)), keel_kind_find("core:camera"), 0, &c));
    keel_value v;
    keel_get(w, c, keel_kind_field(c.kind, "projection"), &v, NULL);
    assert_int_equal(v.as.i, 0); /* the default */
    keel_world_free(w);
    keel_diags_free(&d);

    keel_load_opts o = keel_load_opts_default();
    o.strict = true;
    w = NULL;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("bad_enum.yaml", &o, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_null(w);
    assert_string_equal(first_error(&d)->path, "entities[0].components[1].body.projection");
    keel_diags_free(&d);
}

static void scene_load_missing_file_is_io_error(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_load(FIX("no_such_file.yaml"), NULL, &w, &d), KEEL_IO_ERROR);
    assert_null(w);
    assert_non_null(strstr(d.items[0].message, "no_such_file.yaml"));
    keel_diags_free(&d);
}

/* keel_scene_load tells a cooked file by its magic and hands it to the cooked reader. */
static void scene_load_cooked_file(void **state)
{
    keel_world *w = NULL;
    assert_int_equal(load_fixture("good_design_example.yaml", NULL, &w, NULL), KEEL_OK);
    void *data = NULL;
    size_t len = 0;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_cook(w, NULL, &data, &len, &d), KEEL_OK);
    assert_memory_equal(data, "KEELCOOK", 8);
    char path[] = "/tmp/keel_cooked_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(keel_write_atomic(path, data, len, &d), KEEL_OK);
    keel_world *w2 = NULL;
    assert_int_equal(keel_scene_load(path, NULL, &w2, &d), KEEL_OK);
    char *a, *b;
    keel_scene_dump(w, &a, NULL, NULL);
    keel_scene_dump(w2, &b, NULL, NULL);
    assert_string_equal(a, b);
    free(a);
    free(b);
    unlink(path);
    free(data);
    keel_world_free(w);
    keel_world_free(w2);
    keel_diags_free(&d);
}

static void scene_load_not_a_map(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(parse("- 1\n- 2\n", NULL, &w, &d), KEEL_PARSE_ERROR);
    assert_int_equal(parse("", NULL, &w, &d), KEEL_PARSE_ERROR);
    assert_null(w);
    keel_diags_free(&d);
}

/* ---- limits ---- */

#define HEAD "keel: 1\nscene:\n  uuid: 550e8400-e29b-41d4-a716-446655440000\n  name: L\n"
#define ENT(n) "  - uuid: " n "1111111-1111-1111-1111-111111111111\n"

static void expect_limit(const char *text, const keel_load_opts *o, const char *path, int line)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = parse(text, o, &w, &d);
    print_diags(&d);
    assert_int_equal(st, KEEL_LIMIT_EXCEEDED);
    assert_null(w);
    const keel_diag *g = first_error(&d);
    assert_int_equal(g->code, KEEL_LIMIT_EXCEEDED);
    assert_string_equal(g->path, path);
    if (line) assert_int_equal(g->line, line);
    assert_non_null(strstr(g->message, "limit"));
    keel_diags_free(&d);
}

static void scene_load_limits(void **state)
{
    keel_load_opts o;
    o = keel_load_opts_default();
    o.limits.entities = 2;
    expect_limit(HEAD "entities:\n" ENT("1") ENT("2") ENT("3"), &o, "entities", 6);

    o = keel_load_opts_default();
    o.limits.components_per_entity = 1;
    expect_limit(HEAD "entities:\n" ENT("1") "    components:\n"
                      "      - {kind: core:transform, version: 1, slot: 0}\n"
                      "      - {kind: core:camera, version: 1, slot: 0}\n",
                 &o, "entities[0].components", 8);

    o = keel_load_opts_default();
    o.limits.body_size = 16;
    expect_limit(HEAD "entities:\n" ENT("1") "    components:\n"
                      "      - kind: mod:big\n        version: 1\n        slot: 0\n"
                      "        body: {text: abcdefghijklmnopqrstuvwxyz}\n",
                 &o, "entities[0].components[0].body", 11);

    o = keel_load_opts_default();
    o.limits.string_length = 40;
    expect_limit(HEAD "entities:\n" ENT("1") "    name: averyveryverylongname_averyveryverylongname\n", &o,
                 "entities[0].name", 7);

    o = keel_load_opts_default();
    o.limits.nesting_depth = 6;
    expect_limit(HEAD "entities:\n" ENT("1") "    components:\n"
                      "      - kind: mod:deep\n        version: 1\n        body: {a: {b: c}}\n",
                 &o, "entities[0].components[0].body.a", 10);

    o = keel_load_opts_default();
    o.limits.collection_length = 3;
    expect_limit(HEAD "entities:\n" ENT("1") "    components:\n"
                      "      - kind: mod:long\n        version: 1\n        body: {a: [1, 2, 3, 4]}\n",
                 &o, "entities[0].components[0].body.a[3]", 10);

    /* the entities list answers to the entities limit, not the collection length */
    o = keel_load_opts_default();
    o.limits.collection_length = 3;
    {
        keel_world *w = NULL;
        const char *four = HEAD "entities:\n" ENT("1") ENT("2") ENT("3") ENT("4");
        assert_int_equal(parse(four, &o, &w, NULL), KEEL_OK);
        assert_int_equal(keel_world_entity_count(w), 4);
        keel_world_free(w);
    }

    o = keel_load_opts_default();
    o.limits.hierarchy_depth = 2;
    expect_limit(HEAD "entities:\n" ENT("1") ENT("2") "    parent: 11111111-1111-1111-1111-111111111111\n"
                      ENT("3") "    parent: 21111111-1111-1111-1111-111111111111\n",
                 &o, "entities", 0);

    o = keel_load_opts_default();
    o.limits.document_size = 16;
    expect_limit(HEAD, &o, "", 0);
}

/* ---- transactional ---- */

static void scene_load_failed_load_leaves_world_untouched(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(load_fixture("good_design_example.yaml", NULL, &w, &d), KEEL_OK);
    char *before, *after;
    size_t n1, n2;
    assert_int_equal(keel_scene_dump(w, &before, &n1, NULL), KEEL_OK);
    uint64_t rev = keel_world_revision(w);
    keel_world *w2 = w;
    assert_int_equal(load_fixture("bad_rejected_pair.yaml", NULL, &w2, &d), KEEL_INVALID_OPERATION);
    assert_ptr_equal(w2, w);
    assert_int_equal(keel_world_revision(w), rev);
    assert_int_equal(keel_scene_dump(w, &after, &n2, NULL), KEEL_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(before, after, n1);
    free(before);
    free(after);
    keel_world_free(w);
    keel_diags_free(&d);
}

/* ---- kinds declared by the test: migrations, references, assets ---- */

static keel_status migrate_speed(keel_node *body, int to_version, void *user, keel_diags *d)
{
    if (to_version != 2) return KEEL_OK;
    for (size_t i = 0; i < body->count; i++) {
        keel_node *k = &body->items[2 * i], *v = &body->items[2 * i + 1];
        if (strcmp(k->text, "velocity") != 0) continue;
        double kmh;
        if (!keel_node_as_float(v, &kmh)) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "velocity", "not a number");
        free(k->text);
        k->text = strdup("speed");
        k->len = 5;
        char buf[64];
        keel_format_double(kmh / 3.6, buf, sizeof buf);
        free(v->text);
        v->text = strdup(buf);
        v->len = strlen(buf);
    }
    return KEEL_OK;
}

static int setup_kinds(void **state)
{
    assert_int_equal(keel_init(), KEEL_OK);
    static keel_field_desc mig_fields[1];
    memset(mig_fields, 0, sizeof mig_fields);
    mig_fields[0].key = "speed";
    mig_fields[0].type = KEEL_T_FLOAT;
    keel_kind_desc k;
    memset(&k, 0, sizeof k);
    k.key = "test:mover";
    k.version = 2;
    k.multiplicity = KEEL_ONE;
    k.fields = mig_fields;
    k.field_count = 1;
    k.migrate = migrate_speed;
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);

    static keel_field_desc ref_fields[2];
    memset(ref_fields, 0, sizeof ref_fields);
    ref_fields[0].key = "target";
    ref_fields[0].type = KEEL_T_ENTITY;
    ref_fields[1].key = "icon";
    ref_fields[1].type = KEEL_T_ASSET;
    memset(&k, 0, sizeof k);
    k.key = "test:pointer";
    k.version = 1;
    k.multiplicity = KEEL_MANY;
    k.fields = ref_fields;
    k.field_count = 2;
    assert_int_equal(keel_kind_declare(&k, NULL, NULL), KEEL_OK);
    return 0;
}

static int teardown_kinds(void **state)
{
    keel_shutdown();
    return 0;
}

static void scene_load_migrations_applied(void **state)
{
    const char *text = HEAD "entities:\n" ENT("1") "    components:\n"
                            "      - kind: test:mover\n        version: 1\n        slot: 0\n"
                            "        body: {velocity: 36}\n";
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(parse(text, NULL, &w, &d), KEEL_OK);
    keel_comp c;
    assert_true(keel_get_comp(w, keel_find(w, U(E1)), keel_kind_find("test:mover"), 0, &c));
    keel_value v;
    keel_get(w, c, 0, &v, NULL);
    assert_true(v.as.f == 10.0);
    keel_member m;
    keel_member_at(w, keel_find(w, U(E1)), 0, &m);
    assert_int_equal(m.version, 2);
    char *out;
    keel_scene_dump(w, &out, NULL, NULL);
    assert_non_null(strstr(out, "version: 2"));
    assert_non_null(strstr(out, "speed: 10"));
    free(out);
    keel_world_free(w);
    keel_diags_free(&d);
}

#define POINTER(target, icon)                                                         \
    "    components:\n      - kind: test:pointer\n        version: 1\n        slot: 0\n" \
    "        body:\n          target: " target "\n          icon: " icon "\n"
#define ASSET_A "aaaaaaaa-0000-4000-8000-000000000001"
#define ASSET_B "bbbbbbbb-0000-4000-8000-000000000002"

static void scene_load_entity_reference_must_resolve(void **state)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    const char *good = HEAD "entities:\n" ENT("1") POINTER("21111111-1111-1111-1111-111111111111", "null") ENT("2");
    assert_int_equal(parse(good, NULL, &w, &d), KEEL_OK);
    keel_world_free(w);
    w = NULL;
    const char *bad = HEAD "entities:\n" ENT("1") POINTER("99999999-1111-1111-1111-111111111111", "null");
    assert_int_equal(parse(bad, NULL, &w, &d), KEEL_NOT_FOUND);
    assert_null(w);
    const keel_diag *g = first_error(&d);
    assert_string_equal(g->path, "entities[0].components[0].body.target");
    assert_int_equal(g->line, 12);
    assert_non_null(strstr(g->message, "99999999-1111-1111-1111-111111111111"));
    keel_diags_free(&d);
}

static void scene_load_assets_checked_against_manifest(void **state)
{
    const char *manifest = "assets:\n  - {uuid: " ASSET_A ", path: meshes/a.glb, type: mesh}\n";
    keel_assets *a = NULL;
    assert_int_equal(keel_assets_parse(manifest, strlen(manifest), "assets.yaml", &a, NULL), KEEL_OK);
    keel_load_opts o = keel_load_opts_default();
    o.assets = a;
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    const char *known = HEAD "entities:\n" ENT("1") POINTER("null", ASSET_A);
    assert_int_equal(parse(known, &o, &w, &d), KEEL_OK);
    assert_int_equal(d.count, 0);
    keel_world_free(w);
    w = NULL;
    const char *missing = HEAD "entities:\n" ENT("1") POINTER("null", ASSET_B);
    assert_int_equal(parse(missing, &o, &w, &d), KEEL_OK);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].severity, KEEL_SEV_WARNING);
    assert_string_equal(d.items[0].message, "asset " ASSET_B " is not in the manifest; using a placeholder");
    assert_string_equal(d.items[0].path, "entities[0].components[0].body.icon");
    keel_world_free(w);
    w = NULL;
    keel_diags_free(&d);
    o.strict = true;
    assert_int_equal(parse(missing, &o, &w, &d), KEEL_NOT_FOUND);
    assert_null(w);
    assert_int_equal(d.errors, 1);
    keel_diags_free(&d);
    keel_assets_free(a);
}

/* A slot is 0 to 4294967294 (KEEL_SLOT_AUTO is "none"); max+1 never reaches KEEL_SLOT_AUTO. */
static void scene_load_slot_range(void **state)
{
    (void)state;
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    const char *auto_slot = HEAD "entities:\n" ENT("1") "    components:\n"
                                 "      - {kind: core:transform, version: 1}\n"
                                 "      - {kind: core:audio_source, version: 1, slot: 4294967295}\n";
    assert_int_equal(parse(auto_slot, NULL, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_null(w);
    assert_int_equal(d.errors, 1);
    assert_string_equal(first_error(&d)->message, "slot must be an integer from 0 to 4294967294");
    assert_string_equal(first_error(&d)->path, "entities[0].components[1].slot");
    keel_diags_free(&d);
    const char *last = HEAD "entities:\n" ENT("1") "    components:\n"
                            "      - {kind: core:transform, version: 1}\n"
                            "      - {kind: core:audio_source, version: 1, slot: 4294967294}\n"
                            "      - {kind: core:audio_source, version: 1}\n";
    assert_int_equal(parse(last, NULL, &w, &d), KEEL_INVALID_OPERATION);
    assert_null(w);
    assert_int_equal(d.errors, 1);
    assert_string_equal(first_error(&d)->message, "no slot left for core:audio_source");
    keel_diags_free(&d);
    const char *last_unknown = HEAD "entities:\n" ENT("1") "    components:\n"
                                    "      - {kind: mod:winch, version: 1, slot: 4294967294}\n"
                                    "      - {kind: mod:winch, version: 1}\n";
    assert_int_equal(parse(last_unknown, NULL, &w, &d), KEEL_INVALID_OPERATION);
    assert_null(w);
    assert_string_equal(first_error(&d)->message, "no slot left for mod:winch");
    keel_diags_free(&d);
}

/* NULL text or path is a caller's mistake, not a file system's (nor a libyaml assertion). */
static void scene_load_null_text_and_path(void **state)
{
    (void)state;
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_parse(NULL, 0, NULL, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_null(w);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.items[0].message, "no scene text");
    keel_diags_free(&d);
    assert_int_equal(keel_scene_parse(NULL, 12, NULL, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_string_equal(d.items[0].message, "no scene text");
    keel_diags_free(&d);
    assert_int_equal(keel_scene_load(NULL, NULL, &w, &d), KEEL_INVALID_ARGUMENT);
    assert_null(w);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].code, KEEL_INVALID_ARGUMENT);
    assert_string_equal(d.items[0].message, "no path");
    keel_diags_free(&d);
    w = keel_world_new("W");
    assert_int_equal(keel_scene_save(w, NULL, &d), KEEL_INVALID_ARGUMENT);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].code, KEEL_INVALID_ARGUMENT);
    assert_string_equal(d.items[0].message, "no path");
    keel_diags_free(&d);
    keel_world_free(w);
}

/* Without a file name a diagnostic still shows where: "LINE:COL: error: ..." */
static void scene_parse_without_file_keeps_line_and_col(void **state)
{
    (void)state;
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    const char *text = HEAD "entities:\n  - uuid: not-a-uuid\n";
    assert_int_equal(parse(text, NULL, &w, &d), KEEL_PARSE_ERROR);
    const keel_diag *g = first_error(&d);
    assert_null(g->file);
    assert_int_equal(g->line, 6);
    char buf[512];
    keel_diag_format(g, buf, sizeof buf);
    char want[512];
    snprintf(want, sizeof want, "6:%d: error: ParseError: %s (at entities[0].uuid)", g->col, g->message);
    assert_string_equal(buf, want);
    /* with no position there is nothing to show before the severity */
    keel_diag none = { .code = KEEL_NOT_FOUND, .message = (char *)"no such kind", .path = (char *)"" };
    assert_string_equal(keel_diag_format(&none, buf, sizeof buf), "error: NotFound: no such kind");
    keel_diags_free(&d);
}

/* A hierarchy too deep is one problem: one diagnostic, wherever the chain is caught. */
static void scene_load_depth_reported_once(void **state)
{
    (void)state;
    keel_load_opts o = keel_load_opts_default();
    o.limits.hierarchy_depth = 2;
    const char *chain = HEAD "entities:\n" ENT("1") ENT("2") "    parent: 11111111-1111-1111-1111-111111111111\n"
                        ENT("3") "    parent: 21111111-1111-1111-1111-111111111111\n"
                        ENT("4") "    parent: 31111111-1111-1111-1111-111111111111\n"
                        ENT("5") "    parent: 41111111-1111-1111-1111-111111111111\n";
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(parse(chain, &o, &w, &d), KEEL_LIMIT_EXCEEDED);
    print_diags(&d);
    assert_null(w);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].code, KEEL_LIMIT_EXCEEDED);
    assert_string_equal(d.items[0].message,
                        "hierarchy deeper than the limit (2) at entity 31111111-1111-1111-1111-111111111111");
    keel_diags_free(&d);
}

/* A document of n entities whose parents make one ring (entity i's parent is i+1, the last's
 * the first), after `tail` unrelated entities parented into the ring. */
static char *ring_scene(size_t n, size_t tail)
{
    size_t cap = 256 + (n + tail) * 128, at = 0;
    char *t = malloc(cap);
    at += (size_t)snprintf(t + at, cap - at, "%sentities:\n", HEAD);
    for (size_t i = 0; i < tail; i++)
        at += (size_t)snprintf(t + at, cap - at, "  - uuid: 00000000-0000-4000-9000-%012zx\n    parent: 00000000-0000-4000-8000-%012zx\n",
                               i + 1, (size_t)1);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(t + at, cap - at, "  - uuid: 00000000-0000-4000-8000-%012zx\n    parent: 00000000-0000-4000-8000-%012zx\n",
                               i + 1, (i + 1) % n + 1);
    return t;
}

/* A ring is a cycle whatever its length, never the depth limit. */
static void scene_load_parent_ring_is_a_cycle_at_any_length(void **state)
{
    (void)state;
    size_t lengths[] = { 1, 2, 255, 256, 257, 300, 1000 };
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        for (size_t tail = 0; tail <= 3; tail += 3) {
            char *text = ring_scene(lengths[i], tail);
            keel_world *w = NULL;
            keel_diags d;
            keel_diags_init(&d);
            keel_status st = parse(text, NULL, &w, &d);
            printf("# ring of %zu (+%zu): %s, %zu errors\n", lengths[i], tail, keel_status_name(st), d.errors);
            assert_int_equal(st, KEEL_INVALID_OPERATION);
            assert_null(w);
            assert_int_equal(d.errors, 1);
            assert_non_null(strstr(d.items[0].message, "hierarchy cycle: "));
            char want[64];
            snprintf(want, sizeof want, "entities[%zu].parent", tail + lengths[i] - 1); /* the closing link */
            assert_string_equal(d.items[0].path, want);
            keel_diags_free(&d);
            free(text);
        }
    }
}

/* Entities are built as they are read, after the root when it comes first (as the writer puts
 * it), before it otherwise: either way the same diagnostics in the same order, each
 * stage's in document order (entities[1]'s name before entities[0]'s component). */
static const char *const STREAM_HEAD = "keel: 1\n"
                                       "scene: {uuid: 33333333-3333-3333-3333-333333333333, name: s}\n";
static const char *const STREAM_ROOT = "root:\n"
                                       "- {kind: mod:thing, version: 1, body: {a: 1}}\n";
static const char *const STREAM_ENTITIES =
    "entities:\n"
    "- uuid: 11111111-1111-1111-1111-111111111111\n"
    "  components:\n"
    "  - {kind: core:transform, version: 1, body: {position: [x, 0, 0]}}\n"
    "- uuid: 22222222-2222-2222-2222-222222222222\n"
    "  name: [not, a, string]\n"
    "- uuid: 44444444-4444-4444-4444-444444444444\n"
    "  parent: 55555555-5555-5555-5555-555555555555\n"
    "- uuid: nope\n"
    "- {uuid: 66666666-6666-6666-6666-666666666666, components: [{kind: mod:thing, version: 1}]}\n";

static void diags_of(const char *a, const char *b, const char *c, keel_diags *d)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s%s", a, b, c);
    keel_world *w = NULL;
    keel_diags_init(d);
    assert_int_not_equal(parse(text, NULL, &w, d), KEEL_OK);
    assert_null(w);
}

static void scene_load_streamed_entities_same_diagnostics(void **state)
{
    (void)state;
    keel_diags streamed, whole;
    diags_of(STREAM_HEAD, STREAM_ROOT, STREAM_ENTITIES, &streamed);
    diags_of(STREAM_HEAD, STREAM_ENTITIES, STREAM_ROOT, &whole);
    print_diags(&streamed);
    assert_int_equal(streamed.count, whole.count);
    assert_true(streamed.count >= 5);
    for (size_t i = 0; i < streamed.count; i++) {
        assert_int_equal(streamed.items[i].code, whole.items[i].code);
        assert_int_equal(streamed.items[i].severity, whole.items[i].severity);
        assert_string_equal(streamed.items[i].path, whole.items[i].path);
        assert_string_equal(streamed.items[i].message, whole.items[i].message);
    }
    size_t name = SIZE_MAX, comp = SIZE_MAX;
    for (size_t i = 0; i < streamed.count; i++) {
        if (strcmp(streamed.items[i].path, "entities[1].name") == 0) name = i;
        if (strncmp(streamed.items[i].path, "entities[0].components[0]", 25) == 0 && comp == SIZE_MAX) comp = i;
    }
    assert_true(name < comp && comp != SIZE_MAX);
    /* positions are the file's: entities[1].name is on line 10 when the root comes first */
    assert_int_equal(streamed.items[name].line, 10);
    assert_int_equal(streamed.items[name].col, 9);
    keel_diags_free(&streamed);
    keel_diags_free(&whole);
}

/* A refusal the reader finds after the entities were built still publishes nothing, and only
 * it is reported (the entities' own problems are not). */
static void scene_load_refusal_after_streamed_entities(void **state)
{
    (void)state;
    static const char *const tails[] = { "scene: again\n", "extra: [unclosed\n", "---\nkeel: 1\n" };
    for (size_t t = 0; t < sizeof tails / sizeof *tails; t++) {
        keel_diags d;
        diags_of(STREAM_HEAD, STREAM_ROOT, STREAM_ENTITIES, &d);
        keel_diags_free(&d);
        char text[2048];
        snprintf(text, sizeof text, "%s%s%s%s", STREAM_HEAD, STREAM_ROOT, STREAM_ENTITIES, tails[t]);
        keel_world *w = NULL;
        keel_diags_init(&d);
        assert_int_equal(parse(text, NULL, &w, &d), KEEL_PARSE_ERROR);
        assert_null(w);
        assert_int_equal(d.count, 1);
        assert_int_equal(d.items[0].code, KEEL_PARSE_ERROR);
        assert_true(d.items[0].line >= 14);
        keel_diags_free(&d);
    }
}

/* Past the entities limit the list is refused whole: one LimitExceeded, none of the
 * problems of the records read before the limit was known to be passed, and the same warnings
 * (the root's unknown components only) whether the root comes before the list or after it. */
static void scene_load_streamed_entities_over_the_limit(void **state)
{
    (void)state;
    keel_load_opts o = keel_load_opts_default();
    o.limits.entities = 2;
    keel_diags d[2];
    for (int after = 0; after < 2; after++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s%s", STREAM_HEAD, after ? STREAM_ENTITIES : STREAM_ROOT,
                 after ? STREAM_ROOT : STREAM_ENTITIES);
        keel_world *w = NULL;
        keel_diags_init(&d[after]);
        assert_int_equal(parse(text, &o, &w, &d[after]), KEEL_LIMIT_EXCEEDED);
        assert_null(w);
        print_diags(&d[after]);
        size_t errors = 0;
        for (size_t i = 0; i < d[after].count; i++)
            if (d[after].items[i].severity == KEEL_SEV_ERROR) {
                errors++;
                assert_string_equal(d[after].items[i].path, "entities");
            }
        assert_int_equal(errors, 1);
    }
    assert_int_equal(d[0].count, d[1].count);
    for (size_t i = 0; i < d[0].count; i++) assert_string_equal(d[0].items[i].message, d[1].items[i].message);
    keel_diags_free(&d[0]);
    keel_diags_free(&d[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scene_load_design_example),
        cmocka_unit_test(scene_load_child_before_parent),
        cmocka_unit_test(scene_load_unknown_kinds_kept_with_one_warning_each),
        cmocka_unit_test(scene_load_refusals),
        cmocka_unit_test(scene_load_three_errors_all_listed),
        cmocka_unit_test(scene_parse_runs_validate_on_bodies),
        cmocka_unit_test(scene_load_enum_strict_and_lenient),
        cmocka_unit_test(scene_load_missing_file_is_io_error),
        cmocka_unit_test(scene_load_cooked_file),
        cmocka_unit_test(scene_load_not_a_map),
        cmocka_unit_test(scene_load_limits),
        cmocka_unit_test(scene_load_failed_load_leaves_world_untouched),
        cmocka_unit_test(scene_load_migrations_applied),
        cmocka_unit_test(scene_load_entity_reference_must_resolve),
        cmocka_unit_test(scene_load_assets_checked_against_manifest),
        cmocka_unit_test(scene_load_slot_range),
        cmocka_unit_test(scene_load_null_text_and_path),
        cmocka_unit_test(scene_parse_without_file_keeps_line_and_col),
        cmocka_unit_test(scene_load_depth_reported_once),
        cmocka_unit_test(scene_load_parent_ring_is_a_cycle_at_any_length),
        cmocka_unit_test(scene_load_streamed_entities_same_diagnostics),
        cmocka_unit_test(scene_load_refusal_after_streamed_entities),
        cmocka_unit_test(scene_load_streamed_entities_over_the_limit),
    };
    return KEEL_TEST_RUN(tests, setup_kinds, teardown_kinds);
}
