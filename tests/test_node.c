/* test_node.c — document trees, core-schema scalar reading, shortest round-trip doubles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "keel_test.h"
#include "keel.h"

static keel_node *plain(const char *t)
{
    return keel_node_new_scalar(t, KEEL_STYLE_PLAIN);
}

static void node_null_spellings(void **state)
{
    static const char *const yes[] = { "", "~", "null", "Null", "NULL" };
    static const char *const no[] = { "nul", "NuLL", "none", "0" };
    for (size_t i = 0; i < 5; i++) {
        keel_node *n = plain(yes[i]);
        assert_true(keel_node_is_null(n));
        keel_node_free(n);
    }
    for (size_t i = 0; i < 4; i++) {
        keel_node *n = plain(no[i]);
        assert_false(keel_node_is_null(n));
        keel_node_free(n);
    }
    keel_node *q = keel_node_new_scalar("null", KEEL_STYLE_DOUBLE);
    assert_false(keel_node_is_null(q)); /* quoted: a string */
    keel_node_free(q);
}

static void node_bool_spellings(void **state)
{
    static const char *const t[] = { "true", "True", "TRUE" }, *const f[] = { "false", "False", "FALSE" };
    bool b;
    for (int i = 0; i < 3; i++) {
        keel_node *n = plain(t[i]);
        b = false;
        assert_true(keel_node_as_bool(n, &b));
        assert_true(b);
        keel_node_free(n);
        n = plain(f[i]);
        b = true;
        assert_true(keel_node_as_bool(n, &b));
        assert_false(b);
        keel_node_free(n);
    }
    static const char *const no[] = { "yes", "on", "tRue", "1", "y" };
    for (int i = 0; i < 5; i++) {
        keel_node *n = plain(no[i]);
        assert_false(keel_node_as_bool(n, &b));
        keel_node_free(n);
    }
    keel_node *q = keel_node_new_scalar("true", KEEL_STYLE_SINGLE);
    assert_false(keel_node_as_bool(q, &b));
    keel_node_free(q);
}

static void node_int_forms(void **state)
{
    struct { const char *t; int64_t v; } ok[] = {
        { "0", 0 }, { "42", 42 }, { "-7", -7 }, { "+5", 5 }, { "0x1F", 31 }, { "0o17", 15 },
        { "9223372036854775807", INT64_MAX }, { "-9223372036854775808", INT64_MIN }, { "007", 7 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        keel_node *n = plain(ok[i].t);
        int64_t v = 1234;
        assert_true(keel_node_as_int(n, &v));
        assert_true(v == ok[i].v);
        keel_node_free(n);
    }
    static const char *const no[] = { "1.5", "1e3", "0x", "0o8", "9223372036854775808", "-", "12a", "", "0b101",
                                      "1_000" };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        keel_node *n = plain(no[i]);
        int64_t v;
        assert_false(keel_node_as_int(n, &v));
        keel_node_free(n);
    }
    keel_node *q = keel_node_new_scalar("42", KEEL_STYLE_DOUBLE);
    int64_t v;
    assert_false(keel_node_as_int(q, &v));
    keel_node_free(q);
}

static void node_float_forms(void **state)
{
    struct { const char *t; double v; } ok[] = {
        { "1.5", 1.5 }, { "-2", -2 }, { ".5", 0.5 }, { "1.", 1.0 }, { "1e3", 1000 }, { "2.5E-1", 0.25 },
        { "+1e+2", 100 }, { "0x10", 16 }, { "0o10", 8 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        keel_node *n = plain(ok[i].t);
        double v = 0;
        assert_true(keel_node_as_float(n, &v));
        assert_true(v == ok[i].v);
        keel_node_free(n);
    }
    double v;
    keel_node *n = plain(".inf");
    assert_true(keel_node_as_float(n, &v) && isinf(v) && v > 0);
    keel_node_free(n);
    n = plain("-.Inf");
    assert_true(keel_node_as_float(n, &v) && isinf(v) && v < 0);
    keel_node_free(n);
    n = plain(".NaN");
    assert_true(keel_node_as_float(n, &v) && isnan(v));
    keel_node_free(n);
    n = plain("-0");
    assert_true(keel_node_as_float(n, &v) && v == 0 && signbit(v));
    keel_node_free(n);
    static const char *const no[] = { "inf", "nan", "1e", ".", "e3", "1.2.3", "0x1p3", "abc", "", "- 1" };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        n = plain(no[i]);
        assert_false(keel_node_as_float(n, &v));
        keel_node_free(n);
    }
    n = keel_node_new_scalar("1.5", KEEL_STYLE_LITERAL);
    assert_false(keel_node_as_float(n, &v));
    keel_node_free(n);
}

