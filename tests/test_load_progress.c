/* test_load_progress.c — keel_load_opts.progress: how far a load has got, for a status line. */
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

#define STEP ((size_t)64 << 10)

typedef struct calls {
    keel_load_progress at[512];
    size_t n;
    char file[64];
} calls;

static calls *calls_new(void)
{
    calls *c = calloc(1, sizeof *c);
    assert_non_null(c);
    return c;
}

static void record(void *ctx, const keel_load_progress *p)
{
    calls *c = ctx;
    assert_true(c->n < sizeof c->at / sizeof c->at[0]);
    c->at[c->n++] = *p;
    if (p->file) snprintf(c->file, sizeof c->file, "%s", p->file);
}

/* The default load options, with every progress call recorded into `c`. */
static keel_load_opts recording(calls *c)
{
    keel_load_opts o = keel_load_opts_default();
    o.progress = record;
    o.progress_ctx = c;
    return o;
}

/* `n` entities with a transform each, as keel writes them (root first): ~250 bytes each, into
 * `*text` (malloc'd) and `*len`. */
static void scene_text(size_t n, char **text, size_t *len)
{
    keel_world *w = keel_world_new("progress");
    keel_kind_id t = keel_kind_find("core:transform");
    for (size_t i = 0; i < n; i++) {
        keel_entity e;
        char name[32];
        snprintf(name, sizeof name, "Entity %zu", i);
        assert_int_equal(keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, t, NULL, NULL, NULL, NULL), KEEL_OK);
    }
    assert_int_equal(keel_scene_dump(w, text, len, NULL), KEEL_OK);
    keel_world_free(w);
}

/* What every load's calls have in common: a start at 0, counts that never go down, the
 * steps apart, one done and it last. */
static void check_calls(const calls *c, size_t total)
{
    assert_true(c->n >= 2);
    assert_int_equal(c->at[0].bytes, 0);
    assert_int_equal(c->at[0].entities, 0);
    assert_false(c->at[0].done);
    for (size_t i = 0; i < c->n; i++) {
        assert_int_equal(c->at[i].total, total);
        assert_true(c->at[i].bytes <= total);
        assert_int_equal(c->at[i].done, i == c->n - 1);
        if (i == 0) continue;
        assert_true(c->at[i].bytes >= c->at[i - 1].bytes);
        assert_true(c->at[i].entities >= c->at[i - 1].entities);
        if (i > 1 && i < c->n - 1) assert_true(c->at[i].bytes - c->at[i - 1].bytes >= STEP);
    }
}

static void load_progress_counts_up_to_the_whole_text(void **state)
{
    (void)state;
    size_t len;
    char *text = NULL;
    scene_text(2000, &text, &len);
    assert_true(len > 6 * STEP);
    calls *c = calls_new();
    keel_load_opts o = recording(c);
    o.file = "big.yaml";
    keel_world *w = NULL;
    assert_int_equal(keel_scene_parse(text, len, &o, &w, NULL), KEEL_OK);
    check_calls(c, len);
    assert_true(c->n >= len / STEP);      /* every 64 KiB or so... */
    assert_true(c->n <= len / STEP + 3); /* ...and no more often */
    const keel_load_progress *last = &c->at[c->n - 1];
    assert_int_equal(last->bytes, len);
    assert_int_equal(last->entities, 2000);
    assert_string_equal(c->file, "big.yaml");
    /* entities are built while the text is read */
    size_t mid = 0;
    for (size_t i = 1; i + 1 < c->n; i++)
        if (c->at[i].entities > 0 && c->at[i].entities < 2000) mid++;
    assert_true(mid >= 3);
    keel_world_free(w);
    free(c);
    free(text);
}

static void load_progress_ends_when_the_yaml_is_refused(void **state)
{
    (void)state;
    size_t len;
    char *text = NULL;
    scene_text(1000, &text, &len);
    text[len - len / 4] = '\t'; /* a tab where indentation goes: a libyaml refusal past the middle */
    calls *c = calls_new();
    keel_load_opts o = recording(c);
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_scene_parse(text, len, &o, &w, &d);
    assert_int_not_equal(st, KEEL_OK);
    assert_null(w);
    check_calls(c, len);
    assert_true(c->at[c->n - 1].bytes < len);
    assert_true(c->at[c->n - 1].entities > 0); /* built, then dropped: nothing published */
    assert_string_equal(c->file, "");
    keel_diags_free(&d);
    free(c);
    free(text);
}

