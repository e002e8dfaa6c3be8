/* test_yaml_read.c — YAML text to keel_node trees: positions, styles, refusals and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "keel_test.h"
#include "files/yaml_read.h"

static keel_status read_text(const char *text, const keel_limits *lim, keel_node **out, keel_diags *d)
{
    return keel__yaml_parse(text, strlen(text), lim, "t.yaml", out, d);
}

static void yaml_read_tree_with_positions_and_styles(void **state)
{
    const char *text = "a: 1\nb:\n  - x\n  - 'y'\n  - \"z\"\nc: {k: [1, 2]}\nd: |\n  lit\n";
    keel_node *n = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(read_text(text, NULL, &n, &d), KEEL_OK);
    assert_int_equal(n->kind, KEEL_NODE_MAP);
    assert_int_equal(n->count, 4);
    assert_int_equal(n->line, 1);
    const keel_node *a = keel_node_get(n, "a");
    assert_string_equal(a->text, "1");
    assert_int_equal(a->line, 1);
    assert_int_equal(a->col, 4);
    assert_int_equal(a->style, KEEL_STYLE_PLAIN);
    const keel_node *b = keel_node_get(n, "b");
    assert_int_equal(b->kind, KEEL_NODE_SEQ);
    assert_int_equal(b->style, KEEL_STYLE_BLOCK);
    assert_int_equal(b->count, 3);
    assert_int_equal(b->items[1].style, KEEL_STYLE_SINGLE);
    assert_int_equal(b->items[2].style, KEEL_STYLE_DOUBLE);
    assert_int_equal(b->items[2].line, 5);
    assert_int_equal(b->items[2].col, 5);
    const keel_node *c = keel_node_get(n, "c");
    assert_int_equal(c->style, KEEL_STYLE_FLOW);
    assert_int_equal(keel_node_get(c, "k")->style, KEEL_STYLE_FLOW);
    const keel_node *lit = keel_node_get(n, "d");
    assert_int_equal(lit->style, KEEL_STYLE_LITERAL);
    assert_string_equal(lit->text, "lit\n");
    keel_node_free(n);
    keel_diags_free(&d);
}

static void expect_error(const char *text, const keel_limits *lim, keel_status code, const char *msg, int line,
                         int col, const char *path)
{
    keel_node *n = (keel_node *)(uintptr_t)1;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(read_text(text, lim, &n, &d), code);
    assert_null(n);
    assert_int_equal(d.errors, 1);
    char buf[512];
    printf("# %s\n", keel_diag_format(&d.items[0], buf, sizeof buf));
    assert_int_equal(d.items[0].code, code);
    assert_non_null(strstr(d.items[0].message, msg));
    assert_string_equal(d.items[0].file, "t.yaml");
    if (line) assert_int_equal(d.items[0].line, line);
    if (col) assert_int_equal(d.items[0].col, col);
    if (path) assert_string_equal(d.items[0].path, path);
    keel_diags_free(&d);
}

static void yaml_read_refuses_aliases_anchors_tags(void **state)
{
    expect_error("a: &x 1\nb: 2\n", NULL, KEEL_PARSE_ERROR, "anchors are not allowed", 1, 4, "a");
    expect_error("a: 1\nb: *x\n", NULL, KEEL_PARSE_ERROR, "aliases are not allowed", 2, 4, "b");
    expect_error("a: &m {k: 1}\n", NULL, KEEL_PARSE_ERROR, "anchors are not allowed", 1, 4, "a");
    expect_error("a: !custom 1\n", NULL, KEEL_PARSE_ERROR, "tag !custom is not allowed", 1, 4, "a");
    expect_error("a: !!python/object:os.system x\n", NULL, KEEL_PARSE_ERROR, "is not allowed", 1, 4, "a");
    expect_error("a: !!map [1]\n", NULL, KEEL_PARSE_ERROR, "is not allowed", 1, 4, "a");
    expect_error("list:\n  - !!set {a: null}\n", NULL, KEEL_PARSE_ERROR, "is not allowed", 2, 5, "list[0]");
}

static void yaml_read_core_tags_keep_their_meaning(void **state)
{
    keel_node *n = NULL;
    assert_int_equal(read_text("a: !!str 123\nb: !!int \"7\"\nc: !!map {}\nd: !!seq []\n", NULL, &n, NULL), KEEL_OK);
    int64_t i;
    assert_false(keel_node_as_int(keel_node_get(n, "a"), &i)); /* a string, whatever it looks like */
    assert_true(keel_node_as_int(keel_node_get(n, "b"), &i));
    assert_int_equal(i, 7);
    keel_node_free(n);
}