static keel_node *sample(void)
{
    keel_node *m = keel_node_new_map();
    keel_node_put(m, "name", keel_node_new_scalar("Player", KEEL_STYLE_ANY));
    keel_node *pos = keel_node_new_seq();
    keel_node_push(pos, plain("0"));
    keel_node_push(pos, plain("1.5"));
    keel_node_push(pos, plain("0"));
    keel_node_put(m, "position", pos);
    keel_node *inner = keel_node_new_map();
    keel_node_put(inner, "x", plain("1"));
    keel_node_put(m, "inner", inner);
    return m;
}

static void node_build_get_and_replace(void **state)
{
    keel_node *m = sample();
    assert_int_equal(m->count, 3);
    const keel_node *p = keel_node_get(m, "position");
    assert_non_null(p);
    assert_int_equal(p->kind, KEEL_NODE_SEQ);
    assert_int_equal(p->count, 3);
    assert_string_equal(p->items[1].text, "1.5");
    assert_null(keel_node_get(m, "absent"));
    keel_node_put(m, "name", plain("Enemy")); /* replaces in place */
    assert_int_equal(m->count, 3);
    assert_string_equal(keel_node_get(m, "name")->text, "Enemy");
    assert_string_equal(m->items[0].text, "name");
    keel_node_free(m);
    keel_node_free(NULL);
}

static void node_copy_is_deep_and_equal(void **state)
{
    keel_node *a = sample();
    keel_node *b = keel_node_copy(a);
    assert_true(keel_node_equal(a, b));
    /* Changing the copy leaves the original alone and breaks equality. */
    keel_node_put(b, "name", plain("Other"));
    assert_string_equal(keel_node_get(a, "name")->text, "Player");
    assert_false(keel_node_equal(a, b));
    keel_node_free(b);

    b = keel_node_copy(a);
    keel_node_push((keel_node *)keel_node_get(b, "position"), plain("9"));
    assert_false(keel_node_equal(a, b));
    keel_node_free(b);

    /* Quoting changes meaning ("1" is a string), layout does not. */
    keel_node *x = plain("1"), *y = keel_node_new_scalar("1", KEEL_STYLE_DOUBLE), *z = keel_node_new_scalar("1", KEEL_STYLE_ANY);
    assert_false(keel_node_equal(x, y));
    assert_true(keel_node_equal(x, z));
    keel_node_free(x);
    keel_node_free(y);
    keel_node_free(z);
    keel_node_free(a);
}

static void node_clear_embedded(void **state)
{
    keel_node *a = sample();
    keel_node *inner = (keel_node *)keel_node_get(a, "inner");
    keel_node_clear(inner);
    assert_int_equal(inner->count, 0);
    assert_null(keel_node_get(inner, "x"));
    keel_node_free(a);
}

static void check_format(double v, const char *want)
{
    char buf[64];
    int n = keel_format_double(v, buf, sizeof buf);
    assert_string_equal(buf, want);
    assert_int_equal(n, (int)strlen(want));
    if (isfinite(v)) {
        double back = strtod(buf, NULL);
        assert_memory_equal(&back, &v, sizeof v); /* bit-exact, sign of zero included */
        keel_node *node = plain(buf);
        double read;
        assert_true(keel_node_as_float(node, &read));
        assert_memory_equal(&read, &v, sizeof v);
        keel_node_free(node);
    }
}

