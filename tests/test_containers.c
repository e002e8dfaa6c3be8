/* test_containers.c — base/vec.h (the growable array) and base/map.h (the u64 -> u32 hash map). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "base/vec.h"

/* Pushes through both capacity types: doubling from `first`, contents kept, room for n at once. */
static void vec_grows_by_doubling(void **state)
{
    (void)state;
    int *a = NULL;
    uint32_t n = 0, cap = 0;
    for (int i = 0; i < 1000; i++) *KEEL__VEC_PUSH_SLOT(a, n, cap, 16) = i;
    assert_int_equal(n, 1000);
    assert_int_equal(cap, 1024); /* 16, 32, ... 1024 */
    for (int i = 0; i < 1000; i++) assert_int_equal(a[i], i);
    KEEL__VEC_RESERVE(a, n, cap, 24, 16); /* room already: unchanged */
    assert_int_equal(cap, 1024);
    KEEL__VEC_RESERVE(a, n, cap, 5000, 16); /* more than double: exactly what is needed */
    assert_int_equal(cap, 6000);
    free(a);

    char *b = NULL;
    size_t len = 0, bcap = 0;
    KEEL__VEC_RESERVE(b, len, bcap, 3, 0); /* first 0: from need */
    assert_int_equal(bcap, 3);
    memcpy(b, "abc", 3);
    len = 3;
    b = keel__vec_grow(b, &bcap, 4, 1, 8);
    assert_int_equal(bcap, 6);
    b = keel__vec_grow(b, &bcap, 2, 1, 8); /* holds it already */
    assert_int_equal(bcap, 6);
    assert_memory_equal(b, "abc", 3);
    free(b);
}

static void map_puts_gets_removes(void **state)
{
    (void)state;
    enum { N = 5000 };
    keel__map m = { 0 };
    uint32_t v = 7;
    assert_false(keel__map_get(&m, 0, &v));
    assert_false(keel__map_get(&m, 42, &v));
    assert_false(keel__map_remove(&m, 42));
    assert_int_equal(keel__map_get_or(&m, 42, 99), 99);
    for (uint64_t k = 0; k < N; k++) keel__map_put(&m, k * 0x10001, (uint32_t)k);
    keel__map_put(&m, UINT64_MAX, 1234567); /* every key is a key, 0 and the largest too */
    assert_int_equal(keel__map_count(&m), N + 1);
    for (uint64_t k = 0; k < N; k++) {
        assert_true(keel__map_get(&m, k * 0x10001, &v));
        assert_int_equal(v, k);
    }
    assert_int_equal(keel__map_get_or(&m, UINT64_MAX, 0), 1234567);
    keel__map_put(&m, 0, 5); /* replaces */
    assert_int_equal(keel__map_get_or(&m, 0, 0), 5);
    assert_int_equal(keel__map_count(&m), N + 1);

    /* iterate: each key once */
    size_t seen = 0;
    uint64_t sum = 0, k;
    for (size_t it = 0; keel__map_next(&m, &it, &k, &v);) {
        seen++;
        sum += v;
    }
    assert_int_equal(seen, N + 1);
    assert_int_equal(sum, (uint64_t)N * (N - 1) / 2 + 5 + 1234567);

    for (uint64_t k2 = 0; k2 < N; k2 += 2) assert_true(keel__map_remove(&m, k2 * 0x10001));
    assert_false(keel__map_remove(&m, 0));
    for (uint64_t k2 = 0; k2 < N; k2++)
        assert_int_equal(keel__map_get(&m, k2 * 0x10001, &v), k2 % 2 == 1);

    uint32_t cap = m.cap;
    keel__map_clear(&m);
    assert_int_equal(keel__map_count(&m), 0);
    assert_int_equal(m.cap, cap);
    assert_false(keel__map_get(&m, 0x10001, &v));
    keel__map_free(&m);
    assert_int_equal(m.cap, 0);
    keel__map_put(&m, 3, 4); /* usable again after free */
    assert_int_equal(keel__map_get_or(&m, 3, 0), 4);
    keel__map_free(&m);
}

static void map_reserve_leaves_room(void **state)
{
    (void)state;
    keel__map m = { 0 };
    keel__map_reserve(&m, 1000);
    uint32_t cap = m.cap;
    assert_true(cap >= 2000);
    for (uint64_t k = 1; k <= 1000; k++) keel__map_put(&m, k, 1);
    assert_int_equal(m.cap, cap); /* no growth */
    keel__map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vec_grows_by_doubling),
        cmocka_unit_test(map_puts_gets_removes),
        cmocka_unit_test(map_reserve_leaves_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
