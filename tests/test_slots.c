/* test_slots.c — membership and slots: multiplicity, max+1 slots, requires/rejects, root rules, unknown entries. */
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

#include "model/field.h" /* keel__field_set: a readonly field written as a save-game apply does */
#include "world_fixture.h"

static void slots_one_kind_takes_slot_zero(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_comp c = add(f, e, "core:transform");
    assert_int_equal(c.slot, 0);
    keel_status st;
    add_slot(f, e, "core:transform", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:transform is already present (multiplicity one)");
}

static void slots_one_kind_refuses_other_slot(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_status st;
    add_slot(f, e, "core:transform", 2, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:transform is a one kind: only slot 0, not slot 2");
    assert_int_equal(keel_member_count(f->w, e), 0);
}

static void slots_many_take_max_plus_one_without_renumbering(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    assert_int_equal(add(f, e, "core:audio_source").slot, 0);
    assert_int_equal(add(f, e, "core:audio_source").slot, 1);
    assert_int_equal(add(f, e, "core:audio_source").slot, 2);
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    /* slot 2 keeps its number; the next one is max+1 = 3, not the freed 1 */
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, K("core:audio_source"), 2, &c));
    assert_int_equal(add(f, e, "core:audio_source").slot, 3);
    keel_member m;
    assert_true(keel_member_at(f->w, e, 3, &m));
    assert_int_equal(m.slot, 3);
}

static void slots_removed_slot_is_not_found(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    keel_comp stale = { e, K("core:audio_source"), 1 };
    assert_false(keel_comp_alive(f->w, stale));
    assert_null(keel_record(f->w, stale));
    keel_value v;
    keel_status st = keel_get(f->w, stale, 0, &v, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "slot 1 of core:audio_source not found");
    st = keel_remove(f->w, e, "core:audio_source", 3, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "slot 3 of core:audio_source not found");
    st = keel_remove(f->w, e, "core:camera", KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "core:camera not found");
}

static void slots_explicit_free_slot_and_occupied(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    keel_status st;
    keel_comp c = add_slot(f, e, "core:audio_source", 5, &st);
    assert_int_equal(st, KEEL_OK);
    assert_int_equal(c.slot, 5);
    add_slot(f, e, "core:audio_source", 5, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "slot 5 of core:audio_source is occupied");
    assert_int_equal(add(f, e, "core:audio_source").slot, 6);
}

static void slots_many_with_max(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { 0 };
    kd.key = "test:limited";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    kd.max = 2;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "test:limited");
    add(f, e, "test:limited");
    keel_status st;
    add_slot(f, e, "test:limited", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "test:limited allows at most 2 components");
}

