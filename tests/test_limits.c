/* test_limits.c — the load limits held at set time: a save never writes what its own load refuses. */
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
#include "bind.h"   /* keel__kinds_limit */
#include "model/member.h" /* keel__entry */

#define KIB64 (64u * 1024u)

static const keel_field_desc notes_fields[] = {
    { .key = "a", .type = KEEL_T_STRING },
    { .key = "b", .type = KEEL_T_STRING },
    { .key = "scratch", .type = KEEL_T_STRING, .flags = KEEL_FIELD_TRANSIENT }, /* never saved */
    { .key = "x", .type = KEEL_T_FLOAT },
};
static keel_kind_id notes;

static int setup(void **state)
{
    (void)state;
    keel_init();
    keel_kind_desc k = { .key = "test:notes", .version = 1, .multiplicity = KEEL_MANY, .fields = notes_fields,
                         .field_count = sizeof notes_fields / sizeof *notes_fields };
    return keel_kind_declare(&k, &notes, NULL) == KEEL_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    keel_shutdown();
    return 0;
}

static char *text_of(size_t n, char c)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = 0;
    return s;
}

/* The world's canonical text loads back: what was accepted can be saved and read. */
static void assert_round_trip(const keel_world *w)
{
    char *text;
    size_t len;
    assert_int_equal(keel_scene_dump(w, &text, &len, NULL), KEEL_OK);
    keel_world *back = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_scene_parse(text, len, NULL, &back, &d);
    if (st) printf("# %s\n", d.items[0].message);
    assert_int_equal(st, KEEL_OK);
    keel_world_free(back);
    keel_diags_free(&d);
    free(text);
}

static void expect(keel_status st, keel_diags *d, keel_status want, const char *text)
{
    assert_int_equal(st, want);
    assert_true(d->count > 0);
    printf("# %s\n", d->items[0].message);
    assert_non_null(strstr(d->items[0].message, text));
    keel_diags_free(d);
    keel_diags_init(d);
}

static void limits_names_at_set_time(void **state)
{
    (void)state;
    char *ok = text_of(KIB64, 'n'), *over = text_of(KIB64 + 1, 'n');
    keel_world *w = keel_world_new("W");
    keel_diags d;
    keel_diags_init(&d);
    keel_entity e = KEEL_NO_ENTITY;
    expect(keel_spawn(w, over, KEEL_NO_ENTITY, NULL, &e, NULL, &d), &d, KEEL_LIMIT_EXCEEDED, "longer than the limit");
    assert_int_equal(e, KEEL_NO_ENTITY);
    assert_int_equal(keel_spawn(w, ok, KEEL_NO_ENTITY, NULL, &e, NULL, &d), KEEL_OK);
    expect(keel_rename(w, e, over, NULL, &d), &d, KEEL_LIMIT_EXCEEDED, "an entity name of 65537 bytes");
    assert_int_equal(strlen(keel_entity_name(w, e)), KIB64);
    expect(keel_world_set_name(w, over, &d), &d, KEEL_LIMIT_EXCEEDED, "a scene name of 65537 bytes");
    assert_string_equal(keel_world_name(w), "W");
    assert_int_equal(keel_world_set_name(w, ok, &d), KEEL_OK);
    assert_round_trip(w); /* names at the limit are saved and loaded */
    keel_world *w2 = keel_world_new(over);
    assert_string_equal(keel_world_name(w2), ""); /* as for a name that is not UTF-8 */
    keel_world_free(w2);
    keel_world_free(w);
    free(ok);
    free(over);
}

static keel_value str(const char *s)
{
    keel_value v = { .type = KEEL_T_STRING, .as.s = s };
    return v;
}

