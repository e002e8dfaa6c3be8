/* test_state_hash.c — the recording's state hash kept incrementally (game/state_hash.c) gives the
 * full pass's value after every kind of change: field writes through keel_set and through a C
 * hook's record pointer, spawn, destroy (a parent with children), add, remove, unknown
 * components, reparent, rename, enable, a failed hook rolled back and faulted, a cleared fault,
 * random draws and seeds, lift and restore, play and stop, and one hasher moved between worlds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"
#include "bind.h"
#include "game/record.h"

static keel_kind_id g_raw, g_text;
static int g_mode; /* what raw's update does: 0 nothing, 1 writes its record directly, 2 fails */

enum { MODE_IDLE, MODE_RAW, MODE_FAIL };

/* MODE_RAW: x += 1 through the record pointer (no write path, no counter); MODE_FAIL: a write, a
 * rename and a spawn, then a failure: all rolled back, the component faulted. */
static keel_status raw_update(const keel_call *c)
{
    if (g_mode == MODE_RAW) {
        double x;
        unsigned char *rec = c->record;
        memcpy(&x, rec + keel_kind_field_offset(g_raw, 0), sizeof x);
        x += 1;
        memcpy(rec + keel_kind_field_offset(g_raw, 0), &x, sizeof x);
    } else if (g_mode == MODE_FAIL) {
        keel_value v = { .type = KEEL_T_FLOAT, .as.f = 1234 };
        keel_set(c->world, c->comp, 0, &v, NULL, c->diags);
        keel_rename(c->world, c->comp.entity, "renamed in a failing hook", NULL, c->diags);
        keel_spawn(c->world, "spawned in a failing hook", c->comp.entity, NULL, NULL, NULL, c->diags);
        return keel_diag_add(c->diags, KEEL_SEV_ERROR, KEEL_INVALID_OPERATION, "", NULL, 0, 0, "raw fails");
    }
    return KEEL_OK;
}

static int setup(void **state)
{
    (void)state;
    if (keel_init() != KEEL_OK) return -1;
    static const keel_field_desc rf[] = { { .key = "x", .type = KEEL_T_FLOAT },
                                          { .key = "n", .type = KEEL_T_INT } };
    keel_kind_desc rk = { .key = "sh:raw", .version = 1, .multiplicity = KEEL_ONE, .fields = rf, .field_count = 2 };
    rk.hooks[KEEL_PHASE_UPDATE] = raw_update;
    static const keel_field_desc tf[] = { { .key = "label", .type = KEEL_T_STRING },
                                          { .key = "y", .type = KEEL_T_FLOAT } };
    keel_kind_desc tk = { .key = "sh:text", .version = 1, .multiplicity = KEEL_MANY, .fields = tf, .field_count = 2 };
    if (keel_kind_declare(&rk, &g_raw, NULL) || keel_kind_declare(&tk, &g_text, NULL)) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    keel_shutdown();
    return 0;
}

/* The incremental answer, which must be the full pass's. */
static uint64_t check(keel__hasher *h, keel_world *w)
{
    uint64_t got = keel__hasher_hash(h, w), full = keel__world_hash(w);
    assert_true(got == full);
    return got;
}

static keel_entity spawn(keel_world *w, const char *name, keel_entity parent)
{
    keel_entity e = KEEL_NO_ENTITY;
    assert_int_equal(keel_spawn(w, name, parent, NULL, &e, NULL, NULL), KEEL_OK);
    return e;
}

static void step(keel_world *w, int mode)
{
    g_mode = mode;
    keel_diags d;
    keel_diags_init(&d);
    keel_step(w, 1.0 / 60, &d);
    keel_diags_free(&d);
    g_mode = MODE_IDLE;
}

