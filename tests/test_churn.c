/* test_churn.c — handle churn: stale handles keep failing across 100,000 spawn/destroy cycles and index reuse. */
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
#include "model/world.h"

#include "world_fixture.h"

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
    f->w->ents[i].gen_count = KEEL__GEN_COUNT - 1; /* pretend it was reused ~a million times */
    keel_entity h = keel__handle(f->w, i);
    assert_true(keel_alive(f->w, h));
    assert_int_equal(keel_destroy(f->w, h, NULL, &f->d), KEEL_OK);
    keel_entity h2 = spawn(f, "E2", 0);
    assert_int_equal((uint32_t)h2, i);
    assert_int_equal((uint32_t)(h2 >> 32), KEEL__GEN(f->w->tag, KEEL__GEN_COUNT));
    assert_int_equal(keel_destroy(f->w, h2, NULL, &f->d), KEEL_OK);
    /* count KEEL__GEN_COUNT is the last: the index is retired, never reused */
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

/* Membership arrays come from pooled chunks that double as they are added: many entities with
 * a few components each take a handful of large allocations, and every entry stays its own. */
static void churn_membership_pools_grow_geometrically(void **state)
{
    fx *f = *state;
    enum { N = 20000 };
    keel_kind_desc kd = { .key = "churn:tag", .version = 1, .multiplicity = KEEL_MANY };
    keel_kind_id tag;
    assert_int_equal(keel_kind_declare(&kd, &tag, NULL), KEEL_OK);
    keel_entity *es = calloc(N, sizeof *es);
    for (int i = 0; i < N; i++) {
        es[i] = spawn(f, "E", 0);
        for (int j = 0; j <= i % 5; j++) add(f, es[i], "churn:tag"); /* 1..5: capacities 2, 4, 8 */
    }
    /* 64 KiB chunks would take ~80 here (2.9 MiB of entries over three classes); doubling ones ~15 */
    assert_true(f->w->entry_chunk_count <= 20);
    for (int i = 0; i < N; i += 7) {
        keel_member m;
        size_t n = 0;
        while (keel_member_at(f->w, es[i], n, &m)) {
            assert_int_equal(m.slot, n);
            n++;
        }
        assert_int_equal(n, (size_t)(i % 5) + 1);
    }
    for (int i = 0; i < N; i += 2) assert_int_equal(keel_destroy(f->w, es[i], NULL, &f->d), KEEL_OK);
    for (int i = 1; i < N; i += 2) {
        keel_comp c;
        assert_true(keel_get_comp(f->w, es[i], tag, (uint32_t)(i % 5), &c));
        assert_false(keel_get_comp(f->w, es[i], tag, (uint32_t)(i % 5) + 1, &c));
    }
    free(es);
}

/* Fresh membership blocks are carved off the newest chunk as entities need them (the rest of
 * the chunk is never written, so never faulted in), lowest address first; a block given back
 * is reused before the chunk's tail. */
static void churn_membership_blocks_carved_as_needed(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0), c = spawn(f, "C", 0);
    add(f, a, "core:transform");
    add(f, b, "core:transform");
    assert_int_equal(f->w->entry_chunk_count, 1);
    keel__entry *ma = keel__members(f->w, &f->w->ents[(uint32_t)a]),
                *mb = keel__members(f->w, &f->w->ents[(uint32_t)b]);
    assert_ptr_equal(mb, ma + 2); /* capacity 2: next block, next address */
    assert_int_equal(f->w->entry_next[0], 4); /* the rest of the chunk untouched */
    assert_int_equal(f->w->entry_end[0], 4096);
    assert_int_equal(f->w->entry_chunks[0], 1);
    assert_int_equal(keel_destroy(f->w, a, NULL, &f->d), KEEL_OK);
    add(f, c, "core:transform");
    assert_ptr_equal(keel__members(f->w, &f->w->ents[(uint32_t)c]), ma); /* given back first */
    assert_int_equal(f->w->entry_next[0], 4);
    keel_entity d = spawn(f, "D", 0);
    add(f, d, "core:transform");
    assert_ptr_equal(keel__members(f->w, &f->w->ents[(uint32_t)d]), mb + 2);
    keel_comp cc;
    assert_true(keel_get_comp(f->w, b, K("core:transform"), 0, &cc));
    assert_true(keel_get_comp(f->w, c, K("core:transform"), 0, &cc));
    assert_true(keel_get_comp(f->w, d, K("core:transform"), 0, &cc));
}