static void slots_requires_missing(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_status st;
    add_slot(f, e, "core:camera", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:camera requires core:transform");
    add(f, e, "core:transform");
    add(f, e, "core:camera");
}

/* Declares (or redeclares) a bare kind: version 1, a singleton, no fields, rejecting `rejects`. */
static void declare_bare(fx *f, const char *key, const char *const *rejects, size_t rejects_count)
{
    keel_kind_desc kd = { 0 };
    kd.key = key;
    kd.version = 1;
    kd.rejects = rejects;
    kd.rejects_count = rejects_count;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
}

static void slots_rejects_both_directions(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:point_light");
    keel_status st;
    /* the new kind rejects a present one */
    add_slot(f, e, "core:spot_light", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:spot_light rejects core:point_light");
    /* a present kind rejects the new one */
    declare_bare(f, "test:shy", NULL, 0);
    static const char *const rej[] = { "test:shy" };
    declare_bare(f, "test:bully", rej, 1);
    keel_entity g = spawn(f, "B", 0);
    add(f, g, "test:bully");
    add_slot(f, g, "test:shy", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "test:bully rejects test:shy");
}

/* An add skips the rule scan for a kind no declared kind rejects: that knowledge must follow
 * every declaration, including one that names a kind declared only later. */
static void slots_rejects_follow_redeclarations(void **state)
{
    fx *f = *state;
    declare_bare(f, "test:meek", NULL, 0);
    declare_bare(f, "test:grump", NULL, 0);
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:meek"); /* nobody rejects it yet */

    static const char *const rej[] = { "test:meek" };
    declare_bare(f, "test:grump", rej, 1); /* test:grump now rejects it */
    keel_entity b = spawn(f, "B", 0);
    add(f, b, "test:grump");
    keel_status st;
    add_slot(f, b, "test:meek", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "test:grump rejects test:meek");
    assert_int_equal(keel_member_count(f->w, b), 1);

    declare_bare(f, "test:grump", NULL, 0); /* and no longer does */
    add(f, b, "test:meek");
    assert_int_equal(keel_member_count(f->w, b), 2);

    /* rejecting a key before it is declared */
    static const char *const rej_late[] = { "test:late" };
    declare_bare(f, "test:early", rej_late, 1);
    declare_bare(f, "test:late", NULL, 0);
    keel_entity c = spawn(f, "C", 0);
    add(f, c, "test:early");
    add_slot(f, c, "test:late", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "test:early rejects test:late");
}

static void slots_removing_required_is_refused(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:camera");
    keel_status st = keel_remove(f->w, e, "core:transform", KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:transform is required by core:camera");
    assert_int_equal(keel_member_count(f->w, e), 2);
    assert_int_equal(keel_remove(f->w, e, "core:camera", KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "core:transform", KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_member_count(f->w, e), 0);
}

static void slots_required_many_kind_with_another_slot_left(void **state)
{
    fx *f = *state;
    static const char *const req[] = { "core:audio_source" };
    keel_kind_desc kd = { 0 };
    kd.key = "test:mixer";
    kd.version = 1;
    kd.requires = req;
    kd.requires_count = 1;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    add(f, e, "test:mixer");
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 0, NULL, &f->d), KEEL_OK);
    keel_status st = keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:audio_source is required by test:mixer");
}

static void slots_many_remove_needs_slot(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    keel_status st = keel_remove(f->w, e, "core:audio_source", KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:audio_source is a many kind: name the slot");
}

static void slots_world_settings_only_on_root(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_status st;
    add_slot(f, e, "core:world_settings", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:world_settings lives only on the scene root");
    keel_entity root = keel_world_root(f->w);
    keel_comp c = add(f, root, "core:world_settings");
    assert_int_equal(c.slot, 0);
    assert_true(keel_comp_alive(f->w, c));
}

static void slots_root_refuses_transform_but_holds_gameplay(void **state)
{
    fx *f = *state;
    keel_entity root = keel_world_root(f->w);
    keel_status st;
    add_slot(f, root, "core:transform", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "the scene root cannot hold core:transform");
    declare_bare(f, "test:match_timer", NULL, 0);
    add(f, root, "test:match_timer");
    assert_int_equal(keel_member_count(f->w, root), 1);
}

static void slots_components_limit(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { 0 };
    kd.key = "test:many";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    keel_entity e = spawn(f, "A", 0);
    for (int i = 0; i < 256; i++) add(f, e, "test:many");
    keel_status st;
    add_slot(f, e, "test:many", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_LIMIT_EXCEEDED, "components per entity limit (256) exceeded");
}

static void slots_unknown_entries(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "pull", keel_node_new_scalar("3.5", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 2, 4, body, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 2, KEEL_SLOT_AUTO, body, &f->d), KEEL_OK);
    keel_status st = keel_add_unknown(f->w, e, "mod:winch", 2, 4, body, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "slot 4 of mod:winch is occupied");
    keel_member m;
    assert_true(keel_member_at(f->w, e, 0, &m));
    assert_false(m.loaded);
    assert_string_equal(m.key, "mod:winch");
    assert_int_equal(m.slot, 4);
    assert_int_equal(m.version, 2);
    assert_true(keel_node_equal(m.preserved, body));
    assert_true(keel_member_at(f->w, e, 1, &m));
    assert_int_equal(m.slot, 5);
    st = keel_remove(f->w, e, "mod:winch", 9, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "slot 9 of mod:winch not found");
    /* its multiplicity is unknown: with two, a remove without a slot would guess */
    st = keel_remove(f->w, e, "mod:winch", KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "mod:winch: this entity holds 2 of it: name the slot to remove");
    assert_int_equal(keel_member_count(f->w, e), 2);
    assert_int_equal(keel_remove(f->w, e, "mod:winch", 4, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_member_count(f->w, e), 1);
    /* with one there is nothing to guess */
    assert_int_equal(keel_remove(f->w, e, "mod:winch", KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_member_count(f->w, e), 0);
    /* a declared one kind is slot 0 even beside a newer, unknown copy of it */
    add(f, e, "core:transform");
    add(f, e, "core:camera");
    assert_int_equal(keel_add_unknown(f->w, e, "core:camera", 99, 1, body, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "core:camera", KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    keel_member m2;
    assert_true(keel_member_at(f->w, e, 1, &m2));
    assert_false(m2.loaded);
    assert_int_equal(m2.slot, 1);
    /* two newer copies and no live one: which goes would be a guess again */
    assert_int_equal(keel_add_unknown(f->w, e, "core:camera", 99, 7, body, &f->d), KEEL_OK);
    st = keel_remove(f->w, e, "core:camera", KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:camera: this entity holds 2 of it: name the slot to remove");
    keel_node_free(body);
}

static void slots_unknown_of_a_registered_key_refuses_edits(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    /* a newer version than the kind knows is kept unknown */
    assert_int_equal(keel_add_unknown(f->w, e, "core:camera", 99, 0, NULL, &f->d), KEEL_OK);
    keel_comp c = { e, K("core:camera"), 0 };
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 70 };
    keel_status st = keel_set(f->w, c, 1, &v, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_UNSUPPORTED, "core:camera is not loaded");
    st = keel_get(f->w, c, 1, &v, &f->d);
    assert_diag(st, &f->d, KEEL_UNSUPPORTED, "core:camera is not loaded");
}

static void slots_set_checks_readonly_and_range(void **state)
{
    fx *f = *state;
    static const keel_field_desc fields[] = {
        { .key = "hp", .type = KEEL_T_FLOAT, .has_min = true, .min = 0, .has_max = true, .max = 100 },
        { .key = "id", .type = KEEL_T_INT, .flags = KEEL_FIELD_READONLY },
    };
    keel_kind_desc kd = { 0 };
    kd.key = "test:health";
    kd.version = 1;
    kd.fields = fields;
    kd.field_count = 2;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    keel_entity e = spawn(f, "A", 0);
    keel_comp c = add(f, e, "test:health");
    uint64_t rev = keel_world_revision(f->w);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 50 };
    assert_int_equal(keel_set(f->w, c, 0, &v, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_comp_counter(f->w, c), 1);
    assert_true(keel_world_revision(f->w) > rev);
    v.as.f = 500;
    keel_status st = keel_set(f->w, c, 0, &v, NULL, &f->d);
    assert_int_equal(st, KEEL_INVALID_ARGUMENT);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel_comp_counter(f->w, c), 1);
    keel_value iv = { .type = KEEL_T_INT, .as.i = 7 };
    st = keel_set(f->w, c, 1, &iv, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_UNSUPPORTED, "field id of test:health is readonly");
    assert_int_equal(keel__field_set(f->w, c, 1, &iv, true, NULL, &f->d), KEEL_OK);
    keel_value out;
    assert_int_equal(keel_get(f->w, c, 1, &out, &f->d), KEEL_OK);
    assert_int_equal(out.as.i, 7);
    assert_int_equal(keel_reset(f->w, c, -1, &f->d), KEEL_OK);
    assert_int_equal(keel_get(f->w, c, 1, &out, &f->d), KEEL_OK);
    assert_int_equal(out.as.i, 0);
}

static void slots_validate_rejects_and_restores(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    keel_comp c = add(f, e, "core:camera");
    int near = keel_kind_field(c.kind, "near");
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 5000 };
    keel_status st = keel_set(f->w, c, near, &v, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "far must be greater than near");
    keel_value out;
    assert_int_equal(keel_get(f->w, c, near, &out, &f->d), KEEL_OK);
    assert_true(out.as.f == 0.1);
    assert_int_equal(keel_comp_counter(f->w, c), 0);
}

static keel_status count_awake(const keel_call *c)
{
    (*(int *)c->user)++;
    return KEEL_OK;
}

static void slots_declaring_a_kind_adopts_unknown_entries(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "pull", keel_node_new_scalar("3.5", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(f->w, e, "test:winch", 1, 3, body, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "test:winch", 2, 5, body, &f->d), KEEL_OK); /* too new */
    keel_node_free(body);
    static const keel_field_desc fields[] = { { .key = "pull", .type = KEEL_T_FLOAT } };
    static int awakes;
    awakes = 0;
    keel_kind_desc kd = { 0 };
    kd.key = "test:winch";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    kd.fields = fields;
    kd.field_count = 1;
    kd.hooks[KEEL_PHASE_AWAKE] = count_awake;
    kd.user = &awakes;
    keel_kind_id k;
    assert_int_equal(keel_kind_declare(&kd, &k, &f->d), KEEL_OK);
    keel_member m;
    assert_true(keel_member_at(f->w, e, 0, &m));
    assert_true(m.loaded);
    assert_int_equal(m.slot, 3);
    assert_true(keel_member_at(f->w, e, 1, &m));
    assert_false(m.loaded); /* a newer version stays unknown */
    assert_int_equal(awakes, 1);
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, k, 3, &c));
    keel_value v;
    assert_int_equal(keel_get(f->w, c, 0, &v, &f->d), KEEL_OK);
    assert_true(v.as.f == 3.5);
}

static void slots_redeclaring_carries_fields_by_name(void **state)
{
    fx *f = *state;
    static const keel_field_desc v1[] = {
        { .key = "a", .type = KEEL_T_FLOAT },
        { .key = "name", .type = KEEL_T_STRING },
        { .key = "gone", .type = KEEL_T_STRING },
    };
    static const keel_field_desc v2[] = {
        { .key = "fresh", .type = KEEL_T_INT, .has_default = true, .def = { .type = KEEL_T_INT, .as.i = 9 } },
        { .key = "name", .type = KEEL_T_STRING },
        { .key = "a", .type = KEEL_T_FLOAT },
    };
    keel_kind_desc kd = { 0 };
    kd.key = "test:reload";
    kd.version = 1;
    kd.fields = v1;
    kd.field_count = 3;
    keel_kind_id k;
    assert_int_equal(keel_kind_declare(&kd, &k, &f->d), KEEL_OK);
    keel_entity e = spawn(f, "A", 0);
    keel_comp c = add(f, e, "test:reload");
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 2.5 };
    assert_int_equal(keel_set(f->w, c, 0, &v, NULL, &f->d), KEEL_OK);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "kept" };
    assert_int_equal(keel_set(f->w, c, 1, &v, NULL, &f->d), KEEL_OK);
    v = (keel_value){ .type = KEEL_T_STRING, .as.s = "dropped" };
    assert_int_equal(keel_set(f->w, c, 2, &v, NULL, &f->d), KEEL_OK);
    kd.fields = v2;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_get(f->w, c, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 9);
    assert_int_equal(keel_get(f->w, c, 1, &v, &f->d), KEEL_OK);
    assert_string_equal(v.as.s, "kept");
    assert_int_equal(keel_get(f->w, c, 2, &v, &f->d), KEEL_OK);
    assert_true(v.as.f == 2.5);
}

static keel_status write_own_readonly(const keel_call *c)
{
    keel_value v = { .type = KEEL_T_INT, .as.i = 11 };
    return keel_set(c->world, c->comp, 0, &v, NULL, c->diags);
}

static void slots_readonly_is_writable_by_its_own_hooks(void **state)
{
    fx *f = *state;
    static const keel_field_desc fields[] = { { .key = "spawned", .type = KEEL_T_INT, .flags = KEEL_FIELD_READONLY } };
    keel_kind_desc kd = { 0 };
    kd.key = "test:counter";
    kd.version = 1;
    kd.fields = fields;
    kd.field_count = 1;
    kd.hooks[KEEL_PHASE_UPDATE] = write_own_readonly;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    keel_entity e = spawn(f, "A", 0);
    keel_comp c = add(f, e, "test:counter");
    keel_value v = { .type = KEEL_T_INT, .as.i = 3 };
    keel_status st = keel_set(f->w, c, 0, &v, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_UNSUPPORTED, "field spawned of test:counter is readonly");
    assert_int_equal(keel_step(f->w, 0.1, &f->d), KEEL_OK);
    assert_int_equal(keel_fault_count(f->w), 0);
    assert_int_equal(keel_get(f->w, c, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 11);
}

static void slots_check_rules_reports_every_problem(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0), root = keel_world_root(f->w);
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.skip_rules = true;
    assert_int_equal(keel_add(f->w, e, K("core:camera"), &o, NULL, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_add(f->w, e, K("core:world_settings"), &o, NULL, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_add(f->w, root, K("core:transform"), &o, NULL, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_check_rules(f->w, e, "entities[0]", &f->d), KEEL_INVALID_OPERATION);
    assert_int_equal(f->d.count, 2);
    assert_string_equal(f->d.items[0].message, "core:camera requires core:transform");
    assert_string_equal(f->d.items[0].path, "entities[0].components[0]");
    assert_string_equal(f->d.items[1].message, "core:world_settings lives only on the scene root");
    assert_string_equal(f->d.items[1].path, "entities[0].components[1]");
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel_check_rules(f->w, root, "root", &f->d), KEEL_INVALID_OPERATION);
    assert_string_equal(f->d.items[0].message, "the scene root cannot hold core:transform");
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    keel_entity g = spawn(f, "B", 0);
    add(f, g, "core:transform");
    add(f, g, "core:point_light");
    assert_int_equal(keel_add(f->w, g, K("core:spot_light"), &o, NULL, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_check_rules(f->w, g, "", &f->d), KEEL_INVALID_OPERATION);
    assert_int_equal(f->d.count, 2); /* both directions */
    assert_string_equal(f->d.items[0].message, "core:point_light rejects core:spot_light");
    assert_string_equal(f->d.items[1].message, "core:spot_light rejects core:point_light");
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    keel_entity ok = spawn(f, "C", 0);
    add(f, ok, "core:transform");
    add(f, ok, "core:camera");
    assert_int_equal(keel_check_rules(f->w, ok, "", &f->d), KEEL_OK);
    assert_int_equal(f->d.count, 0);
}

static void slots_component_enable_and_body(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_comp c = add(f, e, "core:transform");
    assert_true(keel_comp_enabled(f->w, c));
    assert_int_equal(keel_comp_set_enabled(f->w, c, false, NULL, &f->d), KEEL_OK);
    assert_false(keel_comp_enabled(f->w, c));
    keel_node *body = keel_body_encode(f->w, c, false);
    assert_non_null(body);
    assert_non_null(keel_node_get(body, "position"));
    assert_non_null(keel_node_get(body, "scale"));
    keel_node_free(body);
    keel_comp gone = { e, K("core:camera"), 0 };
    assert_null(keel_body_encode(f->w, gone, false));
    assert_false(keel_comp_enabled(f->w, gone));
    keel_status st = keel_comp_set_enabled(f->w, gone, true, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "core:camera not found");
    /* a body given to keel_add is decoded; a bad one adds nothing */
    keel_node *b = keel_node_new_map();
    keel_node_put(b, "fov", keel_node_new_scalar("500", KEEL_STYLE_PLAIN));
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.body = b;
    st = keel_add(f->w, e, K("core:camera"), &o, NULL, NULL, &f->d);
    assert_int_equal(st, KEEL_INVALID_ARGUMENT);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel_member_count(f->w, e), 1);
    assert_int_equal(keel_storage_count(f->w, K("core:camera")), 0);
    keel_node_free(b);
}

/* A body goes through the kind's validate like keel_set would: a rejection refuses the add. */
static void slots_add_body_runs_validate(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "Lamp", 0);
    add(f, e, "core:transform");
    keel_kind_id ks = K("core:spot_light");
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "inner_angle", keel_node_new_scalar("60", KEEL_STYLE_PLAIN));
    keel_node *outer = keel_node_put(body, "outer_angle", keel_node_new_scalar("40", KEEL_STYLE_PLAIN));
    (void)outer;
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.body = body;
    o.path = "lamp";
    o.file = "lamp.yaml";
    uint64_t rev = keel_world_revision(f->w);
    size_t members = keel_member_count(f->w, e), rows = keel_storage_count(f->w, ks);
    keel_cmd inv = { 0 };
    keel_comp c = { 1, 1, 1 };
    keel_status st = keel_add(f->w, e, ks, &o, &c, &inv, &f->d);
    assert_int_equal(st, KEEL_INVALID_ARGUMENT);
    assert_int_equal(f->d.errors, 1);
    assert_string_equal(f->d.items[0].path, "lamp.inner_angle");
    assert_string_equal(f->d.items[0].file, "lamp.yaml");
    assert_non_null(strstr(f->d.items[0].message, "inner_angle must not exceed outer_angle"));
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    /* nothing changed */
    assert_int_equal(keel_world_revision(f->w), rev);
    assert_int_equal(keel_member_count(f->w, e), members);
    assert_int_equal(keel_storage_count(f->w, ks), rows);
    assert_false(keel_get_comp(f->w, e, ks, KEEL_SLOT_AUTO, NULL));
    assert_int_equal(inv.type, KEEL_CMD_NONE);
    /* a consistent body is accepted and stored */
    keel_node_free(body);
    body = keel_node_new_map();
    keel_node_put(body, "inner_angle", keel_node_new_scalar("20", KEEL_STYLE_PLAIN));
    keel_node_put(body, "outer_angle", keel_node_new_scalar("40", KEEL_STYLE_PLAIN));
    o.body = body;
    assert_int_equal(keel_add(f->w, e, ks, &o, &c, NULL, &f->d), KEEL_OK);
    keel_value v;
    assert_int_equal(keel_get(f->w, c, keel_kind_field(ks, "inner_angle"), &v, &f->d), KEEL_OK);
    assert_true(v.as.f == 20);
    keel_node_free(body);
}

/* Serials: every entry gets a new one (never reused), a component re-added in the same slot
 * too; keel_comp_serial gives 0 once it is gone. */
static void slots_serials_are_never_reused(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_comp t = add(f, e, "core:transform");
    keel_comp a = add(f, e, "core:audio_source");
    keel_comp b = add(f, e, "core:audio_source");
    uint64_t st = keel_comp_serial(f->w, t), sa = keel_comp_serial(f->w, a), sb = keel_comp_serial(f->w, b);
    assert_true(st != 0 && sa != 0 && sb != 0);
    assert_true(st != sa && sa != sb && st != sb);
    keel_member m;
    assert_true(keel_member_at(f->w, e, 2, &m));
    assert_int_equal(m.slot, 1);
    assert_true(m.serial == sb);
    /* a component put back in the same slot (as undo of its remove does): a new serial */
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    assert_true(keel_comp_serial(f->w, b) == 0);
    keel_status ast;
    keel_comp b2 = add_slot(f, e, "core:audio_source", 1, &ast);
    assert_int_equal(ast, KEEL_OK);
    assert_int_equal(b2.slot, 1);
    uint64_t sb2 = keel_comp_serial(f->w, b2);
    assert_true(sb2 != 0 && sb2 != sb && sb2 != sa && sb2 != st);
    /* unknown entries have serials too */
    keel_node *body = keel_node_new_map();
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, 0, body, &f->d), KEEL_OK);
    keel_node_free(body);
    assert_true(keel_member_at(f->w, e, 3, &m));
    assert_false(m.loaded);
    assert_true(m.serial != 0 && m.serial != sb2 && m.serial != sb);
}