static void limits_string_bodies_at_set_time(void **state)
{
    (void)state;
    char *forty = text_of(40 * 1024, 's'), *tiny = "t";
    keel_world *w = keel_world_new("W");
    keel_entity e;
    keel_comp c;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_spawn(w, "E", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, notes, NULL, &c, NULL, NULL), KEEL_OK);
    keel_value v = str(forty);
    assert_int_equal(keel_set(w, c, 0, &v, NULL, &d), KEEL_OK);
    assert_int_equal(keel_set(w, c, 2, &v, NULL, &d), KEEL_OK); /* transient: not in the saved body */
    expect(keel_set(w, c, 1, &v, NULL, &d), &d, KEEL_LIMIT_EXCEEDED, "larger than the limit");
    keel_value got;
    assert_int_equal(keel_get(w, c, 1, &got, NULL), KEEL_OK);
    assert_string_equal(got.as.s, ""); /* the old value stays */
    v = str(tiny);
    assert_int_equal(keel_set(w, c, 1, &v, NULL, &d), KEEL_OK);
    keel_value x = { .type = KEEL_T_FLOAT, .as.f = -2.2250738585072014e-308 };
    assert_int_equal(keel_set(w, c, 3, &x, NULL, &d), KEEL_OK);
    assert_round_trip(w);

    /* A body that says the same at add time. */
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "a", keel_node_new_scalar(forty, KEEL_STYLE_DOUBLE));
    keel_node_put(body, "b", keel_node_new_scalar(forty, KEEL_STYLE_DOUBLE));
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.body = body;
    size_t before = keel_member_count(w, e);
    expect(keel_add(w, e, notes, &o, NULL, NULL, &d), &d, KEEL_LIMIT_EXCEEDED, "larger than the limit");
    assert_int_equal(keel_member_count(w, e), before);

    /* Just within the limit: accepted, saved, loaded. */
    keel_node_put(body, "b", NULL);
    char *rest = text_of(KIB64 - 40 * 1024 - 64, 'r');
    keel_node_put(body, "b", keel_node_new_scalar(rest, KEEL_STYLE_DOUBLE));
    assert_int_equal(keel_add(w, e, notes, &o, NULL, NULL, &d), KEEL_OK);
    assert_round_trip(w);
    keel_node_free(body);
    keel_diags_free(&d);
    keel_world_free(w);
    free(rest);
    free(forty);
}

static keel_node *deep(int levels)
{
    keel_node *n = keel_node_new_map();
    keel_node_put(n, "leaf", keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    for (int i = 1; i < levels; i++) {
        keel_node *up = keel_node_new_map();
        keel_node_put(up, "in", n);
        n = up;
    }
    return n;
}

static void limits_unknown_bodies_at_add_time(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("W");
    keel_entity e;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_spawn(w, "E", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);

    char *big = text_of(KIB64 + 1, 'u');
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "s", keel_node_new_scalar(big, KEEL_STYLE_DOUBLE));
    expect(keel_add_unknown(w, e, "mod:a", 1, KEEL_SLOT_AUTO, body, &d), &d, KEEL_LIMIT_EXCEEDED, "string");
    keel_node_free(body);

    body = keel_node_new_map();
    keel_node *seq = keel_node_new_seq();
    for (int i = 0; i < 65537; i++) keel_node_push(seq, keel_node_new_scalar("1", KEEL_STYLE_PLAIN));
    keel_node_put(body, "list", seq);
    expect(keel_add_unknown(w, e, "mod:a", 1, KEEL_SLOT_AUTO, body, &d), &d, KEEL_LIMIT_EXCEEDED, "collection");
    keel_node_free(body);

    body = keel_node_new_map();
    keel_node_put(body, "s", keel_node_new_scalar(big + 30000, KEEL_STYLE_DOUBLE));
    keel_node_put(body, "t", keel_node_new_scalar(big + 30000, KEEL_STYLE_DOUBLE));
    expect(keel_add_unknown(w, e, "mod:a", 1, KEEL_SLOT_AUTO, body, &d), &d, KEEL_LIMIT_EXCEEDED,
           "larger than the limit");
    keel_node_free(body);

    body = deep(28);
    expect(keel_add_unknown(w, e, "mod:a", 1, KEEL_SLOT_AUTO, body, &d), &d, KEEL_LIMIT_EXCEEDED, "nested deeper");
    keel_node_free(body);

    /* At the limits: accepted, saved, loaded. */
    body = deep(27);
    assert_int_equal(keel_add_unknown(w, e, "mod:deep", 1, KEEL_SLOT_AUTO, body, &d), KEEL_OK);
    keel_node_free(body);
    body = keel_node_new_map();
    keel_node_put(body, "s", keel_node_new_scalar(big + 1 + 64, KEEL_STYLE_DOUBLE));
    assert_int_equal(keel_add_unknown(w, e, "mod:wide", 1, KEEL_SLOT_AUTO, body, &d), KEEL_OK);
    keel_node_free(body);
    assert_round_trip(w);
    keel_diags_free(&d);
    keel_world_free(w);
    free(big);
}