/* Blocks never move: a class's chunks double as it grows (the first holds 2,048 two-entry
 * blocks), every block stays where it was handed out, and one entity's stack growing into a
 * bigger class leaves every other entity's entries in place. */
static void churn_membership_blocks_stay_put_across_chunks(void **state)
{
    fx *f = *state;
    enum { N = 15000 }; /* chunks of 2,048, 4,096 and 8,192 blocks, then a fourth */
    keel_kind_desc kd = { .key = "churn:mark", .version = 1, .multiplicity = KEEL_MANY };
    keel_kind_id mark;
    assert_int_equal(keel_kind_declare(&kd, &mark, NULL), KEEL_OK);
    keel_entity *es = calloc(N, sizeof *es);
    keel__entry **at = calloc(N, sizeof *at);
    for (int i = 0; i < N; i++) {
        es[i] = spawn(f, "E", 0);
        add(f, es[i], "churn:mark");
        at[i] = keel__members(f->w, &f->w->ents[(uint32_t)es[i]]);
    }
    assert_int_equal(f->w->entry_chunks[0], 4);
    assert_int_equal(f->w->entry_chunk_count, 4);
    assert_ptr_equal(at[2047], at[0] + 2 * 2047); /* one chunk: consecutive blocks */
    assert_ptr_equal(at[2048 + 4095], at[2048] + 2 * 4095);
    assert_ptr_equal(at[6144 + 8191], at[6144] + 2 * 8191);
    for (int i = 0; i < N; i++) assert_ptr_equal(keel__members(f->w, &f->w->ents[(uint32_t)es[i]]), at[i]);
    /* every third entity grows to 3 then 5 entries (classes 1 and 2): the rest stay put */
    for (int i = 0; i < N; i += 3)
        for (int j = 0; j < 4; j++) add(f, es[i], "churn:mark");
    for (int i = 0; i < N; i++) {
        keel__entry *m = keel__members(f->w, &f->w->ents[(uint32_t)es[i]]);
        if (i % 3) assert_ptr_equal(m, at[i]);
        assert_int_equal(keel_member_count(f->w, es[i]), i % 3 ? 1 : 5);
        for (uint32_t s = 0; s < (i % 3 ? 1u : 5u); s++) {
            keel_comp c;
            assert_true(keel_get_comp(f->w, es[i], mark, s, &c));
            assert_int_equal(
                keel_storage_owner(f->w, mark, keel__entry_find(f->w, &f->w->ents[(uint32_t)es[i]], mark, s)->row),
                es[i]);
        }
    }
    /* the blocks they left are handed out again before any new one */
    uint32_t next = f->w->entry_next[0];
    keel_entity late = spawn(f, "Late", 0);
    add(f, late, "churn:mark");
    assert_int_equal(f->w->entry_next[0], next);
    assert_ptr_equal(keel__members(f->w, &f->w->ents[(uint32_t)late]), at[N - 1 - (N - 1) % 3]);
    free(at);
    free(es);
}

/* The most components an entity may hold (256, the largest block): all readable, the next one
 * refused, and the block reused whole once the entity is gone. */
