/* test_assets.c — the asset manifest: lookups, and refusals of malformed or duplicate entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"

#define A1 "aaaaaaaa-0000-4000-8000-000000000001"
#define A2 "aaaaaaaa-0000-4000-8000-000000000002"
#define A3 "aaaaaaaa-0000-4000-8000-000000000003"

static keel_uuid U(const char *s)
{
    keel_uuid u;
    assert_true(keel_uuid_parse(s, &u));
    return u;
}

static keel_status parse(const char *text, keel_assets **a, keel_diags *d)
{
    return keel_assets_parse(text, strlen(text), "assets.yaml", a, d);
}

static void assets_lookup(void **state)
{
    const char *text = "assets:\n"
                       "  - uuid: " A2 "\n    path: textures/b.png\n    type: texture\n"
                       "  - {uuid: " A1 ", path: meshes/a.glb, type: mesh}\n";
    keel_assets *a = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(parse(text, &a, &d), KEEL_OK);
    assert_int_equal(d.count, 0);
    assert_true(keel_assets_has(a, U(A1)));
    assert_true(keel_assets_has(a, U(A2)));
    assert_false(keel_assets_has(a, U(A3)));
    assert_string_equal(keel_assets_path(a, U(A1)), "meshes/a.glb");
    assert_string_equal(keel_assets_path(a, U(A2)), "textures/b.png");
    assert_null(keel_assets_path(a, U(A3)));
    keel_assets_free(a);
    keel_assets_free(NULL);
    keel_diags_free(&d);
}

static void assets_empty_manifest(void **state)
{
    keel_assets *a = NULL;
    assert_int_equal(parse("assets: []\n", &a, NULL), KEEL_OK);
    assert_false(keel_assets_has(a, U(A1)));
    keel_assets_free(a);
}

static void expect(const char *text, keel_status code, const char *msg, int line, const char *path)
{
    keel_assets *a = (keel_assets *)(uintptr_t)1;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(parse(text, &a, &d), code);
    assert_ptr_equal(a, (keel_assets *)(uintptr_t)1);
    assert_true(d.errors >= 1);
    assert_int_equal(d.items[0].code, code);
    assert_non_null(strstr(d.items[0].message, msg));
    if (line) assert_int_equal(d.items[0].line, line);
    if (path) assert_string_equal(d.items[0].path, path);
    keel_diags_free(&d);
}

static void assets_refusals(void **state)
{
    expect("assets:\n  - {uuid: " A1 ", path: a, type: mesh}\n  - {uuid: " A1 ", path: b, type: mesh}\n",
           KEEL_PARSE_ERROR, "duplicate asset uuid " A1 " (first at line 2)", 3, "assets");
    expect("assets:\n  - {uuid: nope, path: a, type: mesh}\n", KEEL_PARSE_ERROR, "malformed asset uuid", 2,
           "assets[0].uuid");
    expect("assets:\n  - {uuid: " A1 ", type: mesh}\n", KEEL_PARSE_ERROR, "missing or non-string 'path'", 2,
           "assets[0].path");
    expect("things: []\n", KEEL_PARSE_ERROR, "'assets' list", 1, "assets");
    expect("assets: [1, 2\n", KEEL_PARSE_ERROR, "did not find expected", 0, NULL);
    expect("assets: &a []\n", KEEL_PARSE_ERROR, "anchors are not allowed", 1, NULL);
}

static void assets_load_missing_file(void **state)
{
    keel_assets *a = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_assets_load("/nonexistent/assets.yaml", &a, &d), KEEL_IO_ERROR);
    assert_null(a);
    keel_diags_free(&d);
}

/* The manifest a scene uses by default: assets.yaml in its directory, never itself. */
static void assets_beside_the_scene(void **state)
{
    char dir[] = "/tmp/keel_assets_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char scene[64], manifest[64];
    snprintf(scene, sizeof scene, "%s/level.yaml", dir);
    snprintf(manifest, sizeof manifest, "%s/assets.yaml", dir);
    assert_null(keel_assets_beside(scene)); /* none there yet */
    FILE *f = fopen(manifest, "w");
    assert_non_null(f);
    fputs("assets: []\n", f);
    fclose(f);
    char *got = keel_assets_beside(scene);
    assert_string_equal(got, manifest);
    free(got);
    assert_null(keel_assets_beside(manifest)); /* not its own manifest */
    assert_null(keel_assets_beside(NULL));
    remove(manifest);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(assets_lookup),
        cmocka_unit_test(assets_empty_manifest),
        cmocka_unit_test(assets_refusals),
        cmocka_unit_test(assets_load_missing_file),
        cmocka_unit_test(assets_beside_the_scene),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
