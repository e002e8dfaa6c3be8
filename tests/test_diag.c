/* test_diag.c — diagnostic lists: the cap (the first ones in full, then one summary per code) and exact counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"

/* Bounded by the listed ones plus one summary per severity and code. */
#define MAX_ITEMS (1000 + 2 * 9)

static void diag_list_is_capped_and_counts_stay_exact(void **state)
{
    (void)state;
    keel_diags d;
    keel_diags_init(&d);
    for (int i = 0; i < 5000; i++)
        keel_diag_add(&d, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.x", "f.yaml", i + 1, 3, "bad value %d", i);
    for (int i = 0; i < 3000; i++) keel_diag_add(&d, KEEL_SEV_WARNING, KEEL_NOT_FOUND, "", "f.yaml", 0, 0, "w %d", i);
    for (int i = 0; i < 10; i++) KEEL_ERROR(&d, KEEL_PARSE_ERROR, "", "p %d", i);
    assert_true(d.count <= MAX_ITEMS);
    assert_int_equal(d.errors, 5010);
    assert_int_equal(keel_diags_status(&d), KEEL_INVALID_ARGUMENT);
    /* the first ones are whole */
    assert_string_equal(d.items[0].message, "bad value 0");
    assert_string_equal(d.items[999].message, "bad value 999");
    assert_int_equal(d.items[999].line, 1000);
    keel_diags_free(&d);
}

static const keel_diag *summary(const keel_diags *d, keel_severity sev, keel_status code)
{
    for (size_t i = 0; i < d->count; i++)
        if (d->items[i].more && d->items[i].severity == sev && d->items[i].code == code) return &d->items[i];
    return NULL;
}

static void diag_summaries_say_how_many_more(void **state)
{
    (void)state;
    keel_diags d;
    keel_diags_init(&d);
    for (int i = 0; i < 5000; i++)
        keel_diag_add(&d, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "body.x", "f.yaml", i + 1, 3, "bad value %d", i);
    for (int i = 0; i < 3000; i++) keel_diag_add(&d, KEEL_SEV_WARNING, KEEL_NOT_FOUND, "", "f.yaml", 0, 0, "w %d", i);
    KEEL_ERROR(&d, KEEL_PARSE_ERROR, "", "only one");
    assert_int_equal(d.count, KEEL_DIAGS_LISTED + 3);
    assert_int_equal(d.errors, 5001);
    assert_int_equal(d.warnings, 3000);
    const keel_diag *g = summary(&d, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT);
    assert_non_null(g);
    assert_int_equal(g->more, 4000);
    assert_string_equal(g->message, "and 4000 more errors: InvalidArgument (the first 1000 diagnostics are listed)");
    assert_string_equal(g->file, "f.yaml");
    assert_string_equal(g->path, "");
    g = summary(&d, KEEL_SEV_WARNING, KEEL_NOT_FOUND);
    assert_int_equal(g->more, 3000);
    assert_string_equal(g->message, "and 3000 more warnings: NotFound (the first 1000 diagnostics are listed)");
    g = summary(&d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR);
    assert_string_equal(g->message, "and 1 more error: ParseError (the first 1000 diagnostics are listed)");
    char line[256];
    assert_string_equal(keel_diag_format(g, line, sizeof line),
                        "error: ParseError: and 1 more error: ParseError (the first 1000 diagnostics are listed)");

    /* Appending keeps the cap and the counts; summaries add up. */
    keel_diags dst;
    keel_diags_init(&dst);
    for (int i = 0; i < 600; i++) KEEL_ERROR(&dst, KEEL_INVALID_ARGUMENT, "", "early %d", i);
    keel_diags_append(&dst, &d, "root");
    assert_int_equal(d.count, 0);
    assert_true(dst.count <= MAX_ITEMS);
    assert_int_equal(dst.errors, 5601);
    assert_int_equal(dst.warnings, 3000);
    assert_string_equal(dst.items[600].path, "root.body.x");
    g = summary(&dst, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT);
    assert_int_equal(g->more, 4600);
    assert_int_equal(summary(&dst, KEEL_SEV_WARNING, KEEL_NOT_FOUND)->more, 3000);
    keel_diags_free(&d);
    keel_diags_free(&dst);
}

/* The first error is that of the first error added, when every listed one is a warning. */
static void diag_first_error_code_survives_the_cap(void **state)
{
    (void)state;
    keel_diags d;
    keel_diags_init(&d);
    for (int i = 0; i < 1500; i++) keel_diag_add(&d, KEEL_SEV_WARNING, KEEL_NOT_FOUND, "", NULL, 0, 0, "w");
    KEEL_ERROR(&d, KEEL_LIMIT_EXCEEDED, "", "late");
    KEEL_ERROR(&d, KEEL_INVALID_ARGUMENT, "", "later");
    assert_int_equal(keel_diags_status(&d), KEEL_LIMIT_EXCEEDED);
    assert_int_equal(d.errors, 2);
    keel_diags_free(&d);
}

/* A scene of many empty component entries (issue 17: 5.25 MB made 3.2M diagnostics). */
static void diag_scene_of_empty_components_stays_small(void **state)
{
    (void)state;
    size_t entities = 40, per = 250, cap = 256 + entities * (64 + per * 4), at = 0;
    char *t = malloc(cap);
    at += (size_t)snprintf(t + at, cap - at,
                           "keel: 1\nscene:\n  uuid: 550e8400-e29b-41d4-a716-446655440000\n  name: E\nentities:\n");
    for (size_t i = 0; i < entities; i++) {
        at += (size_t)snprintf(t + at, cap - at, "  - uuid: 00000000-0000-4000-8000-%012zx\n    components: [", i + 1);
        for (size_t j = 0; j < per; j++) at += (size_t)snprintf(t + at, cap - at, j ? ", {}" : "{}");
        at += (size_t)snprintf(t + at, cap - at, "]\n");
    }
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_parse(t, at, NULL, &w, &d), KEEL_PARSE_ERROR);
    printf("# %zu entries: %zu errors in %zu items\n", entities * per, d.errors, d.count);
    assert_null(w);
    assert_true(d.errors >= entities * per); /* each entry has at least one problem, all counted */
    assert_true(d.count <= MAX_ITEMS);
    keel_diags_free(&d);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(diag_list_is_capped_and_counts_stay_exact),
        cmocka_unit_test(diag_summaries_say_how_many_more),
        cmocka_unit_test(diag_first_error_code_survives_the_cap),
        cmocka_unit_test(diag_scene_of_empty_components_stays_small),
    };
    assert_int_equal(keel_init(), KEEL_OK);
    int failed = KEEL_TEST_RUN(tests, NULL, NULL);
    keel_shutdown();
    return failed;
}
