/* test_query.c — dense per-kind storage and cached multi-kind queries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "keel.h"

#include "world_fixture.h"

static void query_rows_hold_all_kinds_at_lowest_slot(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0), c = spawn(f, "C", 0);
    add(f, a, "core:transform");
    add(f, a, "core:audio_source");
    add(f, a, "core:audio_source");
    add(f, b, "core:transform");
    add(f, c, "core:transform");
    add(f, c, "core:audio_source");
    assert_int_equal(keel_remove(f->w, a, "core:audio_source", 0, NULL, &f->d), KEEL_OK);
    keel_kind_id kinds[] = { K("core:audio_source"), K("core:transform") };
    keel_query *q = keel_query_new(f->w, kinds, 2);
    assert_int_equal(keel_query_update(q), 2);
    for (size_t r = 0; r < 2; r++) {
        keel_entity e = keel_query_entity(q, r);
        assert_true(e == a || e == c);
        keel_comp ac, tc;
        assert_true(keel_get_comp(f->w, e, kinds[0], KEEL_SLOT_AUTO, &ac));
        assert_true(keel_get_comp(f->w, e, kinds[1], 0, &tc));
        assert_ptr_equal(keel_query_column(q, 0)[r], keel_record(f->w, ac));
        assert_ptr_equal(keel_query_column(q, 1)[r], keel_record(f->w, tc));
    }
    assert_int_equal(keel_query_entity(q, 2), KEEL_NO_ENTITY);
    assert_null(keel_query_column(q, 2));
    keel_query_free(q);
}

static void query_rebuilds_after_structural_change(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    add(f, a, "core:transform");
    add(f, b, "core:transform");
    keel_kind_id kinds[] = { K("core:transform"), K("core:camera") };
    keel_query *q = keel_query_new(f->w, kinds, 2);
    assert_int_equal(keel_query_update(q), 0);
    add(f, b, "core:camera");
    assert_int_equal(keel_query_update(q), 1);
    assert_int_equal(keel_query_entity(q, 0), b);
    add(f, a, "core:camera");
    assert_int_equal(keel_query_update(q), 2);
    assert_int_equal(keel_destroy(f->w, b, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_query_update(q), 1);
    assert_int_equal(keel_query_entity(q, 0), a);
    /* a field write is not structural: rows and records stay */
    void *rec = keel_query_column(q, 0)[0];
    keel_comp tc;
    assert_true(keel_get_comp(f->w, a, kinds[0], 0, &tc));
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { 4, 5, 6 } };
    assert_int_equal(keel_set(f->w, tc, 0, &v, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_query_update(q), 1);
    assert_ptr_equal(keel_query_column(q, 0)[0], rec);
    assert_true(((keel_transform *)rec)->position[1] == 5);
    keel_query_free(q);
}

static void query_excludes_the_root(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { 0 };
    kd.key = "test:score";
    kd.version = 1;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    add(f, keel_world_root(f->w), "test:score");
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:score");
    keel_kind_id k = K("test:score");
    keel_query *q = keel_query_new(f->w, &k, 1);
    assert_int_equal(keel_query_update(q), 1);
    assert_int_equal(keel_query_entity(q, 0), a);
    keel_query_free(q);
    assert_int_equal(keel_storage_count(f->w, k), 2); /* storage itself holds both */
    assert_int_equal(keel_storage_owner(f->w, k, 0), keel_world_root(f->w));
    assert_int_equal(keel_storage_owner(f->w, k, 1), a);
    assert_int_equal(keel_storage_slot(f->w, k, 1), 0);
    assert_int_equal(keel_storage_owner(f->w, k, 2), KEEL_NO_ENTITY);
    /* a handle out of storage stays right after its index is reused */
    assert_int_equal(keel_destroy(f->w, a, NULL, &f->d), KEEL_OK);
    keel_entity b = spawn(f, "B", 0);
    add(f, b, "test:score");
    assert_int_equal((uint32_t)b, (uint32_t)a);
    assert_int_equal(keel_storage_owner(f->w, k, 1), b);
    assert_false(keel_storage_owner(f->w, k, 1) == a);
}

