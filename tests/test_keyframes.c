/* test_keyframes.c — a recording's keyframes as diffs against the one before (game/keydelta.c):
 * the byte delta itself, diff keyframes rebuilt to the very encoding the recorder took, a replay
 * seeking to every keyframe and verifying, damage inside a diff refused, and files whose every
 * keyframe is whole (as keel wrote them before diffs) still read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>

#include "keel_test.h"
#include "keel.h"
#include "bind.h"
#include "game/record.h"

#define FRAMES 100
#define EVERY 5

static keel_kind_id g_walk, g_still;
static char g_path[256];
static uint64_t g_hashes[FRAMES + 1];
static keel__buf g_enc[FRAMES + 1]; /* the world's encoding at each keyframe's frame, as recorded */

static keel_status walk_update(const keel_call *c)
{
    keel_value v;
    keel_get(c->world, c->comp, 0, &v, NULL);
    v.as.f += c->dt;
    return keel_set(c->world, c->comp, 0, &v, NULL, c->diags);
}

/* One walker among 40 still entities; between steps an entity is spawned (frame 23), one renamed
 * (41), one destroyed (62), a field written (77): every keyframe after differs a little. */
static void record_session(void)
{
    keel_world *w = keel_world_new("Keyframes");
    keel_world_set_seed(w, 3);
    keel_entity e, still[40];
    assert_int_equal(keel_spawn(w, "walker", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, g_walk, NULL, NULL, NULL, NULL), KEEL_OK);
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "still %d", i);
        keel_comp c;
        assert_int_equal(keel_spawn(w, name, i ? still[i / 2] : KEEL_NO_ENTITY, NULL, &still[i], NULL, NULL),
                         KEEL_OK);
        assert_int_equal(keel_add(w, still[i], g_still, NULL, &c, NULL, NULL), KEEL_OK);
        keel_value v = { .type = KEEL_T_INT, .as.i = i * 1000 };
        assert_int_equal(keel_set(w, c, 0, &v, NULL, NULL), KEEL_OK);
    }
    keel_recorder *r = NULL;
    assert_int_equal(keel__record_start(w, g_path, EVERY, NULL, NULL, &r, NULL), KEEL_OK);
    keel__keyframe_encode(w, &g_enc[0]);
    g_hashes[0] = keel__world_hash(w);
    for (int f = 1; f <= FRAMES; f++) {
        if (f == 23) assert_int_equal(keel_spawn(w, "late", still[3], NULL, NULL, NULL, NULL), KEEL_OK);
        if (f == 41) assert_int_equal(keel_rename(w, still[7], "renamed", NULL, NULL), KEEL_OK);
        if (f == 62) assert_int_equal(keel_destroy(w, still[1], NULL, NULL), KEEL_OK);
        if (f == 77) {
            keel_value v = { .type = KEEL_T_INT, .as.i = -5 };
            keel_comp c;
            assert_true(keel_get_comp(w, still[30], g_still, 0, &c));
            assert_int_equal(keel_set(w, c, 0, &v, NULL, NULL), KEEL_OK);
        }
        assert_int_equal(keel_step(w, 1.0 / 60, NULL), KEEL_OK);
        g_hashes[f] = keel__world_hash(w);
        if (f % EVERY == 0) keel__keyframe_encode(w, &g_enc[f]);
    }
    assert_int_equal(keel__record_stop(r, NULL), KEEL_OK);
    keel_world_free(w);
}

static int setup(void **state)
{
    (void)state;
    if (keel_init() != KEEL_OK) return -1;
    static const keel_field_desc wf[] = { { .key = "x", .type = KEEL_T_FLOAT } };
    keel_kind_desc wk = { .key = "kf:walk", .version = 1, .multiplicity = KEEL_ONE, .fields = wf, .field_count = 1 };
    wk.hooks[KEEL_PHASE_UPDATE] = walk_update;
    static const keel_field_desc sf[] = { { .key = "n", .type = KEEL_T_INT },
                                          { .key = "label", .type = KEEL_T_STRING } };
    keel_kind_desc sk = { .key = "kf:still", .version = 1, .multiplicity = KEEL_ONE, .fields = sf, .field_count = 2 };
    if (keel_kind_declare(&wk, &g_walk, NULL) || keel_kind_declare(&sk, &g_still, NULL)) return -1;
    snprintf(g_path, sizeof g_path, "/tmp/keel_test_keyframes_%d.keelrec", (int)getpid());
    record_session();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int f = 0; f <= FRAMES; f++) free(g_enc[f].p);
    remove(g_path);
    keel_shutdown();
    return 0;
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len);
    assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* The keyframe chunks of a recording, read as record.h lays them out; at[i]: the chunk's offset. */