/* max+1 stops short of KEEL_SLOT_AUTO: two components never share an address */
static void slots_auto_slot_never_wraps(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    keel_status st;
    keel_comp c = add_slot(f, e, "core:audio_source", UINT32_MAX - 1, &st);
    assert_int_equal(st, KEEL_OK);
    assert_int_equal(c.slot, UINT32_MAX - 1);
    add_slot(f, e, "core:audio_source", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "no slot left for core:audio_source");
    st = keel_add(f->w, e, K("core:audio_source"), NULL, NULL, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "no slot left for core:audio_source");
    assert_int_equal(keel_member_count(f->w, e), 2);
    /* an explicit free slot below still works, and KEEL_SLOT_AUTO given explicitly means auto */
    c = add_slot(f, e, "core:audio_source", 7, &st);
    assert_int_equal(st, KEEL_OK);
    assert_int_equal(c.slot, 7);
    keel_entity e2 = spawn(f, "B", 0);
    add(f, e2, "core:transform");
    c = add_slot(f, e2, "core:audio_source", KEEL_SLOT_AUTO, &st);
    assert_int_equal(st, KEEL_OK);
    assert_int_equal(c.slot, 0);
    /* unknown entries answer the same */
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, UINT32_MAX - 1, NULL, &f->d), KEEL_OK);
    st = keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "no slot left for mod:winch");
}

