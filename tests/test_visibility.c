/* test_visibility.c — the counters a binding keeps query verdicts and record pointers under
 * (bind.h keel__world_structure, keel__world_visibility): every change of membership or of an
 * enabled flag moves them, and nothing takes them back to a value seen before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "keel.h"
#include "bind.h"

#include "world_fixture.h"

static const keel_field_desc x_fields[] = { { .key = "x", .type = KEEL_T_FLOAT } };

static int vis_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:vis";
    kd.version = 1;
    kd.fields = x_fields;
    kd.field_count = 1;
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

/* Asserts the visibility counter moved since *last, and remembers its value. */
static void moved(fx *f, uint64_t *last)
{
    uint64_t now = keel__world_visibility(f->w);
    assert_true(now > *last);
    *last = now;
}

static void visibility_moves_on_every_enabled_flag_change(void **state)
{
    fx *f = *state;
    keel_entity p = spawn(f, "P", 0), e = spawn(f, "E", p);
    keel_comp c = add(f, e, "test:vis");
    uint64_t v = keel__world_visibility(f->w), s = keel__world_structure(f->w);
    assert_int_equal(keel_comp_set_enabled(f->w, c, false, NULL, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_comp_set_enabled(f->w, c, true, NULL, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_set_enabled(f->w, p, false, NULL, &f->d), KEEL_OK);
    moved(f, &v);
    keel_cmd undo;
    memset(&undo, 0, sizeof undo);
    assert_int_equal(keel_set_enabled(f->w, e, false, &undo, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_cmd_apply(f->w, &undo, NULL, &f->d), KEEL_OK); /* an undo sets it back */
    moved(f, &v);
    keel_cmd_free(&undo);
    assert_true(keel_entity_enabled(f->w, e));
    assert_int_equal(keel__world_structure(f->w), s); /* flags alone are not structure */
    /* a field write is neither */
    keel_value x = { .type = KEEL_T_FLOAT, .as.f = 2 };
    assert_int_equal(keel_set(f->w, c, 0, &x, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel__world_visibility(f->w), v);
}

static void visibility_moves_on_membership_and_destroy(void **state)
{
    fx *f = *state;
    keel_entity p = spawn(f, "P", 0), e = spawn(f, "E", 0);
    uint64_t v = keel__world_visibility(f->w);
    keel_comp c = add(f, e, "test:vis");
    moved(f, &v);
    assert_int_equal(keel_comp_set_enabled(f->w, c, false, NULL, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_reparent(f->w, e, p, NULL, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_remove(f->w, e, "test:vis", KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    moved(f, &v);
    add(f, e, "test:vis");
    moved(f, &v);
    keel_cmd undo;
    memset(&undo, 0, sizeof undo);
    assert_int_equal(keel_destroy(f->w, e, &undo, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_cmd_apply(f->w, &undo, NULL, &f->d), KEEL_OK); /* back, as it was */
    moved(f, &v);
    keel_cmd_free(&undo);
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, p, &l, &f->d), KEEL_OK);
    moved(f, &v);
    assert_int_equal(keel_lift_restore(l, &f->d), KEEL_OK);
    moved(f, &v);
}

/* play's stop puts the world back as it was at play: its counters must still go on from the
 * largest value seen while playing (a record found live then is gone now). */
static void stop_never_takes_the_counters_back(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "E", 0);
    keel_comp c = add(f, e, "test:vis");
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
    spawn(f, "X", 0);
    spawn(f, "Y", 0);
    assert_int_equal(keel_comp_set_enabled(f->w, c, false, NULL, &f->d), KEEL_OK);
    uint64_t s = keel__world_structure(f->w), v = keel__world_visibility(f->w);
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    assert_true(keel__world_structure(f->w) > s);
    assert_true(keel__world_visibility(f->w) > v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(visibility_moves_on_every_enabled_flag_change),
        T(visibility_moves_on_membership_and_destroy),
        T(stop_never_takes_the_counters_back),
    };
    return KEEL_TEST_RUN(tests, vis_group_setup, group_teardown);
}