static size_t keyframes_of(const uint8_t *p, size_t n, keel__rec_key *keys, size_t *at, size_t cap)
{
    size_t pos = KEEL__REC_MAGIC_LEN, nk = 0;
    while (pos + 9 <= n) {
        uint8_t tag = p[pos];
        uint32_t len = keel__get_u32(p + pos + 1);
        const uint8_t *pay = p + pos + 5;
        if (tag == KEEL__CH_KEYFRAME || tag == KEEL__CH_KEYDIFF) {
            assert_true(nk < cap);
            keel__rec_key *k = &keys[nk];
            memset(k, 0, sizeof *k);
            k->frame = keel__get_u64(pay);
            k->pending = keel__get_u32(pay + 8);
            k->raw_len = keel__get_u32(pay + 12);
            size_t head = 16;
            if (tag == KEEL__CH_KEYDIFF) {
                k->diff = true;
                assert_true(keel__get_u64(pay + 16) == keys[nk - 1].frame); /* against the one before */
                k->delta_len = keel__get_u32(pay + 24);
                head = 28;
            }
            k->p = pay + head;
            k->len = len - (uint32_t)head;
            at[nk++] = pos;
        }
        pos += 9 + (size_t)len;
    }
    assert_int_equal(pos, n);
    return nk;
}

static void keyframes_diffs_rebuild_the_recorded_encoding(void **state)
{
    (void)state;
    size_t n;
    uint8_t *file = read_file(g_path, &n);
    keel__rec_key keys[64];
    size_t at[64];
    size_t nk = keyframes_of(file, n, keys, at, 64);
    assert_int_equal(nk, FRAMES / EVERY + 1);
    size_t diffs = 0, run = 0, whole_bytes = 0, diff_bytes = 0;
    for (size_t i = 0; i < nk; i++) {
        assert_true(keys[i].frame == i * EVERY);
        run = keys[i].diff ? run + 1 : 0;
        assert_true(run <= KEEL__REC_DIFF_RUN);
        diffs += keys[i].diff;
        if (keys[i].diff) diff_bytes += keys[i].len;
        else whole_bytes += keys[i].len;
        uint8_t *raw = NULL;
        assert_int_equal(keel__keyframe_raw(keys, i, &raw, NULL), KEEL_OK);
        const keel__buf *want = &g_enc[keys[i].frame];
        assert_int_equal(keys[i].raw_len, want->len);
        assert_memory_equal(raw, want->p, want->len);
        free(raw);
    }
    assert_false(keys[0].diff);
    assert_true(diffs >= nk - 1 - (nk - 1) / (KEEL__REC_DIFF_RUN + 1)); /* small changes: a diff whenever allowed */
    assert_true(diff_bytes / diffs * 4 < whole_bytes / (nk - diffs));   /* each far smaller than a whole one */
    free(file);
}