static void yaml_read_refuses_documents_and_duplicates(void **state)
{
    expect_error("a: 1\n---\nb: 2\n", NULL, KEEL_PARSE_ERROR, "multiple documents are not allowed", 2, 1, NULL);
    expect_error("a: 1\nb: 2\na: 3\n", NULL, KEEL_PARSE_ERROR, "duplicate key 'a' (first at line 1)", 3, 1, "");
    expect_error("m:\n  x: 1\n  x: 2\n", NULL, KEEL_PARSE_ERROR, "duplicate key 'x'", 3, 3, "m");
    expect_error("{[1]: 2}\n", NULL, KEEL_PARSE_ERROR, "map keys must be scalars", 1, 2, NULL);
}

static void yaml_read_duplicate_in_long_map(void **state)
{
    size_t cap = 200 * 16;
    char *text = malloc(cap);
    size_t n = 0;
    for (int i = 0; i < 200; i++) n += (size_t)snprintf(text + n, cap - n, "k%d: %d\n", i, i);
    n += (size_t)snprintf(text + n, cap - n, "k17: again\n");
    expect_error(text, NULL, KEEL_PARSE_ERROR, "duplicate key 'k17' (first at line 18)", 201, 1, "");
    free(text);
}

static void yaml_read_malformed_gives_position(void **state)
{
    expect_error("a: [1, 2\nb: 3\n", NULL, KEEL_PARSE_ERROR, "did not find expected", 2, 0, NULL);
    expect_error("a: b: c\n", NULL, KEEL_PARSE_ERROR, "mapping values are not allowed", 1, 5, NULL);
    expect_error("a: \"unterminated\n", NULL, KEEL_PARSE_ERROR, "found unexpected end of stream", 0, 0, NULL);
}

static void yaml_read_limits_exceeded(void **state)
{
    keel_limits lim = keel_limits_default();
    lim.document_size = 4;
    expect_error("a: 12345\n", &lim, KEEL_LIMIT_EXCEEDED, "document larger than the limit", 0, 0, "");
    lim = keel_limits_default();
    lim.nesting_depth = 2;
    expect_error("a: {b: {c: 1}}\n", &lim, KEEL_LIMIT_EXCEEDED, "nesting deeper than the limit (2)", 1, 8, "a.b");
    lim = keel_limits_default();
    lim.collection_length = 2;
    expect_error("a: [1, 2, 3]\n", &lim, KEEL_LIMIT_EXCEEDED, "collection longer than the limit (2 items)", 1, 11,
                 "a[2]");
    expect_error("a: 1\nb: 2\nc: 3\n", &lim, KEEL_LIMIT_EXCEEDED, "collection longer", 3, 1, "");
    lim = keel_limits_default();
    lim.string_length = 3;
    expect_error("a: abcd\n", &lim, KEEL_LIMIT_EXCEEDED, "string longer than the limit (3 bytes)", 1, 4, "a");
    /* a deep hostile document stops at the limit instead of recursing */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 2);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\n';
    deep[2 * depth + 1] = '\0';
    expect_error(deep, NULL, KEEL_LIMIT_EXCEEDED, "nesting deeper than the limit (32)", 1, 33, NULL);
    free(deep);
}

static void yaml_read_empty_is_null(void **state)
{
    keel_node *n = NULL;
    assert_int_equal(read_text("", NULL, &n, NULL), KEEL_OK);
    assert_true(keel_node_is_null(n));
    keel_node_free(n);
    assert_int_equal(read_text("# only a comment\n", NULL, &n, NULL), KEEL_OK);
    assert_true(keel_node_is_null(n));
    keel_node_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yaml_read_tree_with_positions_and_styles),
        cmocka_unit_test(yaml_read_refuses_aliases_anchors_tags),
        cmocka_unit_test(yaml_read_core_tags_keep_their_meaning),
        cmocka_unit_test(yaml_read_refuses_documents_and_duplicates),
        cmocka_unit_test(yaml_read_duplicate_in_long_map),
        cmocka_unit_test(yaml_read_malformed_gives_position),
        cmocka_unit_test(yaml_read_limits_exceeded),
        cmocka_unit_test(yaml_read_empty_is_null),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