static void state_hash_follows_every_edit(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Hash");
    keel__hasher h = { 0 };
    uint64_t empty = check(&h, w);
    keel_entity a = spawn(w, "A", KEEL_NO_ENTITY), b = spawn(w, "B", a);
    uint64_t two = check(&h, w);
    assert_true(two != empty);
    keel_comp ra, tb;
    assert_int_equal(keel_add(w, a, g_raw, NULL, &ra, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, b, g_text, NULL, &tb, NULL, NULL), KEEL_OK);
    uint64_t added = check(&h, w);
    assert_true(added != two);

    /* field writes: the write path, then a string field */
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 3.5 };
    assert_int_equal(keel_set(w, ra, 0, &v, NULL, NULL), KEEL_OK);
    uint64_t set = check(&h, w);
    assert_true(set != added);
    keel_value s = { .type = KEEL_T_STRING, .as.s = "hello" };
    assert_int_equal(keel_set(w, tb, 0, &s, NULL, NULL), KEEL_OK);
    uint64_t text = check(&h, w);
    assert_true(text != set);
    s.as.s = NULL;
    assert_int_equal(keel_set(w, tb, 0, &s, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == set); /* the same state, the same hash */
    assert_int_equal(keel_set(w, tb, 0, &(keel_value){ .type = KEEL_T_STRING, .as.s = "hello" }, NULL, NULL),
                     KEEL_OK);
    assert_true(check(&h, w) == text);

    /* a C hook writes its record through the pointer: no counter moves */
    step(w, MODE_RAW);
    uint64_t raw = check(&h, w);
    assert_true(raw != text);
    double x;
    memcpy(&x, (unsigned char *)keel_record(w, ra) + keel_kind_field_offset(g_raw, 0), sizeof x);
    assert_true(x == 4.5);

    /* rename, and back */
    assert_int_equal(keel_rename(w, b, "Bee", NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) != raw);
    assert_int_equal(keel_rename(w, b, "B", NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == raw);

    /* reparent, and back */
    assert_int_equal(keel_reparent(w, b, KEEL_NO_ENTITY, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) != raw);
    assert_int_equal(keel_reparent(w, b, a, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == raw);

    /* enable: an entity, a component */
    assert_int_equal(keel_set_enabled(w, b, false, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) != raw);
    assert_int_equal(keel_set_enabled(w, b, true, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == raw);
    assert_int_equal(keel_comp_set_enabled(w, tb, false, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) != raw);
    assert_int_equal(keel_comp_set_enabled(w, tb, true, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == raw);

    /* add in another slot, an unknown component, remove both */
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = 3;
    assert_int_equal(keel_add(w, b, g_text, &o, NULL, NULL, NULL), KEEL_OK);
    uint64_t slot3 = check(&h, w);
    assert_true(slot3 != raw);
    assert_int_equal(keel_add_unknown(w, a, "sh:gone", 2, 0, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) != slot3);
    assert_int_equal(keel_remove(w, a, "sh:gone", 0, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == slot3);
    assert_int_equal(keel_remove(w, b, "sh:text", 3, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) == raw);

    /* random: a draw, a seed */
    int64_t r;
    assert_int_equal(keel_random_int(w, 1, 6, &r, NULL), KEEL_OK);
    uint64_t drawn = check(&h, w);
    assert_true(drawn != raw);
    keel_world_set_seed(w, 77);
    assert_true(check(&h, w) != drawn);

    /* a remove then a destroy of another entity with rows after it: rows move */
    keel_entity c = spawn(w, "C", KEEL_NO_ENTITY);
    assert_int_equal(keel_add(w, c, g_raw, NULL, NULL, NULL, NULL), KEEL_OK);
    uint64_t with_c = check(&h, w);
    assert_int_equal(keel_remove(w, a, "sh:raw", 0, NULL, NULL), KEEL_OK);
    check(&h, w);
    assert_int_equal(keel_destroy(w, c, NULL, NULL), KEEL_OK);
    uint64_t gone = check(&h, w);
    assert_true(gone != with_c);
    keel__hasher_free(&h);
    keel_world_free(w);
}

static void state_hash_failed_hook_and_fault(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Fault");
    keel__hasher h = { 0 };
    keel_entity a = spawn(w, "A", KEEL_NO_ENTITY);
    keel_comp ra;
    assert_int_equal(keel_add(w, a, g_raw, NULL, &ra, NULL, NULL), KEEL_OK);
    step(w, MODE_IDLE);
    uint64_t before = check(&h, w);
    step(w, MODE_FAIL); /* the write, rename and spawn are rolled back; the component is faulted */
    assert_true(keel_comp_faulted(w, ra));
    assert_string_equal(keel_entity_name(w, a), "A");
    assert_int_equal(keel_world_entity_count(w), 1);
    uint64_t faulted = check(&h, w);
    assert_true(faulted != before);
    assert_int_equal(keel_comp_clear_fault(w, ra, NULL), KEEL_OK);
    assert_true(check(&h, w) == before);
    keel__hasher_free(&h);
    keel_world_free(w);
}

static void state_hash_destroyed_parent_lift_and_play(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Tree");
    keel__hasher h = { 0 };
    keel_entity p = spawn(w, "P", KEEL_NO_ENTITY), c1 = spawn(w, "C1", p), c2 = spawn(w, "C2", p);
    assert_int_equal(keel_add(w, c1, g_raw, NULL, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, c2, g_raw, NULL, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, p, g_raw, NULL, NULL, NULL, NULL), KEEL_OK);
    uint64_t tree = check(&h, w);

    /* lift and restore: out of the hash while lifted, the same hash back */
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(w, c1, &l, NULL), KEEL_OK);
    assert_true(check(&h, w) != tree);
    assert_int_equal(keel_lift_restore(l, NULL), KEEL_OK);
    assert_true(check(&h, w) == tree);

    /* play: edits, a step, a destroy; stop puts it all back */
    assert_int_equal(keel_world_play(w, NULL), KEEL_OK);
    step(w, MODE_RAW);
    assert_int_equal(keel_rename(w, c2, "played", NULL, NULL), KEEL_OK);
    assert_int_equal(keel_destroy(w, c1, NULL, NULL), KEEL_OK);
    assert_true(check(&h, w) != tree);
    assert_int_equal(keel_world_stop(w, NULL), KEEL_OK);
    assert_true(check(&h, w) == tree);

    /* a parent destroyed: its children go to the top level (their parent counts) */
    p = keel_find_name(w, "P");
    assert_int_equal(keel_destroy(w, p, NULL, NULL), KEEL_OK);
    uint64_t orphans = check(&h, w);
    assert_true(orphans != tree);
    assert_int_equal(keel_world_entity_count(w), 2);
    step(w, MODE_RAW); /* rows freed at the phase boundary moved */
    assert_true(check(&h, w) != orphans);

    /* one hasher, another world, and back */
    keel_world *w2 = keel_world_new("Other");
    spawn(w2, "X", KEEL_NO_ENTITY);
    check(&h, w2);
    check(&h, w);
    keel_world_free(w2);
    keel__hasher_free(&h);
    keel_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(state_hash_follows_every_edit),
        cmocka_unit_test(state_hash_failed_hook_and_fault),
        cmocka_unit_test(state_hash_destroyed_parent_lift_and_play),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
