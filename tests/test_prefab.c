/* test_prefab.c — keel_instantiate: a template world copied in with fresh UUIDs, or not at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "keel.h"

#include "world_fixture.h"
#include "bind.h" /* keel__scene_dump_subtree, keel__scene_parse_fragment, keel__paste */

/* test:unit (one per entity): n, an entity reference; its awake notes the n it sees. */
static char log_text[512];

static keel_status unit_hook(const keel_call *c)
{
    keel_value v;
    keel_get(c->world, c->comp, 0, &v, NULL);
    char *end = log_text + strlen(log_text);
    snprintf(end, sizeof log_text - (size_t)(end - log_text), "%s:%s:%lld;", keel_phase_name(c->phase),
             keel_entity_name(c->world, c->comp.entity), (long long)v.as.i);
    return KEEL_OK;
}

static const keel_field_desc unit_fields[] = { { .key = "n", .type = KEEL_T_INT },
                                               { .key = "ref", .type = KEEL_T_ENTITY } };

static int prefab_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:unit";
    kd.version = 1;
    kd.fields = unit_fields;
    kd.field_count = 2;
    kd.hooks[KEEL_PHASE_AWAKE] = unit_hook;
    kd.hooks[KEEL_PHASE_ON_DESTROY] = unit_hook;
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

/* Squad > (Lead -> Squad), Medic -> Lead; a world_settings on the root; an unknown kind on Squad. */
static const char TEMPLATE[] =
    "keel: 1\n"
    "scene: {uuid: b0000000-0000-4000-8000-000000000000, name: Squad}\n"
    "root:\n"
    "- {kind: core:world_settings, version: 1, slot: 0, body: {}}\n"
    "entities:\n"
    "- uuid: b0000000-0000-4000-8000-000000000001\n"
    "  name: Squad\n"
    "  components:\n"
    "  - {kind: test:unit, version: 1, slot: 0, body: {n: 1}}\n"
    "  - {kind: mod:banner, version: 2, slot: 0, body: {colour: red}}\n"
    "- uuid: b0000000-0000-4000-8000-000000000002\n"
    "  name: Lead\n"
    "  parent: b0000000-0000-4000-8000-000000000001\n"
    "  components:\n"
    "  - {kind: test:unit, version: 1, slot: 0, body: {n: 2, ref: b0000000-0000-4000-8000-000000000001}}\n"
    "- uuid: b0000000-0000-4000-8000-000000000003\n"
    "  name: Medic\n"
    "  components:\n"
    "  - {kind: test:unit, version: 1, slot: 0, body: {n: 3, ref: b0000000-0000-4000-8000-000000000002}}\n";

static keel_world *template(fx *f)
{
    keel_load_opts o = keel_load_opts_default();
    o.no_awake = true;
    keel_world *t = NULL;
    log_text[0] = 0;
    keel_status st = keel_scene_parse(TEMPLATE, sizeof TEMPLATE - 1, &o, &t, &f->d);
    if (st) fail_msg("template: %s", f->d.count ? f->d.items[0].message : "?");
    assert_string_equal(log_text, ""); /* no_awake: nothing ran */
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    return t;
}

static keel_value field(fx *f, keel_entity e, int i)
{
    keel_comp c;
    keel_value v = { 0 };
    assert_true(keel_get_comp(f->w, e, K("test:unit"), KEEL_SLOT_AUTO, &c));
    assert_int_equal(keel_get(f->w, c, i, &v, &f->d), KEEL_OK);
    return v;
}

