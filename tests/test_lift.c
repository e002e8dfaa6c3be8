/* test_lift.c — keel_lift_entity / keel_lift_restore / keel_lift_discard: out of play and back. */
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

static const keel_field_desc note_fields[] = { { .key = "text", .type = KEEL_T_STRING } };

static int lift_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:note";
    kd.version = 1;
    kd.fields = note_fields;
    kd.field_count = 1;
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

static keel_comp note(fx *f, keel_entity e, const char *text)
{
    keel_comp c = add(f, e, "test:note");
    keel_value v = { .type = KEEL_T_STRING, .as.s = text };
    assert_int_equal(keel_set(f->w, c, 0, &v, NULL, &f->d), KEEL_OK);
    return c;
}

/* A world freed with a lift open frees what the lift holds (strings, unknown bodies): ASan
 * would report a leak or a double free. */
static void lift_open_at_free_is_discarded(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    note(f, a, "held by the lift");
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "x", keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(f->w, a, "mod:gone", 1, KEEL_SLOT_AUTO, body, &f->d), KEEL_OK);
    keel_node_free(body);
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, a, &l, &f->d), KEEL_OK);
    assert_int_equal(keel_world_lift_count(f->w), 1);
    assert_int_equal(keel_storage_count(f->w, K("test:note")), 0);
}

static void lift_restore_keeps_records_and_refuses_a_uuid_that_came_alive(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    keel_comp c = note(f, a, "kept");
    keel_uuid u = keel_entity_uuid(f->w, a);
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, a, &l, &f->d), KEEL_OK);
    assert_false(keel_alive(f->w, a));
    keel_entity twin = 0;
    assert_int_equal(keel_spawn(f->w, "Twin", KEEL_NO_ENTITY, &u, &twin, NULL, &f->d), KEEL_OK);
    assert_diag(keel_lift_restore(l, &f->d), &f->d, KEEL_INVALID_OPERATION, "came alive while lifted");
    assert_int_equal(keel_world_lift_count(f->w), 1); /* still open */
    assert_int_equal(keel_destroy(f->w, twin, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_lift_restore(l, &f->d), KEEL_OK);
    assert_true(keel_alive(f->w, a));
    keel_value v;
    assert_int_equal(keel_get(f->w, c, 0, &v, &f->d), KEEL_OK); /* the same component handle */
    assert_string_equal(v.as.s, "kept");
    assert_int_equal(keel_world_lift_count(f->w), 0);
}

static void lift_holds_its_kinds_layout(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    note(f, a, "x");
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, a, &l, &f->d), KEEL_OK);
    static const keel_field_desc more[] = { { .key = "n", .type = KEEL_T_INT }, { .key = "text", .type = KEEL_T_STRING } };
    keel_kind_desc kd = { 0 };
    kd.key = "test:note";
    kd.version = 1;
    kd.fields = more;
    kd.field_count = 2;
    assert_diag(keel_kind_declare(&kd, NULL, &f->d), &f->d, KEEL_INVALID_OPERATION, "lifted");
    assert_int_equal(keel_lift_discard(l, &f->d), KEEL_OK);
    assert_false(keel_alive(f->w, a));
}

static int lift_ticks;
static keel_status lift_tick(const keel_timer_call *call)
{
    (void)call;
    lift_ticks++;
    return KEEL_OK;
}

/* While lifted, an entity's index is its own (spawns never take it) and its handle fails; a
 * timer it owns waits. After restore the same handles work; after discard they are stale, even
 * once the index is reused. */
static void lift_keeps_handles_and_indices(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), kid = spawn(f, "Kid", a), gone = spawn(f, "Gone", 0);
    keel_comp c = note(f, kid, "kid's");
    assert_int_equal(keel_destroy(f->w, gone, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_timer_every(f->w, 0.1, a, lift_tick, NULL, NULL, &f->d), KEEL_OK);
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, a, &l, &f->d), KEEL_OK);
    assert_false(keel_alive(f->w, a));
    assert_false(keel_alive(f->w, kid));
    keel_entity more[8];
    for (int i = 0; i < 8; i++) {
        more[i] = spawn(f, "More", 0);
        assert_true((uint32_t)more[i] != (uint32_t)a && (uint32_t)more[i] != (uint32_t)kid);
    }
    assert_int_equal((uint32_t)more[0], (uint32_t)gone); /* a dead index is reused, a lifted one is not */
    lift_ticks = 0;
    assert_int_equal(keel_step(f->w, 0.25, &f->d), KEEL_OK);
    assert_int_equal(lift_ticks, 0);
    assert_int_equal(keel_timer_count(f->w), 1); /* waiting for the restore */
    assert_int_equal(keel_lift_restore(l, &f->d), KEEL_OK);
    assert_true(keel_alive(f->w, a));
    assert_true(keel_alive(f->w, kid));
    assert_int_equal(keel_entity_parent(f->w, kid), a);
    keel_value v;
    assert_int_equal(keel_get(f->w, c, 0, &v, &f->d), KEEL_OK);
    assert_string_equal(v.as.s, "kid's");
    assert_int_equal(keel_step(f->w, 0.25, &f->d), KEEL_OK);
    assert_true(lift_ticks > 0);
    assert_int_equal(keel_lift_entity(f->w, a, &l, &f->d), KEEL_OK);
    assert_int_equal(keel_lift_discard(l, &f->d), KEEL_OK);
    assert_false(keel_alive(f->w, a));
    assert_false(keel_alive(f->w, kid));
    assert_int_equal(keel_step(f->w, 0.25, &f->d), KEEL_OK);
    assert_int_equal(keel_timer_count(f->w), 0); /* its owner is gone now */
    keel_entity x = spawn(f, "X", 0), y = spawn(f, "Y", 0);
    assert_true((uint32_t)x == (uint32_t)kid || (uint32_t)y == (uint32_t)kid);
    assert_false(keel_alive(f->w, a));
    assert_false(keel_alive(f->w, kid));
    assert_false(keel_comp_alive(f->w, c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(lift_open_at_free_is_discarded),
        T(lift_restore_keeps_records_and_refuses_a_uuid_that_came_alive),
        T(lift_holds_its_kinds_layout),
        T(lift_keeps_handles_and_indices),
    };
    return KEEL_TEST_RUN(tests, lift_group_setup, group_teardown);
}