/* The slot rule (seed 000): a new slot is past every slot the entity held of that kind in this
 * session, so an address held by a tool (UUID, kind, slot) of a removed component is NotFound
 * and stays so; only putting a removed component back (undo) takes its slot again. */
static void slots_removed_highest_slot_is_not_handed_out_again(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    keel_comp top = add(f, e, "core:audio_source");
    assert_int_equal(top.slot, 2);
    keel_cmd undo = { 0 };
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 2, &undo, &f->d), KEEL_OK);
    /* the next add takes 3, not the freed 2 */
    keel_comp next = add(f, e, "core:audio_source");
    assert_int_equal(next.slot, 3);
    /* the channel's address of the removed one (UUID, kind, slot) finds nothing */
    keel_entity by_uuid = keel_find(f->w, keel_entity_uuid(f->w, e));
    keel_comp c;
    assert_false(keel_get_comp(f->w, by_uuid, K("core:audio_source"), 2, &c));
    keel_value v;
    keel_status st = keel_get(f->w, (keel_comp){ by_uuid, K("core:audio_source"), 2 }, 0, &v, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "slot 2 of core:audio_source not found");
    /* undo of the remove re-takes its own slot, free although below the mark */
    keel_cmd redo = { 0 };
    assert_int_equal(keel_cmd_apply(f->w, &undo, &redo, &f->d), KEEL_OK);
    assert_true(keel_get_comp(f->w, e, K("core:audio_source"), 2, &c));
    assert_true(keel_get_comp(f->w, e, K("core:audio_source"), 3, &c));
    assert_int_equal(keel_member_count(f->w, e), 5);
    keel_cmd_free(&undo);
    keel_cmd_free(&redo);
    assert_int_equal(add(f, e, "core:audio_source").slot, 4);
}