static void instantiate_copies_with_fresh_uuids_and_remapped_refs(void **state)
{
    fx *f = *state;
    keel_world *t = template(f);
    keel_entity parent = spawn(f, "Spawner", KEEL_NO_ENTITY);
    keel_entity tops[2] = { 0 };
    size_t n = 0;
    keel_instantiate_opts o = { .parent = parent };
    assert_int_equal(keel_instantiate(f->w, t, &o, tops, 2, &n, &f->d), KEEL_OK);
    assert_int_equal(n, 2);
    assert_string_equal(keel_entity_name(f->w, tops[0]), "Squad");
    assert_string_equal(keel_entity_name(f->w, tops[1]), "Medic");
    assert_int_equal(keel_entity_parent(f->w, tops[0]), parent);
    keel_entity lead = keel_entity_first_child(f->w, tops[0]);
    assert_string_equal(keel_entity_name(f->w, lead), "Lead");
    for (keel_entity e = keel_next(f->w, parent); e; e = keel_next(f->w, e))
        assert_false(keel_find(t, keel_entity_uuid(f->w, e))); /* fresh UUIDs */
    assert_true(keel_uuid_equal(field(f, lead, 1).as.u, keel_entity_uuid(f->w, tops[0])));
    assert_true(keel_uuid_equal(field(f, tops[1], 1).as.u, keel_entity_uuid(f->w, lead)));
    assert_int_equal(keel_member_count(f->w, tops[0]), 2);                      /* the unknown kind kept */
    assert_int_equal(keel_member_count(f->w, keel_world_root(f->w)), 0);        /* the root's not copied */
    assert_string_equal(log_text, "awake:Squad:1;awake:Lead:2;awake:Medic:3;"); /* pre-order */
    /* a second copy: other UUIDs again; a short out array still counts them all */
    keel_entity one = 0;
    assert_int_equal(keel_instantiate(f->w, t, NULL, &one, 1, &n, &f->d), KEEL_OK);
    assert_int_equal(n, 2);
    assert_false(keel_uuid_equal(keel_entity_uuid(f->w, one), keel_entity_uuid(f->w, tops[0])));
    assert_int_equal(keel_entity_parent(f->w, one), KEEL_NO_ENTITY);
    keel_world_free(t);
}

/* before_awake: the staged copies get n = 40 + k; Squad gets a second unit (rules refuse) when asked. */
static keel_status stage_fn(keel_world *s, const keel_entity *tops, size_t n, void *user, keel_diags *d)
{
    int mode = *(int *)user;
    if (mode == 1) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "refused by the callback");
    for (size_t k = 0; k < n; k++) {
        keel_comp c;
        if (!keel_get_comp(s, tops[k], keel_kind_find("test:unit"), KEEL_SLOT_AUTO, &c)) return KEEL_NOT_FOUND;
        keel_value v = { .type = KEEL_T_INT, .as.i = 40 + (int64_t)k };
        keel_status st = keel_set(s, c, 0, &v, NULL, d);
        if (st) return st;
    }
    if (mode == 2) {
        keel_add_opts ao = KEEL_ADD_OPTS_INIT;
        ao.skip_rules = true;
        ao.no_awake = true;
        ao.slot = 1;
        return keel_add(s, tops[0], keel_kind_find("test:unit"), &ao, NULL, NULL, d);
    }
    return KEEL_OK;
}