static void keyframes_seek_to_every_keyframe_and_verify(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__replay_open(g_path, w, NULL, &rp, &d), KEEL_OK);
    assert_int_equal(keel__replay_frames(rp), FRAMES);
    uint64_t frames[64];
    size_t nk = keel__replay_keyframes(rp, frames, 64);
    assert_int_equal(nk, FRAMES / EVERY + 1);
    for (size_t i = 0; i < nk; i++) {
        assert_int_equal(keel__replay_seek(rp, FRAMES, &d), KEEL_OK); /* past it: the seek restores */
        assert_int_equal(keel__replay_seek(rp, frames[i], &d), KEEL_OK);
        assert_true(keel__replay_hash(rp) == g_hashes[frames[i]]);
        if (frames[i] + 3 <= FRAMES) { /* and on from it, verified frame by frame */
            assert_int_equal(keel__replay_step(rp, 3, &d), KEEL_OK);
            assert_true(keel__replay_hash(rp) == g_hashes[frames[i] + 3]);
        }
    }
    assert_int_equal(d.count, 0);
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void keyframes_damage_inside_a_diff_is_refused(void **state)
{
    (void)state;
    size_t n;
    uint8_t *file = read_file(g_path, &n);
    keel__rec_key keys[64];
    size_t at[64];
    size_t nk = keyframes_of(file, n, keys, at, 64), i = 1;
    while (i < nk && !keys[i].diff) i++;
    assert_true(i < nk);
    char path[300];
    snprintf(path, sizeof path, "%s.damaged", g_path);

    /* a flipped byte in the delta: the chunk's CRC fails, refused with the chunk's offset */
    size_t flip = (size_t)(keys[i].p - file) + keys[i].len / 2;
    file[flip] ^= 0x10;
    write_file(path, file, n);
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__replay_open(path, w, NULL, &rp, &d), KEEL_PARSE_ERROR);
    char want[64];
    snprintf(want, sizeof want, "byte offset %zu:", at[i]);
    assert_non_null(strstr(d.items[0].message, want));
    assert_int_equal(keel_world_entity_count(w), 0);
    keel_diags_free(&d);

    /* the same damage under a CRC made to match: opens, and reaching that keyframe refuses */
    uint32_t len = keel__get_u32(file + at[i] + 1);
    keel__put_u32(file + at[i] + 5 + len, (uint32_t)crc32_z(0L, file + at[i], 5 + (size_t)len));
    write_file(path, file, n);
    keel_diags_init(&d);
    assert_int_equal(keel__replay_open(path, w, NULL, &rp, &d), KEEL_OK);
    assert_int_equal(keel__replay_seek(rp, FRAMES, &d), KEEL_OK); /* far past it */
    keel_status st = keel__replay_seek(rp, keys[i].frame, &d);
    assert_int_equal(st, KEEL_PARSE_ERROR);
    snprintf(want, sizeof want, "keyframe %llu", (unsigned long long)keys[i].frame);
    assert_non_null(strstr(d.items[d.count - 1].message, want));
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
    keel_diags_free(&d);
    remove(path);
    free(file);
}

/* Every diff chunk written whole, as keel wrote keyframes before diffs: the file still replays. */
static void keyframes_whole_ones_still_read(void **state)
{
    (void)state;
    size_t n;
    uint8_t *file = read_file(g_path, &n);
    keel__rec_key keys[64];
    size_t at[64];
    size_t nk = keyframes_of(file, n, keys, at, 64);
    keel__buf out = { 0 };
    size_t pos = 0;
    for (size_t i = 0; i < nk; i++) {
        keel__buf_bytes(&out, file + pos, at[i] - pos);
        pos = at[i] + 9 + keel__get_u32(file + at[i] + 1);
        uint8_t *raw = NULL;
        assert_int_equal(keel__keyframe_raw(keys, i, &raw, NULL), KEEL_OK);
        keel__buf pay = { 0 };
        keel__buf_u64(&pay, keys[i].frame);
        keel__buf_u32(&pay, keys[i].pending);
        keel__buf_u32(&pay, keys[i].raw_len);
        uLongf zlen = compressBound(keys[i].raw_len);
        size_t hat = pay.len;
        keel__buf_grow(&pay, zlen);
        assert_int_equal(compress2(pay.p + hat, &zlen, raw, keys[i].raw_len, 6), Z_OK);
        pay.len = hat + zlen;
        keel__chunk_put(&out, KEEL__CH_KEYFRAME, pay.p, pay.len);
        free(pay.p);
        free(raw);
    }
    keel__buf_bytes(&out, file + pos, n - pos);
    char path[300];
    snprintf(path, sizeof path, "%s.whole", g_path);
    write_file(path, out.p, out.len);
    keel__rec_key keys2[64];
    size_t at2[64];
    assert_int_equal(keyframes_of(out.p, out.len, keys2, at2, 64), nk);
    for (size_t i = 0; i < nk; i++) assert_false(keys2[i].diff);

    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__replay_open(path, w, NULL, &rp, &d), KEEL_OK);
    for (size_t i = nk; i-- > 0;) {
        assert_int_equal(keel__replay_seek(rp, keys[i].frame, &d), KEEL_OK);
        assert_true(keel__replay_hash(rp) == g_hashes[keys[i].frame]);
    }
    assert_int_equal(keel__replay_seek(rp, FRAMES, &d), KEEL_OK);
    assert_true(keel__replay_hash(rp) == g_hashes[FRAMES]);
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
    keel_diags_free(&d);
    remove(path);
    free(out.p);
    free(file);
}