static void slots_undo_of_a_remove_gives_the_old_number_back(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    keel_cmd undo = { 0 }, redo = { 0 };
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, &undo, &f->d), KEEL_OK);
    assert_int_equal(keel_cmd_apply(f->w, &undo, &redo, &f->d), KEEL_OK);
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, K("core:audio_source"), 1, &c));
    keel_cmd_free(&undo);
    keel_cmd_free(&redo);
    assert_int_equal(add(f, e, "core:audio_source").slot, 2);
}

/* Removing every component of the kind keeps the mark: the next one is not slot 0 again. An
 * explicit free slot at or below the mark is still allowed, an occupied one refused. */
static void slots_mark_outlives_the_last_component(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    /* a removal below the highest slot marks nothing the highest does not already cover */
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 0, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 2, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_member_count(f->w, e), 1);
    assert_int_equal(add(f, e, "core:audio_source").slot, 3);
    keel_status st;
    assert_int_equal(add_slot(f, e, "core:audio_source", 1, &st).slot, 1);
    assert_int_equal(st, KEEL_OK);
    add_slot(f, e, "core:audio_source", 3, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "slot 3 of core:audio_source is occupied");
    assert_int_equal(add(f, e, "core:audio_source").slot, 4);
    /* marks are per kind: another many kind on the same entity starts at 0 */
    keel_kind_desc kd = { 0 };
    kd.key = "test:other_many";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    assert_int_equal(add(f, e, "test:other_many").slot, 0);
    /* and per entity */
    keel_entity b = spawn(f, "B", 0);
    add(f, b, "core:transform");
    assert_int_equal(add(f, b, "core:audio_source").slot, 0);
}