static void query_storage_stays_dense_after_removal(void **state)
{
    fx *f = *state;
    keel_kind_id t = K("core:transform");
    keel_entity es[5];
    for (int i = 0; i < 5; i++) {
        es[i] = spawn(f, "E", 0);
        keel_comp c = add(f, es[i], "core:transform");
        keel_value v = { .type = KEEL_T_VEC3, .as.v = { i, 0, 0 } };
        assert_int_equal(keel_set(f->w, c, 0, &v, NULL, &f->d), KEEL_OK);
    }
    assert_int_equal(keel_remove(f->w, es[1], "core:transform", 0, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_storage_count(f->w, t), 4);
    for (size_t i = 0; i < 4; i++) {
        keel_entity owner = keel_storage_owner(f->w, t, i);
        assert_true(owner != es[1]);
        keel_comp c;
        assert_true(keel_get_comp(f->w, owner, t, 0, &c));
        assert_ptr_equal(keel_storage_record(f->w, t, i), keel_record(f->w, c));
        assert_int_equal(keel_storage_slot(f->w, t, i), 0);
    }
    /* each record still belongs to its own entity */
    for (int i = 0; i < 5; i++) {
        if (i == 1) continue;
        keel_comp c;
        assert_true(keel_get_comp(f->w, es[i], t, 0, &c));
        assert_true(((keel_transform *)keel_record(f->w, c))->position[0] == i);
    }
    assert_null(keel_storage_record(f->w, t, 4));
    assert_int_equal(keel_storage_owner(f->w, t, 9), KEEL_NO_ENTITY);
}

static void query_of_unused_kind_is_empty(void **state)
{
    fx *f = *state;
    keel_kind_id k = K("core:reflection_probe");
    keel_query *q = keel_query_new(f->w, &k, 1);
    assert_int_equal(keel_query_update(q), 0);
    keel_query_free(q);
    assert_int_equal(keel_storage_count(f->w, k), 0);
    q = keel_query_new(f->w, NULL, 0);
    assert_int_equal(keel_query_update(q), 0);
    keel_query_free(q);
}

static void query_ignores_changes_to_other_kinds(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "core:transform");
    add(f, a, "core:camera");
    keel_kind_id kinds[] = { K("core:transform"), K("core:camera") };
    keel_query *q = keel_query_new(f->w, kinds, 2);
    assert_int_equal(keel_query_update(q), 1);
    void **col = keel_query_column(q, 0);
    keel_entity b = spawn(f, "B", 0); /* structural, but not about these kinds */
    add(f, b, "core:transform"); /* a transform row: the query must rebuild but B lacks a camera */
    assert_int_equal(keel_query_update(q), 1);
    keel_entity c = spawn(f, "C", 0);
    (void)c;
    assert_int_equal(keel_query_update(q), 1);
    assert_ptr_equal(keel_query_column(q, 0), col);
    add(f, b, "core:camera");
    assert_int_equal(keel_query_update(q), 2);
    keel_query_free(q);
}