static void keyframes_delta_round_trips_and_is_bounded(void **state)
{
    (void)state;
    enum { N = 5000 };
    uint8_t *old = malloc(N), *cur = malloc(N + 64), *back = malloc(N + 64);
    uint64_t s = 12345;
    for (size_t i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        old[i] = (uint8_t)(s >> 56);
    }
    /* cur: old with a few bytes changed, 40 inserted and 20 cut */
    memcpy(cur, old, 1000);
    memcpy(cur + 1000, "forty bytes inserted in the middle here!", 40);
    memcpy(cur + 1040, old + 1000, 2000);
    memcpy(cur + 3040, old + 3020, N - 3020);
    size_t clen = N + 20;
    cur[17] ^= 1;
    cur[4000] ^= 0xff;
    keel__buf ops = { 0 };
    keel__delta_encode(old, N, cur, clen, &ops);
    assert_true(ops.len < 200); /* a handful of operations, not the bytes */
    const char *err = "unset";
    assert_true(keel__delta_apply(old, N, ops.p, ops.len, back, clen, &err));
    assert_null(err);
    assert_memory_equal(back, cur, clen);

    /* bounded: a length it does not fill, one it overruns, a COPY outside old, a cut operation */
    assert_false(keel__delta_apply(old, N, ops.p, ops.len, back, clen + 1, &err));
    assert_non_null(err);
    assert_false(keel__delta_apply(old, N, ops.p, ops.len, back, clen - 1, &err));
    assert_false(keel__delta_apply(old, N - 100, ops.p, ops.len, back, clen, &err));
    assert_false(keel__delta_apply(old, N, ops.p, ops.len - 1, back, clen, &err));
    uint8_t bad[] = { 7 };
    assert_false(keel__delta_apply(old, N, bad, 1, back, 0, &err));
    assert_string_equal(err, "unknown delta operation");

    /* unrelated bytes: all ADD, still exact; and empty inputs */
    keel__buf ops2 = { 0 };
    keel__delta_encode(old, N, old + 1, 0, &ops2);
    assert_true(keel__delta_apply(old, N, ops2.p, ops2.len, back, 0, &err));
    keel__buf ops3 = { 0 };
    keel__delta_encode(NULL, 0, cur, clen, &ops3);
    assert_true(keel__delta_apply(NULL, 0, ops3.p, ops3.len, back, clen, &err));
    assert_memory_equal(back, cur, clen);
    free(ops.p);
    free(ops2.p);
    free(ops3.p);
    free(old);
    free(cur);
    free(back);
}

/* A keyframe holds every field type in binary, unknown components with and without a body, a
 * child, disabled entities and components: applied to an empty world, it gives a world whose own
 * keyframe is the same bytes, whose hash and scene text are the same; cut anywhere, it is refused
 * and leaves the world empty. */
