/* test_transfer.c — keel_transfer: a subtree moved between worlds as one, or not at all. */
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

/* test:bag holds a string (the record owns memory: a move must neither leak nor free it twice)
 * and counts its hooks here. */
static char log_text[512];
static keel_world *seen_from;

static keel_status bag_hook(const keel_call *c)
{
    char *end = log_text + strlen(log_text);
    snprintf(end, sizeof log_text - (size_t)(end - log_text), "%s:%s;", keel_phase_name(c->phase),
             keel_entity_name(c->world, c->comp.entity));
    if (c->phase == KEEL_PHASE_ON_TRANSFER) seen_from = c->from;
    return KEEL_OK;
}

static const keel_field_desc bag_fields[] = { { .key = "label", .type = KEEL_T_STRING },
                                              { .key = "n", .type = KEEL_T_INT } };

static int transfer_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:bag";
    kd.version = 1;
    kd.fields = bag_fields;
    kd.field_count = 2;
    kd.hooks[KEEL_PHASE_AWAKE] = bag_hook;
    kd.hooks[KEEL_PHASE_ON_DESTROY] = bag_hook;
    kd.hooks[KEEL_PHASE_ON_TRANSFER] = bag_hook;
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

static keel_comp bag(fx *f, keel_entity e, const char *label, int64_t n)
{
    keel_comp c = add(f, e, "test:bag");
    keel_value v = { .type = KEEL_T_STRING, .as.s = label };
    assert_int_equal(keel_set(f->w, c, 0, &v, NULL, &f->d), KEEL_OK);
    v = (keel_value){ .type = KEEL_T_INT, .as.i = n };
    assert_int_equal(keel_set(f->w, c, 1, &v, NULL, &f->d), KEEL_OK);
    return c;
}

static void transfer_moves_records_and_runs_only_on_transfer(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a);
    keel_comp cb = bag(f, b, "inside b", 7);
    bag(f, a, "inside a", 1);
    uint64_t version = keel_comp_counter(f->w, cb);
    keel_uuid ub = keel_entity_uuid(f->w, b);
    keel_world *dst = keel_world_new("Dst");
    log_text[0] = 0;
    keel_entity moved = 0;
    assert_int_equal(keel_transfer(f->w, a, dst, KEEL_NO_ENTITY, &moved, &f->d), KEEL_OK);
    assert_string_equal(log_text, "on_transfer:A;on_transfer:B;"); /* no awake, no on_destroy */
    assert_ptr_equal(seen_from, f->w);
    assert_false(keel_alive(f->w, a));
    assert_false(keel_alive(f->w, b));
    assert_int_equal(keel_world_entity_count(f->w), 0);
    assert_int_equal(keel_world_entity_count(dst), 2);
    keel_entity nb = keel_find(dst, ub);
    assert_int_equal(keel_entity_parent(dst, nb), moved);
    keel_comp c;
    assert_true(keel_get_comp(dst, nb, keel_kind_find("test:bag"), KEEL_SLOT_AUTO, &c));
    keel_value v;
    assert_int_equal(keel_get(dst, c, 0, &v, &f->d), KEEL_OK);
    assert_string_equal(v.as.s, "inside b");
    assert_int_equal(keel_get(dst, c, 1, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 7);
    assert_int_equal(keel_comp_counter(dst, c), version);
    keel_world_free(dst); /* frees the moved strings once: ASan would see a double free or a leak */
}

static void transfer_refusal_changes_nothing(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a);
    bag(f, b, "kept", 2);
    keel_world *dst = keel_world_new("Dst");
    keel_uuid ub = keel_entity_uuid(f->w, b);
    keel_entity clash = 0;
    assert_int_equal(keel_spawn(dst, "Clash", KEEL_NO_ENTITY, &ub, &clash, NULL, &f->d), KEEL_OK);
    uint64_t rev_src = keel_world_revision(f->w), rev_dst = keel_world_revision(dst);
    keel_entity moved = 1;
    char u[37];
    keel_uuid_format(ub, u);
    assert_diag(keel_transfer(f->w, a, dst, KEEL_NO_ENTITY, &moved, &f->d), &f->d, KEEL_INVALID_OPERATION, u);
    assert_int_equal(moved, KEEL_NO_ENTITY);
    assert_int_equal(keel_world_revision(f->w), rev_src);
    assert_int_equal(keel_world_revision(dst), rev_dst);
    assert_true(keel_alive(f->w, a));
    assert_true(keel_alive(f->w, b));
    assert_int_equal(keel_world_entity_count(dst), 1);
    assert_diag(keel_transfer(f->w, a, f->w, KEEL_NO_ENTITY, NULL, &f->d), &f->d, KEEL_INVALID_ARGUMENT,
                "two worlds");
    assert_diag(keel_transfer(f->w, keel_world_root(f->w), dst, KEEL_NO_ENTITY, NULL, &f->d), &f->d,
                KEEL_PROTECTED_ENTITY, "root");
    keel_entity gone = 0;
    assert_int_equal(keel_spawn(dst, "Gone", KEEL_NO_ENTITY, NULL, &gone, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_destroy(dst, gone, NULL, &f->d), KEEL_OK);
    assert_diag(keel_transfer(f->w, a, dst, gone, NULL, &f->d), &f->d, KEEL_NOT_FOUND, "");
    /* a handle of another world never names an entity here, whatever its index */
    assert_false(keel_alive(dst, a));
    assert_diag(keel_transfer(f->w, a, dst, a, NULL, &f->d), &f->d, KEEL_NOT_FOUND, "");
    assert_diag(keel_transfer(dst, a, f->w, KEEL_NO_ENTITY, NULL, &f->d), &f->d, KEEL_NOT_FOUND, "");
    assert_true(keel_alive(f->w, a));
    keel_world_free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(transfer_moves_records_and_runs_only_on_transfer),
        T(transfer_refusal_changes_nothing),
    };
    return KEEL_TEST_RUN(tests, transfer_group_setup, group_teardown);
}