/* The mark at the last slot number: no automatic slot is left; explicit free ones still are. */
static void slots_mark_at_the_slot_limit(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    keel_status st;
    add_slot(f, e, "core:audio_source", UINT32_MAX - 1, &st);
    assert_int_equal(st, KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", UINT32_MAX - 1, NULL, &f->d), KEEL_OK);
    add_slot(f, e, "core:audio_source", KEEL_SLOT_AUTO, &st);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "no slot left for core:audio_source");
    assert_int_equal(add_slot(f, e, "core:audio_source", 0, &st).slot, 0);
    assert_int_equal(st, KEEL_OK);
}

/* A destroyed entity's marks go with it: an entity that gets its index starts from slot 0. */
static void slots_marks_go_with_a_destroyed_entity(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_destroy(f->w, e, NULL, &f->d), KEEL_OK);
    keel_entity b = spawn(f, "B", 0);
    assert_int_equal((uint32_t)b, (uint32_t)e); /* the same index, a new generation */
    add(f, b, "core:transform");
    assert_int_equal(add(f, b, "core:audio_source").slot, 0);
    assert_int_equal(add(f, b, "core:audio_source").slot, 1);
}

/* Unknown components (an undeclared key) follow the same rule. */
static void slots_unknown_key_has_a_mark_too(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "mod:winch", 1, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    keel_member m;
    assert_true(keel_member_at(f->w, e, 1, &m));
    assert_int_equal(m.slot, 2);
}