static void keyframes_every_field_type_round_trips(void **state)
{
    (void)state;
    static const char *const lvl[] = { "low", "high" };
    static const keel_field_desc ef[] = {
        { .key = "b", .type = KEEL_T_BOOL },      { .key = "i", .type = KEEL_T_INT },
        { .key = "f", .type = KEEL_T_FLOAT },     { .key = "v2", .type = KEEL_T_VEC2 },
        { .key = "v3", .type = KEEL_T_VEC3 },     { .key = "v4", .type = KEEL_T_VEC4 },
        { .key = "q", .type = KEEL_T_QUAT },      { .key = "c", .type = KEEL_T_COLOR },
        { .key = "en", .type = KEEL_T_ENUM, .choices = lvl, .choice_count = 2 },
        { .key = "s", .type = KEEL_T_STRING },    { .key = "a", .type = KEEL_T_ASSET },
        { .key = "ref", .type = KEEL_T_ENTITY },  { .key = "nobody", .type = KEEL_T_ENTITY },
        { .key = "rt", .type = KEEL_T_FLOAT, .flags = KEEL_FIELD_RUNTIME },
    };
    static keel_kind_id every;
    if (!every) {
        keel_kind_desc k = { .key = "kf:every", .version = 2, .multiplicity = KEEL_ONE, .fields = ef,
                             .field_count = sizeof ef / sizeof ef[0] };
        assert_int_equal(keel_kind_declare(&k, &every, NULL), KEEL_OK);
    }
    keel_world *w = keel_world_new("Every");
    keel_entity top, kid;
    keel_comp c;
    assert_int_equal(keel_spawn(w, "top \"quoted\" é", KEEL_NO_ENTITY, NULL, &top, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_spawn(w, "kid", top, NULL, &kid, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, kid, every, NULL, &c, NULL, NULL), KEEL_OK);
    keel_value v[14];
    memset(v, 0, sizeof v);
    v[0] = (keel_value){ .type = KEEL_T_BOOL, .as.b = true };
    v[1] = (keel_value){ .type = KEEL_T_INT, .as.i = -9007199254740993LL };
    v[2] = (keel_value){ .type = KEEL_T_FLOAT, .as.f = 0.1 + 0.2 };
    v[3] = (keel_value){ .type = KEEL_T_VEC2, .as.v = { 1.0 / 3, -2.5e-300 } };
    v[4] = (keel_value){ .type = KEEL_T_VEC3, .as.v = { 1e300, -0.0, 7 } };
    v[5] = (keel_value){ .type = KEEL_T_VEC4, .as.v = { 1, 2, 3, 4.000000000000001 } };
    v[6] = (keel_value){ .type = KEEL_T_QUAT, .as.v = { 0.5, 0.5, 0.5, 0.5 } };
    v[7] = (keel_value){ .type = KEEL_T_COLOR, .as.v = { 0.25, 0.5, 0.75, 1 } };
    v[8] = (keel_value){ .type = KEEL_T_ENUM, .as.i = 1 };
    v[9] = (keel_value){ .type = KEEL_T_STRING, .as.s = "line\nnext \"q\" 'a': - [x] #c" };
    v[10] = (keel_value){ .type = KEEL_T_ASSET, .as.u = keel_entity_uuid(w, kid) };
    v[11] = (keel_value){ .type = KEEL_T_ENTITY, .as.u = keel_entity_uuid(w, top) };
    v[12] = (keel_value){ .type = KEEL_T_ENTITY, .nil = true };
    v[13] = (keel_value){ .type = KEEL_T_FLOAT, .as.f = 123.456789 };
    for (int i = 0; i < 14; i++) assert_int_equal(keel_set(w, c, i, &v[i], NULL, NULL), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(w, c, false, NULL, NULL), KEEL_OK);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "hp", keel_node_new_scalar("3", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(w, top, "gone:kind", 4, 2, body, NULL), KEEL_OK);
    assert_int_equal(keel_add_unknown(w, kid, "gone:empty", 1, 0, NULL, NULL), KEEL_OK);
    keel_node_free(body);
    assert_int_equal(keel_set_enabled(w, kid, false, NULL, NULL), KEEL_OK);

    keel__buf e1 = { 0 }, e2 = { 0 };
    keel__keyframe_encode(w, &e1);
    keel_world *w2 = keel_world_new("");
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__keyframe_apply(w2, e1.p, e1.len, &d), KEEL_OK);
    keel__keyframe_encode(w2, &e2);
    assert_int_equal(e2.len, e1.len);
    assert_memory_equal(e2.p, e1.p, e1.len);
    assert_true(keel__world_hash(w2) == keel__world_hash(w));
    char *t1, *t2;
    size_t n1, n2;
    assert_int_equal(keel_scene_dump(w, &t1, &n1, NULL), KEEL_OK);
    assert_int_equal(keel_scene_dump(w2, &t2, &n2, NULL), KEEL_OK);
    assert_string_equal(t2, t1);
    assert_non_null(strstr(t1, "gone:kind"));
    free(t1);
    free(t2);

    /* cut anywhere: refused, nothing left behind */
    for (size_t cut = 0; cut < e1.len; cut++) {
        keel_world *w3 = keel_world_new("");
        keel_diags_free(&d);
        keel_diags_init(&d);
        assert_int_not_equal(keel__keyframe_apply(w3, e1.p, cut, &d), KEEL_OK);
        assert_true(d.errors > 0);
        assert_int_equal(keel_world_entity_count(w3), 0);
        keel_world_free(w3);
    }
    keel_diags_free(&d);
    free(e1.p);
    free(e2.p);
    keel_world_free(w2);
    keel_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keyframes_delta_round_trips_and_is_bounded),
        cmocka_unit_test(keyframes_diffs_rebuild_the_recorded_encoding),
        cmocka_unit_test(keyframes_seek_to_every_keyframe_and_verify),
        cmocka_unit_test(keyframes_damage_inside_a_diff_is_refused),
        cmocka_unit_test(keyframes_whole_ones_still_read),
        cmocka_unit_test(keyframes_every_field_type_round_trips),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