static void node_format_double_shortest(void **state)
{
    check_format(0.1, "0.1");
    check_format(1.0 / 3, "0.3333333333333333");
    check_format(1e-7, "1e-7");
    check_format(-0.0, "-0");
    check_format(0.0, "0");
    check_format(5e-324, "5e-324");
    check_format(1.7976931348623157e308, "1.7976931348623157e+308");
    check_format(9007199254740994.0, "9007199254740994"); /* 2^53 + 2 */
    check_format(1.0, "1");
    check_format(-42.0, "-42");
    check_format(100.0, "100");
    check_format(1.5, "1.5");
    check_format(123.456, "123.456");
    check_format(0.0001, "0.0001");
    check_format(1e16, "1e+16");
    check_format(1e20, "1e+20");
    check_format(0.30000000000000004, "0.30000000000000004");
    check_format(NAN, ".nan");
    check_format(INFINITY, ".inf");
    check_format(-INFINITY, "-.inf");
    /* integers below 10^15 are written from their digits; 10^15 and up take the general path */
    check_format(999999999999999.0, "999999999999999");
    check_format(1e15, "1000000000000000");
    check_format(1e14, "100000000000000");
    check_format(120.0, "120");
    check_format(-7.0, "-7");
    check_format(4503599627370497.0, "4503599627370497"); /* 2^52 + 1: 16 digits */
    check_format(2.0 / 60, "0.03333333333333333");      /* 16 digits */
    check_format(0.1 + 0.7, "0.7999999999999999");       /* 16 digits */
    check_format(1.1 * 1.1, "1.2100000000000002");       /* 17 digits */
}

static void node_format_double_truncates_safely(void **state)
{
    char buf[4];
    int n = keel_format_double(0.123456, buf, sizeof buf);
    assert_int_equal(n, 8);
    assert_string_equal(buf, "0.1");
}

/* push only into a SEQ, put only into a MAP: anything else is NULL (the child freed), the parent intact */
static void node_push_and_put_refuse_the_wrong_parent(void **state)
{
    (void)state;
    keel_node *map = keel_node_new_map(), *seq = keel_node_new_seq();
    keel_node *scalar = keel_node_new_scalar("x", KEEL_STYLE_PLAIN);
    assert_non_null(keel_node_put(map, "a", keel_node_new_scalar("1", KEEL_STYLE_PLAIN)));
    assert_non_null(keel_node_push(seq, keel_node_new_scalar("1", KEEL_STYLE_PLAIN)));
    assert_null(keel_node_push(map, keel_node_new_scalar("2", KEEL_STYLE_PLAIN)));
    assert_null(keel_node_push(map, keel_node_new_seq()));
    assert_null(keel_node_put(seq, "b", keel_node_new_scalar("2", KEEL_STYLE_PLAIN)));
    assert_null(keel_node_push(scalar, keel_node_new_scalar("2", KEEL_STYLE_PLAIN)));
    assert_null(keel_node_put(scalar, "b", NULL));
    assert_null(keel_node_put(map, NULL, keel_node_new_scalar("2", KEEL_STYLE_PLAIN)));
    assert_null(keel_node_push(NULL, keel_node_new_scalar("2", KEEL_STYLE_PLAIN)));
    assert_null(keel_node_put(NULL, "b", NULL));
    assert_int_equal(map->count, 1);
    assert_string_equal(keel_node_get(map, "a")->text, "1");
    assert_int_equal(seq->count, 1);
    assert_int_equal(scalar->count, 0);
    assert_null(scalar->items);
    assert_string_equal(scalar->text, "x");
    keel_node_free(map); /* with the old behaviour: a heap overflow here (maps hold 2*count items) */
    keel_node_free(seq);
    keel_node_free(scalar);
}