/* Play mode's stop brings the marks back as they were at play; keel_transfer carries them. */
static void slots_marks_across_play_and_transfer(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_uuid id = keel_entity_uuid(f->w, e);
    add(f, e, "core:transform");
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
    assert_int_equal(add(f, e, "core:audio_source").slot, 2);
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    e = keel_find(f->w, id);
    keel_world *dst = keel_world_new("Other");
    keel_entity moved = KEEL_NO_ENTITY;
    assert_int_equal(keel_transfer(f->w, e, dst, KEEL_NO_ENTITY, &moved, &f->d), KEEL_OK);
    keel_comp c = { 0, 0, 0 };
    assert_int_equal(keel_add(dst, moved, K("core:audio_source"), NULL, &c, NULL, &f->d), KEEL_OK);
    assert_int_equal(c.slot, 2);
    keel_world_free(dst);
}

/* keel_add_unknown holds only what a file could: a well-formed key, a MAP body, a version >= 1,
 * and a kind this process cannot read (undeclared, or newer than declared) */
static void slots_unknown_add_checks_its_arguments(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    add(f, e, "core:transform");
    keel_status st = keel_add_unknown(f->w, e, "Bad Key: x", 1, KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "malformed kind key 'Bad Key: x' (ns:name, [a-z0-9_]+)");
    keel_node *seq = keel_node_new_seq();
    st = keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, seq, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "mod:winch: a component body must be a map");
    keel_node_free(seq);
    keel_node *scalar = keel_node_new_scalar("3", KEEL_STYLE_PLAIN);
    st = keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, scalar, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "mod:winch: a component body must be a map");
    keel_node_free(scalar);
    st = keel_add_unknown(f->w, e, "mod:winch", 0, KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "mod:winch: version must be >= 1, not 0");
    st = keel_add_unknown(f->w, e, "mod:winch", -3, KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "mod:winch: version must be >= 1, not -3");
    st = keel_add_unknown(f->w, e, "core:camera", 1, KEEL_SLOT_AUTO, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "core:camera is declared: add it with keel_add");
    assert_int_equal(keel_member_count(f->w, e), 1);
    /* NULL is an empty body; a version newer than the kind's stays unknown */
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "core:camera", 2, KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    keel_member m;
    assert_true(keel_member_at(f->w, e, 2, &m));
    assert_false(m.loaded);
    assert_int_equal(m.version, 2);
    assert_int_equal(m.preserved->kind, KEEL_NODE_MAP);
    assert_int_equal(m.preserved->count, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(slots_one_kind_takes_slot_zero),
        T(slots_one_kind_refuses_other_slot),
        T(slots_many_take_max_plus_one_without_renumbering),
        T(slots_removed_slot_is_not_found),
        T(slots_explicit_free_slot_and_occupied),
        T(slots_many_with_max),
        T(slots_requires_missing),
        T(slots_rejects_both_directions),
        T(slots_rejects_follow_redeclarations),
        T(slots_removing_required_is_refused),
        T(slots_required_many_kind_with_another_slot_left),
        T(slots_many_remove_needs_slot),
        T(slots_world_settings_only_on_root),
        T(slots_root_refuses_transform_but_holds_gameplay),
        T(slots_components_limit),
        T(slots_unknown_entries),
        T(slots_unknown_of_a_registered_key_refuses_edits),
        T(slots_set_checks_readonly_and_range),
        T(slots_validate_rejects_and_restores),
        T(slots_declaring_a_kind_adopts_unknown_entries),
        T(slots_redeclaring_carries_fields_by_name),
        T(slots_readonly_is_writable_by_its_own_hooks),
        T(slots_check_rules_reports_every_problem),
        T(slots_component_enable_and_body),
        T(slots_add_body_runs_validate),
        T(slots_serials_are_never_reused),
        T(slots_auto_slot_never_wraps),
        T(slots_unknown_add_checks_its_arguments),
        T(slots_removed_highest_slot_is_not_handed_out_again),
        T(slots_undo_of_a_remove_gives_the_old_number_back),
        T(slots_mark_outlives_the_last_component),
        T(slots_mark_at_the_slot_limit),
        T(slots_marks_go_with_a_destroyed_entity),
        T(slots_unknown_key_has_a_mark_too),
        T(slots_marks_across_play_and_transfer),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
