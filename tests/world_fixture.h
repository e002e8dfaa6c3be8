/* world_fixture.h — the cmocka fixture shared by the world tests: a fresh world per test. */
#ifndef KEEL_WORLD_FIXTURE_H
#define KEEL_WORLD_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"

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

#endif