static void load_progress_ends_when_the_scene_is_refused(void **state)
{
    (void)state;
    size_t len;
    char *text = NULL;
    scene_text(600, &text, &len);
    const char *bad = strstr(text + len / 2, "version: 1");
    assert_non_null(bad);
    text[bad - text + 9] = '0'; /* version: 0, valid YAML, a refused component */
    calls *c = calls_new();
    keel_load_opts o = recording(c);
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_scene_parse(text, len, &o, &w, &d), KEEL_INVALID_ARGUMENT);
    check_calls(c, len);
    assert_int_equal(c->at[c->n - 1].bytes, len);
    assert_int_equal(c->at[c->n - 1].entities, 600);
    keel_diags_free(&d);
    free(c);
    free(text);
}

/* Entities before the root: read whole, then built; the last call still counts them all. */
static void load_progress_entities_before_root(void **state)
{
    (void)state;
    size_t len;
    char *text = NULL;
    scene_text(500, &text, &len);
    const char *root = strstr(text, "root: []\n");
    assert_non_null(root);
    size_t at = (size_t)(root - text);
    memmove(text + at, text + at + 9, len - at - 9 + 1); /* drop it (and keep the NUL), then add it at the end */
    len -= 9;
    text = realloc(text, len + 10);
    memcpy(text + len, "root: []\n", 10);
    len += 9;
    calls *c = calls_new();
    keel_load_opts o = recording(c);
    keel_world *w = NULL;
    assert_int_equal(keel_scene_parse(text, len, &o, &w, NULL), KEEL_OK);
    check_calls(c, len);
    /* built as they are read all the same (the root is loaded after them): a whole list's tree
     * is never held */
    assert_true(c->n > 2);
    assert_true(c->at[c->n - 2].entities > 0);
    assert_int_equal(c->at[c->n - 1].entities, 500);
    keel_world_free(w);
    free(c);
    free(text);
}

static void load_progress_default_hook(void **state)
{
    (void)state;
    calls *c = calls_new();
    keel_load_progress_default(record, c);
    keel_load_opts o = keel_load_opts_default();
    assert_ptr_equal(o.progress, record);
    assert_ptr_equal(o.progress_ctx, c);
    keel_world *w = NULL;
    const char *text = "keel: 1\nscene: {uuid: 11111111-1111-4111-8111-111111111111}\nentities: []\n";
    assert_int_equal(keel_scene_parse(text, strlen(text), NULL, &w, NULL), KEEL_OK); /* NULL opts: the default */
    keel_world_free(w);
    check_calls(c, strlen(text));
    assert_int_equal(c->n, 2); /* a small text: the start and the end */
    keel_load_progress_default(NULL, NULL);
    o = keel_load_opts_default();
    assert_null(o.progress);
    assert_null(o.progress_ctx);
    c->n = 0;
    assert_int_equal(keel_scene_parse(text, strlen(text), NULL, &w, NULL), KEEL_OK);
    keel_world_free(w);
    assert_int_equal(c->n, 0);
    free(c);
}

static void load_progress_cooked_file(void **state)
{
    (void)state;
    size_t len;
    char *text = NULL;
    scene_text(50, &text, &len);
    keel_world *w = NULL;
    assert_int_equal(keel_scene_parse(text, len, NULL, &w, NULL), KEEL_OK);
    void *data = NULL;
    size_t clen = 0;
    assert_int_equal(keel_cook(w, NULL, &data, &clen, NULL), KEEL_OK);
    keel_world_free(w);
    char path[] = "/tmp/keel_progress_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, clen), (ssize_t)clen);
    close(fd);
    calls *c = calls_new();
    keel_load_opts o = recording(c);
    w = NULL;
    assert_int_equal(keel_scene_load(path, &o, &w, NULL), KEEL_OK);
    remove(path);
    check_calls(c, clen);
    assert_int_equal(c->n, 2);
    assert_int_equal(c->at[1].bytes, clen);
    assert_int_equal(c->at[1].entities, 50);
    assert_string_equal(c->file, path);
    keel_world_free(w);
    free(data);
    free(c);
    free(text);
}

int main(void)
{
    if (keel_init() != KEEL_OK) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(load_progress_counts_up_to_the_whole_text),
        cmocka_unit_test(load_progress_ends_when_the_yaml_is_refused),
        cmocka_unit_test(load_progress_ends_when_the_scene_is_refused),
        cmocka_unit_test(load_progress_entities_before_root),
        cmocka_unit_test(load_progress_default_hook),
        cmocka_unit_test(load_progress_cooked_file),
    };
    int rc = KEEL_TEST_RUN(tests, NULL, NULL);
    keel_shutdown();
    return rc;
}