static double seconds(void)
{
    struct timespec t; /* CPU time: a loaded machine must not fail a linear fill */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Filling a wide map is linear overall (issue 17: 80,000 keys took 9.4 s), and put keeps its
 * contract: a key put again is replaced in place, order is insertion order. */
static void node_put_wide_map_is_linear(void **state)
{
    (void)state;
    enum { N = 100000 };
    char key[32];
    double t0 = seconds();
    keel_node *m = keel_node_new_map();
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k%d", i);
        keel_node_put(m, key, keel_node_new_scalar(key, KEEL_STYLE_PLAIN));
    }
    for (int i = 0; i < N; i += 7) { /* replaced, not appended */
        snprintf(key, sizeof key, "k%d", i);
        keel_node_put(m, key, keel_node_new_scalar("again", KEEL_STYLE_PLAIN));
    }
    double took = seconds() - t0;
    printf("# %d puts and %d replacements: %.3f s of CPU\n", N, (N + 6) / 7, took);
    assert_true(took < 2.0);
    assert_int_equal(m->count, N);
    assert_string_equal(m->items[2 * 5].text, "k5");
    assert_string_equal(keel_node_get(m, "k5")->text, "k5");
    assert_string_equal(keel_node_get(m, "k7")->text, "again");
    assert_string_equal(m->items[2 * 14 + 1].text, "again");

    /* A copy is a plain map: puts into it find its keys. */
    keel_node *c = keel_node_copy(m);
    assert_true(keel_node_equal(c, m));
    keel_node_put(c, "k3", keel_node_new_scalar("copy", KEEL_STYLE_PLAIN));
    keel_node_put(c, "new", NULL);
    assert_int_equal(c->count, N + 1);
    assert_string_equal(keel_node_get(c, "k3")->text, "copy");
    assert_string_equal(keel_node_get(m, "k3")->text, "k3");

    /* A pair appended by hand (the struct is public) is still found by put. */
    keel_node *k = keel_node_new_scalar("by-hand", KEEL_STYLE_ANY), *v = keel_node_new_scalar("1", KEEL_STYLE_PLAIN);
    m->items = realloc(m->items, 2 * (m->count + 1) * sizeof *m->items);
    m->items[2 * m->count] = *k;
    m->items[2 * m->count + 1] = *v;
    m->count++;
    free(k);
    free(v);
    keel_node_put(m, "by-hand", keel_node_new_scalar("2", KEEL_STYLE_PLAIN));
    assert_int_equal(m->count, N + 1);
    assert_string_equal(keel_node_get(m, "by-hand")->text, "2");
    keel_node_free(c);
    keel_node_free(m);
}

/* Short decimals take a path of their own: the same double as strtod gives, for each. */
static void node_as_float_short_decimals_match_strtod(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char text[40];
        int digits = 1 + (int)(x % 17), point = (int)((x >> 8) % (unsigned)(digits + 2)) - 1, n = 0;
        if (x >> 63) text[n++] = '-';
        else if ((x >> 62) & 1) text[n++] = '+';
        uint64_t y = x;
        for (int k = 0; k < digits; k++) {
            if (k == point) text[n++] = '.';
            text[n++] = (char)('0' + (int)(y % 10));
            y = y / 10 ^ (y << 7);
        }
        if (point == digits) text[n++] = '.';
        text[n] = '\0';
        keel_node *s = keel_node_new_scalar(text, KEEL_STYLE_PLAIN);
        double v = 0, want = strtod(text, NULL);
        assert_true(keel_node_as_float(s, &v));
        if (memcmp(&v, &want, sizeof v) != 0) fail_msg("%s: %.17g, strtod %.17g", text, v, want);
        keel_node_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(node_null_spellings),
        cmocka_unit_test(node_bool_spellings),
        cmocka_unit_test(node_int_forms),
        cmocka_unit_test(node_float_forms),
        cmocka_unit_test(node_build_get_and_replace),
        cmocka_unit_test(node_copy_is_deep_and_equal),
        cmocka_unit_test(node_clear_embedded),
        cmocka_unit_test(node_format_double_shortest),
        cmocka_unit_test(node_format_double_truncates_safely),
        cmocka_unit_test(node_as_float_short_decimals_match_strtod),
        cmocka_unit_test(node_push_and_put_refuse_the_wrong_parent),
        cmocka_unit_test(node_put_wide_map_is_linear),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