static void instantiate_before_awake_lands_before_awake(void **state)
{
    fx *f = *state;
    keel_world *t = template(f);
    int mode = 0;
    keel_instantiate_opts o = { .name = "Alpha", .before_awake = stage_fn, .user = &mode };
    keel_entity tops[2];
    assert_int_equal(keel_instantiate(f->w, t, &o, tops, 2, NULL, &f->d), KEEL_OK);
    assert_string_equal(keel_entity_name(f->w, tops[0]), "Alpha");
    assert_string_equal(keel_entity_name(f->w, tops[1]), "Alpha");
    assert_int_equal(field(f, tops[0], 0).as.i, 40);
    assert_int_equal(field(f, tops[1], 0).as.i, 41);
    assert_string_equal(log_text, "awake:Alpha:40;awake:Lead:2;awake:Alpha:41;");
    /* the template is untouched */
    keel_comp c;
    keel_value v;
    assert_true(keel_get_comp(t, keel_find_name(t, "Squad"), K("test:unit"), KEEL_SLOT_AUTO, &c));
    assert_int_equal(keel_get(t, c, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 1);
    keel_world_free(t);
}

static void instantiate_refusal_publishes_nothing(void **state)
{
    fx *f = *state;
    keel_world *t = template(f);
    keel_entity keep = spawn(f, "Keep", KEEL_NO_ENTITY);
    uint64_t rev = keel_world_revision(f->w);
    int mode = 1;
    keel_instantiate_opts o = { .before_awake = stage_fn, .user = &mode };
    keel_entity out = 0;
    size_t n = 7;
    assert_diag(keel_instantiate(f->w, t, &o, &out, 1, &n, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "refused by");
    assert_int_equal(n, 0);
    mode = 2; /* kind rules: a second one-kind component */
    assert_diag(keel_instantiate(f->w, t, &o, &out, 1, &n, &f->d), &f->d, KEEL_INVALID_OPERATION, "test:unit");
    o = (keel_instantiate_opts){ .name = "bad\xff" };
    assert_diag(keel_instantiate(f->w, t, &o, &out, 1, &n, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "UTF-8");
    assert_int_equal(keel_world_revision(f->w), rev);
    keel_entity dead = spawn(f, "Dead", KEEL_NO_ENTITY);
    assert_int_equal(keel_destroy(f->w, dead, NULL, &f->d), KEEL_OK);
    rev = keel_world_revision(f->w);
    o = (keel_instantiate_opts){ .parent = dead };
    assert_int_equal(keel_instantiate(f->w, t, &o, &out, 1, &n, &f->d), KEEL_NOT_FOUND);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel_instantiate(NULL, t, NULL, &out, 1, &n, &f->d), KEEL_INVALID_ARGUMENT);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel_world_revision(f->w), rev);
    assert_int_equal(keel_world_entity_count(f->w), 1);
    assert_true(keel_alive(f->w, keep));
    assert_string_equal(log_text, ""); /* no hook ran */
    keel_world_free(t);
}

/* A fragment of Lead (-> Squad, outside it): keel_scene_parse refuses the outside reference, the
 * fragment reader takes it; pasted where Squad lives it is kept, elsewhere cleared; the inverse
 * takes the copies back. */
static void paste_keeps_or_clears_outside_references(void **state)
{
    fx *f = *state;
    keel_world *t = template(f);
    keel_instantiate_opts o = { 0 };
    keel_entity tops[2] = { 0 };
    size_t n = 0;
    assert_int_equal(keel_instantiate(f->w, t, &o, tops, 2, &n, &f->d), KEEL_OK);
    keel_world_free(t);
    keel_entity lead = keel_entity_first_child(f->w, tops[0]);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(keel__scene_dump_subtree(f->w, lead, &text, &len, &f->d), KEEL_OK);
    assert_null(strstr(text, "parent:")); /* the top entity's parent is left out */
    assert_non_null(strstr(text, "entities:"));
    assert_int_equal(keel__scene_dump_subtree(f->w, keel_world_root(f->w), &text, &len, &f->d), KEEL_PROTECTED_ENTITY);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    keel_world *frag = NULL;
    keel_load_opts lo = keel_load_opts_default();
    lo.no_awake = true;
    assert_int_equal(keel_scene_parse(text, len, &lo, &frag, &f->d), KEEL_NOT_FOUND);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel__scene_parse_fragment(text, len, &lo, &frag, &f->d), KEEL_OK);
    free(text);
    /* into the same world: Squad lives here, the reference stays */
    keel_cmd inv = { 0 };
    keel_entity copy = 0;
    uint64_t rev = keel_world_revision(f->w);
    size_t count = keel_world_entity_count(f->w);
    assert_int_equal(keel__paste(f->w, frag, KEEL_NO_ENTITY, &copy, 1, &n, &inv, &f->d), KEEL_OK);
    assert_int_equal(n, 1);
    assert_false(keel_uuid_equal(keel_entity_uuid(f->w, copy), keel_entity_uuid(f->w, lead)));
    assert_true(keel_uuid_equal(field(f, copy, 1).as.u, keel_entity_uuid(f->w, tops[0])));
    assert_int_equal(keel_cmd_apply(f->w, &inv, NULL, &f->d), KEEL_OK); /* the inverse destroys it */
    assert_int_equal(keel_world_entity_count(f->w), count);
    keel_cmd_free(&inv);
    /* the revision can be put back (undo to the checkpoint) */
    keel__world_set_revision(f->w, rev);
    assert_int_equal(keel_world_revision(f->w), rev);
    /* into another world: Squad is not there, the reference is cleared */
    keel_world *other = keel_world_new("other");
    assert_int_equal(keel__paste(other, frag, KEEL_NO_ENTITY, &copy, 1, &n, NULL, &f->d), KEEL_OK);
    keel_comp c;
    keel_value v = { 0 };
    assert_true(keel_get_comp(other, copy, K("test:unit"), KEEL_SLOT_AUTO, &c));
    assert_int_equal(keel_get(other, c, 1, &v, &f->d), KEEL_OK);
    assert_true(v.nil || keel_uuid_is_nil(v.as.u));
    keel_world_free(other);
    keel_world_free(frag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(instantiate_copies_with_fresh_uuids_and_remapped_refs),
        T(instantiate_before_awake_lands_before_awake),
        T(instantiate_refusal_publishes_nothing),
        T(paste_keeps_or_clears_outside_references),
    };
    return KEEL_TEST_RUN(tests, prefab_group_setup, group_teardown);
}