static void query_chunks_cover_aligned_rows(void **state)
{
    fx *f = *state;
    keel_kind_id kinds[] = { K("core:transform"), K("core:audio_source") };
    size_t stride[] = { keel_kind_record_size(kinds[0]), keel_kind_record_size(kinds[1]) };
    keel_entity es[300];
    for (int i = 0; i < 300; i++) {
        es[i] = spawn(f, "E", 0);
        add(f, es[i], "core:transform");
        add(f, es[i], "core:audio_source");
    }
    keel_query *q = keel_query_new(f->w, kinds, 2);
    assert_false(keel_query_aligned(q)); /* not built yet */
    assert_int_equal(keel_query_update(q), 300);
    assert_true(keel_query_aligned(q));
    static const size_t want_first[] = { 0, 64, 192 }, want_n[] = { 64, 128, 108 };
    size_t c = 0, n, first = 99, total = 0;
    void *base[2];
    for (; (n = keel_query_chunk(q, c, base, &first)) != 0; c++) {
        assert_true(c < 3);
        assert_int_equal(first, want_first[c]);
        assert_int_equal(n, want_n[c]);
        for (size_t r = 0; r < n; r++)
            for (size_t k = 0; k < 2; k++)
                assert_ptr_equal((unsigned char *)base[k] + r * stride[k], keel_query_column(q, k)[first + r]);
        total += n;
    }
    assert_int_equal(c, 3);
    assert_int_equal(total, 300);
    assert_int_equal(keel_query_chunk(q, 62, base, &first), 0);
    assert_int_equal(keel_query_chunk(q, 1000, base, &first), 0);

    /* a transform without a sound: storage row 300 is not a query row */
    keel_entity lone = spawn(f, "Lone", 0);
    add(f, lone, "core:transform");
    assert_int_equal(keel_query_update(q), 300);
    assert_false(keel_query_aligned(q));
    assert_int_equal(keel_query_chunk(q, 0, base, &first), 0);
    assert_int_equal(keel_destroy(f->w, lone, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_query_update(q), 300);
    assert_true(keel_query_aligned(q));

    /* a second sound on one entity: an extra row in that storage */
    add(f, es[5], "core:audio_source");
    assert_int_equal(keel_query_update(q), 300);
    assert_false(keel_query_aligned(q));
    assert_int_equal(keel_remove(f->w, es[5], "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_query_update(q), 300);
    assert_true(keel_query_aligned(q));

    /* destroying a middle entity swap-removes the same last entity into its rows: still aligned */
    assert_int_equal(keel_destroy(f->w, es[20], NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_query_update(q), 299);
    assert_true(keel_query_aligned(q));
    assert_int_equal(keel_query_entity(q, 20), es[299]);
    es[20] = es[299];

    /* removing one kind from a middle entity swaps rows apart: the query falls back */
    assert_int_equal(keel_remove(f->w, es[10], "core:audio_source", 0, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_query_update(q), 298);
    assert_false(keel_query_aligned(q));
    keel_query_free(q);
}

static void world_reserve_changes_nothing_visible(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    keel_uuid ua = keel_entity_uuid(f->w, a);
    uint64_t rev = keel_world_revision(f->w);
    keel_world_reserve(f->w, 5000);
    keel_world_reserve(f->w, 10); /* never shrinks */
    keel_world_reserve(NULL, 10);
    assert_int_equal(keel_world_revision(f->w), rev);
    assert_int_equal(keel_find(f->w, ua), a);
    keel_entity es[3000];
    for (int i = 0; i < 3000; i++) es[i] = spawn(f, "E", 0);
    for (int i = 0; i < 3000; i++) assert_int_equal(keel_find(f->w, keel_entity_uuid(f->w, es[i])), es[i]);
    assert_int_equal(keel_find(f->w, ua), a);
    assert_int_equal(keel_world_entity_count(f->w), 3001);
}

/* Past 64k entities the reservation and the UUID index take 2 MiB-aligned blocks (huge pages):
 * what was spawned before survives the move, and every UUID is still found. */
static void world_reserve_big_keeps_entities(void **state)
{
    fx *f = *state;
    enum { BIG = 70000 };
    keel_entity a = spawn(f, "A", 0);
    keel_entity b = spawn(f, "B", a);
    keel_uuid ua = keel_entity_uuid(f->w, a);
    keel_world_reserve(f->w, BIG);
    assert_int_equal(keel_find(f->w, ua), a);
    assert_int_equal(keel_entity_parent(f->w, b), a);
    assert_string_equal(keel_entity_name(f->w, b), "B");
    keel_entity *es = malloc(BIG * sizeof *es);
    for (int i = 0; i < BIG; i++) es[i] = spawn(f, "E", 0);
    keel_entity more = spawn(f, "past the reservation", 0); /* grows as before */
    for (int i = 0; i < BIG; i++) assert_int_equal(keel_find(f->w, keel_entity_uuid(f->w, es[i])), es[i]);
    assert_int_equal(keel_find(f->w, keel_entity_uuid(f->w, more)), more);
    assert_int_equal(keel_find(f->w, ua), a);
    assert_int_equal(keel_world_entity_count(f->w), BIG + 3);
    for (int i = 0; i < BIG; i += 2) assert_int_equal(keel_destroy(f->w, es[i], NULL, &f->d), KEEL_OK);
    for (int i = 1; i < BIG; i += 2) assert_int_equal(keel_find(f->w, keel_entity_uuid(f->w, es[i])), es[i]);
    free(es);
}

/* A reserved world's storage grows its row facts straight to the reservation past the first
 * page, and past it as before: every row keeps its owner, record and write counter. */
static void world_reserve_rows_keep_owners_and_counters(void **state)
{
    fx *f = *state;
    enum { RES = 150, ALL = 400 };
    keel_kind_id tk = K("core:transform");
    int pos = keel_kind_field(tk, "position");
    keel_world_reserve(f->w, RES);
    keel_entity es[ALL];
    keel_comp cs[ALL];
    for (int i = 0; i < ALL; i++) {
        es[i] = spawn(f, "E", 0);
        cs[i] = add(f, es[i], "core:transform");
        if (i == 10) { /* counters exist from here on: they grow with the rows */
            keel_value v = { .type = KEEL_T_VEC3, .as.v = { 1, 2, 3 } };
            assert_int_equal(keel_set(f->w, cs[3], pos, &v, NULL, &f->d), KEEL_OK);
        }
    }
    assert_int_equal(keel_storage_count(f->w, tk), ALL);
    for (int i = 0; i < ALL; i++) {
        assert_int_equal(keel_storage_owner(f->w, tk, (size_t)i), es[i]);
        assert_int_equal(keel_comp_counter(f->w, cs[i]), i == 3 ? 1 : 0);
    }
    keel_value out;
    assert_int_equal(keel_get(f->w, cs[3], pos, &out, &f->d), KEEL_OK);
    assert_true(out.as.v[0] == 1 && out.as.v[1] == 2 && out.as.v[2] == 3);
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { 7, 8, 9 } };
    assert_int_equal(keel_set(f->w, cs[ALL - 1], pos, &v, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_comp_counter(f->w, cs[ALL - 1]), 1);
}

static keel_entity victim;
static size_t seen_rows, seen_pending, seen_query;
static keel_query *hook_query;

static keel_status destroy_victim(const keel_call *call)
{
    if (!victim) return KEEL_OK;
    keel_status st = keel_destroy(call->world, victim, NULL, call->diags);
    victim = 0;
    keel_kind_id k = keel_kind_find("core:transform");
    seen_rows = keel_storage_count(call->world, k);
    seen_pending = 0;
    for (size_t i = 0; i < seen_rows; i++) {
        if (keel_storage_owner(call->world, k, i) != KEEL_NO_ENTITY) continue;
        seen_pending++;
    }
    seen_query = keel_query_update(hook_query);
    return st;
}

/* Rows freed during a step wait for the phase boundary with no owner; queries skip them. */
static void query_skips_rows_freed_during_a_step(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { .key = "test:reaper", .version = 1 };
    kd.hooks[KEEL_PHASE_UPDATE] = destroy_victim;
    keel_kind_id reaper;
    assert_int_equal(keel_kind_declare(&kd, &reaper, &f->d), KEEL_OK);
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    add(f, a, "core:transform");
    add(f, b, "core:transform");
    assert_int_equal(keel_add(f->w, a, reaper, NULL, NULL, NULL, &f->d), KEEL_OK);
    keel_kind_id kinds[] = { K("core:transform") };
    hook_query = keel_query_new(f->w, kinds, 1);
    assert_int_equal(keel_query_update(hook_query), 2);
    victim = b;
    assert_int_equal(keel_step(f->w, 1.0 / 60.0, &f->d), KEEL_OK);
    assert_int_equal(f->d.errors, 0);
    assert_int_equal(seen_rows, 2);    /* B's row still there inside the phase... */
    assert_int_equal(seen_pending, 1); /* ...without an owner */
    assert_int_equal(seen_query, 1);   /* and the query lists A only */
    assert_int_equal(keel_query_entity(hook_query, 0), a);
    assert_int_equal(keel_storage_count(f->w, kinds[0]), 1); /* freed at the boundary */
    assert_int_equal(keel_storage_owner(f->w, kinds[0], 0), a);
    assert_int_equal(keel_query_update(hook_query), 1);
    keel_query_free(hook_query);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(query_rows_hold_all_kinds_at_lowest_slot),
        T(query_rebuilds_after_structural_change),
        T(query_excludes_the_root),
        T(query_storage_stays_dense_after_removal),
        T(query_of_unused_kind_is_empty),
        T(query_ignores_changes_to_other_kinds),
        T(query_chunks_cover_aligned_rows),
        T(world_reserve_changes_nothing_visible),
        T(world_reserve_big_keeps_entities),
        T(world_reserve_rows_keep_owners_and_counters),
        T(query_skips_rows_freed_during_a_step),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