static void churn_entity_with_the_most_components(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { .key = "churn:many", .version = 1, .multiplicity = KEEL_MANY };
    keel_kind_id many;
    assert_int_equal(keel_kind_declare(&kd, &many, NULL), KEEL_OK);
    keel_entity e = spawn(f, "Full", 0), other = spawn(f, "Other", 0);
    add(f, other, "churn:many");
    for (int i = 0; i < 256; i++) add(f, e, "churn:many");
    assert_int_equal(keel_member_count(f->w, e), 256);
    assert_diag(keel_add(f->w, e, many, NULL, NULL, NULL, &f->d), &f->d, KEEL_LIMIT_EXCEEDED,
                "components per entity limit (256) exceeded");
    keel_node *body = keel_node_new_map();
    assert_diag(keel_add_unknown(f->w, e, "mod:gone", 1, KEEL_SLOT_AUTO, body, &f->d), &f->d, KEEL_LIMIT_EXCEEDED,
                "components per entity limit (256) exceeded");
    keel_node_free(body);
    for (uint32_t s = 0; s < 256; s++) {
        keel_member m;
        assert_true(keel_member_at(f->w, e, s, &m));
        assert_int_equal(m.slot, s);
    }
    keel__entry *full = keel__members(f->w, &f->w->ents[(uint32_t)e]);
    assert_int_equal(keel__block_cap(f->w->ents[(uint32_t)e].block), 256);
    assert_int_equal(keel_remove(f->w, e, "churn:many", 100, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_member_count(f->w, e), 255);
    add(f, e, "churn:many");
    assert_int_equal(keel_member_count(f->w, e), 256);
    assert_int_equal(keel_destroy(f->w, e, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_storage_count(f->w, many), 1);
    keel_entity again = spawn(f, "Again", 0);
    for (int i = 0; i < 130; i++) add(f, again, "churn:many"); /* grows 2, 4, ... 256 */
    assert_ptr_equal(keel__members(f->w, &f->w->ents[(uint32_t)again]), full);
    keel_comp c;
    assert_true(keel_get_comp(f->w, other, many, 0, &c));
    assert_int_equal(keel_member_count(f->w, other), 1);
}

/* Play and stop give the world a new tag: every handle of before, and those taken while playing,
 * fail afterwards, even at an index reused since; handles of after work. */
static void churn_stale_handles_after_retag(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    add(f, a, "core:transform");
    assert_int_equal(keel_destroy(f->w, b, NULL, &f->d), KEEL_OK);
    keel_entity b2 = spawn(f, "B2", 0); /* b's index again */
    assert_int_equal((uint32_t)b2, (uint32_t)b);
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
    keel_entity p = spawn(f, "WhilePlaying", 0);
    assert_int_equal(keel_destroy(f->w, b2, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    check_stale(f, b);
    check_stale(f, p);
    assert_false(keel_alive(f->w, a));
    assert_false(keel_alive(f->w, b2));
    keel_entity a2 = keel_find(f->w, keel_entity_uuid(f->w, keel_find_name(f->w, "A")));
    assert_int_equal((uint32_t)a2, (uint32_t)a);
    assert_true(a2 != a);
    assert_int_equal((uint32_t)(a2 >> 32), KEEL__GEN(f->w->tag, (uint32_t)(a >> 32) & KEEL__GEN_COUNT));
    keel_comp c;
    assert_true(keel_get_comp(f->w, a2, K("core:transform"), 0, &c));
    assert_false(keel_get_comp(f->w, a, K("core:transform"), 0, &c));
    keel_entity b3 = keel_find_name(f->w, "B2");
    assert_true(keel_alive(f->w, b3)); /* stop put it back */
    assert_int_equal(keel_destroy(f->w, b3, NULL, &f->d), KEEL_OK);
    keel_entity b4 = spawn(f, "B4", 0);
    assert_int_equal((uint32_t)b4, (uint32_t)b);
    check_stale(f, b3);
    check_stale(f, b2);
    assert_true(keel_alive(f->w, b4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(churn_stale_handles_fail_after_reuse),
        T(churn_index_retired_before_generation_wraps),
        T(churn_add_remove_keeps_storage_dense),
        T(churn_membership_pools_grow_geometrically),
        T(churn_membership_blocks_carved_as_needed),
        T(churn_membership_blocks_stay_put_across_chunks),
        T(churn_entity_with_the_most_components),
        T(churn_stale_handles_after_retag),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