/* The kinds limit: one past it is LimitExceeded, named, and declares nothing; a redeclaration at
 * the limit still works. The real limit (65,535: a kind id has 16 bits in a membership entry) is
 * reached through the test hook rather than by declaring that many kinds. */
static void limits_kinds(void **state)
{
    (void)state;
    static const keel_field_desc f[] = { { .key = "x", .type = KEEL_T_FLOAT } };
    keel_kind_desc k = { .key = "test:lim_a", .version = 1, .fields = f, .field_count = 1 };
    uint32_t saved = keel__kinds_limit;
    keel__kinds_limit = (uint32_t)keel_kind_count() + 1;
    keel_kind_id a = 0, b = 0;
    assert_int_equal(keel_kind_declare(&k, &a, NULL), KEEL_OK);
    k.key = "test:lim_b";
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_kind_declare(&k, &b, &d), KEEL_LIMIT_EXCEEDED);
    assert_true(d.count > 0 && strstr(d.items[0].message, "kinds limit") != NULL);
    keel_diags_free(&d);
    assert_int_equal(keel_kind_find("test:lim_b"), KEEL_NO_KIND);
    k.key = "test:lim_a";
    k.version = 2;
    assert_int_equal(keel_kind_declare(&k, &b, NULL), KEEL_OK); /* a redeclaration adds no kind */
    assert_int_equal(b, a);
    keel__kinds_limit = saved;
    assert_int_equal(keel__kinds_limit, KEEL__KIND_MAX);

    /* the highest id fits the entry's kind bits; an unknown entry's side record address
     * round-trips whatever its top bits (tagged pointers, addresses over 2^48) */
    keel__entry m;
    memset(&m, 0, sizeof m);
    m.kind = KEEL__KIND_MAX;
    assert_int_equal(m.kind, KEEL__KIND_MAX);
    m.kind = 0;
    static const uint64_t addrs[] = { UINT64_C(0x00007ffff7a01230), UINT64_C(0xff00123456789ab0),
                                      UINT64_C(0xfedcba9876543210), UINT64_C(0x0000000000000010) };
    for (size_t i = 0; i < sizeof addrs / sizeof *addrs; i++) {
        keel__unknown *u = (keel__unknown *)(uintptr_t)addrs[i]; /* never dereferenced */
        keel__entry_set_unk(&m, u);
        assert_true(keel__entry_unk(&m) == u);
        assert_int_equal(m.kind, 0);
        assert_true(m.enabled == 0 && m.fresh == 0);
    }
    /* the serial's 42 bits span two words; the kind and flags beside them stay put */
    m.kind = KEEL__KIND_MAX;
    m.slotted = 1;
    keel__entry_set_serial(&m, KEEL__SERIAL_MAX);
    assert_true(keel__entry_lserial(&m) == KEEL__SERIAL_MAX);
    assert_int_equal(m.kind, KEEL__KIND_MAX);
    assert_true(m.slotted == 1 && m.enabled == 0 && m.fresh == 0 && m.faulted == 0);
    keel__entry_set_serial(&m, UINT64_C(0x2AB00000001)); /* both words: high bits and low */
    assert_true(keel__entry_lserial(&m) == UINT64_C(0x2AB00000001));
    assert_int_equal(sizeof m, 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limits_names_at_set_time),
        cmocka_unit_test(limits_string_bodies_at_set_time),
        cmocka_unit_test(limits_unknown_bodies_at_add_time),
        cmocka_unit_test(limits_kinds),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
