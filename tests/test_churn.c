/* test_churn.c — handle churn: stale handles keep failing across 100,000 spawn/destroy cycles and index reuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "world_internal.h"

/* Asserts the status and that the first diagnostic names the code and carries `text`. */
#define assert_diag(st, d, want, text)                                              \
    do {                                                                            \
        assert_int_equal((st), (want));                                             \
        assert_true((d)->count > 0);                                                \
        assert_int_equal((d)->items[0].code, (want));                               \
        if (!strstr((d)->items[0].message, (text)))                                 \
            fail_msg("diagnostic \"%s\" lacks \"%s\"", (d)->items[0].message, (text)); \
        keel_diags_free(d);                                                         \
        keel_diags_init(d);                                                         \
    } while (0)

typedef struct fx {
    keel_world *w;
    keel_diags d;
} fx;

static int fx_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->w = keel_world_new("Test");
    keel_diags_init(&f->d);
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fx *f = *state;
    keel_world_free(f->w);
    keel_diags_free(&f->d);
    free(f);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    return keel_init() == KEEL_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    keel_shutdown();
    return 0;
}

static __attribute__((unused)) keel_kind_id K(const char *key)
{
    keel_kind_id k = keel_kind_find(key);
    if (!k) fail_msg("kind %s not registered", key);
    return k;
}

static __attribute__((unused)) keel_entity spawn(fx *f, const char *name, keel_entity parent)
{
    keel_entity e = 0;
    assert_int_equal(keel_spawn(f->w, name, parent, NULL, &e, NULL, &f->d), KEEL_OK);
    return e;
}

static __attribute__((unused)) keel_comp add(fx *f, keel_entity e, const char *key)
{
    keel_comp c = { 0, 0, 0 };
    keel_status st = keel_add(f->w, e, K(key), NULL, &c, NULL, &f->d);
    if (st) fail_msg("adding %s: %s", key, f->d.count ? f->d.items[0].message : "?");
    return c;
}

static __attribute__((unused)) keel_comp add_slot(fx *f, keel_entity e, const char *key, uint32_t slot, keel_status *st)
{
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = slot;
    keel_comp c = { 0, 0, 0 };
    *st = keel_add(f->w, e, K(key), &o, &c, NULL, &f->d);
    return c;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

static void check_stale(fx *f, keel_entity e)
{
    assert_false(keel_alive(f->w, e));
    assert_null(keel_entity_name(f->w, e));
    keel_status st = keel_add(f->w, e, K("core:transform"), NULL, NULL, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "entity not found");
    st = keel_destroy(f->w, e, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "entity not found");
    assert_false(keel_comp_alive(f->w, (keel_comp){ e, K("core:transform"), 0 }));
}

static void churn_stale_handles_fail_after_reuse(void **state)
{
    fx *f = *state;
    enum { N = 100000, KEEP = 8 };
    keel_entity stale[KEEP];
    size_t kept = 0;
    keel_entity anchor = spawn(f, "Anchor", 0);
    for (int i = 0; i < N; i++) {
        keel_entity e = spawn(f, "E", 0);
        if (i % 3 == 0) add(f, e, "core:transform");
        assert_int_equal(keel_destroy(f->w, e, NULL, &f->d), KEEL_OK);
        if (i % (N / KEEP) == 0 && kept < KEEP) stale[kept++] = e;
    }
    assert_int_equal(kept, KEEP);
    /* the same index came back many times; every old handle still fails */
    keel_entity fresh = spawn(f, "Fresh", 0);
    for (size_t i = 0; i < KEEP; i++) {
        assert_true(stale[i] != fresh);
        assert_int_equal((uint32_t)stale[i], (uint32_t)fresh);
        check_stale(f, stale[i]);
    }
    assert_true(keel_alive(f->w, anchor));
    assert_true(keel_alive(f->w, fresh));
    assert_int_equal(keel_world_entity_count(f->w), 2);
    assert_int_equal(keel_storage_count(f->w, K("core:transform")), 0);
}

static void churn_index_retired_before_generation_wraps(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "E", 0);
    uint32_t i = (uint32_t)e;
    f->w->ents[i].gen = UINT32_MAX - 1; /* pretend it was reused ~4 billion times */
    keel_entity h = keel__handle(f->w, i);
    assert_true(keel_alive(f->w, h));
    assert_int_equal(keel_destroy(f->w, h, NULL, &f->d), KEEL_OK);
    keel_entity h2 = spawn(f, "E2", 0);
    assert_int_equal((uint32_t)h2, i);
    assert_int_equal((uint32_t)(h2 >> 32), UINT32_MAX);
    assert_int_equal(keel_destroy(f->w, h2, NULL, &f->d), KEEL_OK);
    /* generation UINT32_MAX is the last: the index is retired, never reused */
    keel_entity h3 = spawn(f, "E3", 0);
    assert_true((uint32_t)h3 != i);
    check_stale(f, h);
    check_stale(f, h2);
}

static void churn_add_remove_keeps_storage_dense(void **state)
{
    fx *f = *state;
    enum { N = 2000 };
    keel_entity *es = calloc(N, sizeof *es);
    for (int i = 0; i < N; i++) {
        es[i] = spawn(f, "E", 0);
        add(f, es[i], "core:transform");
    }
    for (int round = 0; round < 3; round++)
        for (int i = round; i < N; i += 3) {
            add(f, es[i], "core:audio_source");
            assert_int_equal(keel_remove(f->w, es[i], "core:audio_source", (uint32_t)round == 0 ? 0 : 0, NULL, &f->d),
                             KEEL_OK);
        }
    assert_int_equal(keel_storage_count(f->w, K("core:audio_source")), 0);
    for (int i = 0; i < N; i += 2) assert_int_equal(keel_destroy(f->w, es[i], NULL, &f->d), KEEL_OK);
    keel_kind_id t = K("core:transform");
    assert_int_equal(keel_storage_count(f->w, t), N / 2);
    for (size_t r = 0; r < N / 2; r++) {
        keel_comp c;
        assert_true(keel_get_comp(f->w, keel_storage_owner(f->w, t, r), t, 0, &c));
        assert_ptr_equal(keel_record(f->w, c), keel_storage_record(f->w, t, r));
    }
    free(es);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(churn_stale_handles_fail_after_reuse),
        T(churn_index_retired_before_generation_wraps),
        T(churn_add_remove_keeps_storage_dense),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
