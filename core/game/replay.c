/* replay.c — replaying a recording (design/replay.md): the reader, stepping, seeking, verifying
 * and branching.
 *
 * Opening reads the file whole and checks it before anything is built: the magic, then each
 * chunk's length against what is left and against KEEL__REC_CHUNK_MAX, its CRC, and that frames
 * follow one another. A chunk cut short at the end is what a killed recorder leaves: the replay
 * ends at the frame before it and says so. A chunk whose CRC fails is damage: refused, with the
 * chunk's offset. The header's kinds are compared with those registered now (version, layout,
 * source): any that differ are named and refused unless allowed.
 *
 * Stepping applies a frame's inputs (the commands recorded, the random states) and steps with its
 * dt, then compares the state hash with the recorded one. At the first mismatch the replay
 * re-simulates on to the next keyframe (or to the end, where the recorder left the last state),
 * compares that keyframe with its own world component by component, and comes back to the frame
 * that failed: Diverged names the frame and the differences. Seeking restores the nearest keyframe
 * at or before the frame that had no timer or message pending (those hold functions: only
 * re-simulation brings them back), unless the replay is already between it and the frame; a diff
 * keyframe is rebuilt from the whole one before it and the diffs between (keydelta.c). */
#include "bind.h"
#include "base/util.h"
#include "base/vec.h"
#include "game/record.h"
#include "model/command.h"
#include "model/mirror.h"
#include "model/record.h"
#include "model/kind.h"
#include "model/value.h"
#include "model/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct rp_frame {
    const uint8_t *p; /* payload */
    uint32_t len;
} rp_frame;

typedef keel__rec_key rp_key; /* record.h: whole, or a diff against the one before */

#define DIFFS_MAX 64

struct keel_replay {
    keel_world *w;
    uint8_t *data;
    size_t size;
    rp_frame *frames; /* frames[i]: frame i + 1 */
    uint64_t nframes;
    rp_key *keys;
    size_t nkeys, keys_cap;
    uint64_t frame;
    bool truncated, verify;
    uint64_t diverged, want, got; /* the first frame that failed, its recorded and replayed hashes */
    keel_replay_diff *diffs;
    size_t ndiffs;
    keel__hasher hash; /* the state hash of w, kept across frames (state_hash.c) */
};

/* ================================================================ reading */

static keel_status damaged(keel_diags *d, const char *path, size_t off, const char *what)
{
    return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0,
                         "recording damaged at byte offset %zu: %s", off, what);
}

static keel_status read_all(const char *path, uint8_t **out, size_t *len, keel_diags *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) return KEEL_ERROR(d, KEEL_IO_ERROR, "", "cannot open %s", path);
    size_t cap = 1 << 16, n = 0;
    uint8_t *p = keel__xrealloc(NULL, cap);
    size_t got;
    while ((got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) p = keel__xrealloc(p, cap *= 2);
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(p);
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "cannot read %s", path);
    }
    *out = p;
    *len = n;
    return KEEL_OK;
}

/* The kinds of the header against the registry; each difference one diagnostic. */
static keel_status check_kinds(keel__rd *r, const keel_replay_opts *o, const char *path, keel_diags *d)
{
    uint32_t n = keel__rd_count(r, 25, "truncated kinds");
    if (n > KEEL__REC_KINDS_MAX && !r->err) r->err = "too many kinds";
    size_t bad = 0;
    keel_diags local;
    keel_diags_init(&local);
    for (uint32_t i = 0; i < n && !r->err; i++) {
        char *key = keel__rd_str(r, "truncated kinds");
        int version = (int)keel__rd_u32(r, "truncated kinds");
        uint64_t layout = keel__rd_u64(r, "truncated kinds"), source = keel__rd_u64(r, "truncated kinds");
        if (r->err) {
            free(key);
            break;
        }
        keel_kind_id k = keel_kind_find(key);
        const char *why = NULL;
        if (!k) why = "is not declared now";
        else if (keel_kind_describe(k)->version != version) why = "has another version now";
        else if (keel__kind_layout_hash(k) != layout) why = "has other fields now";
        else if (source && o->source && o->source(key, o->ud) != source) why = "comes from a source file that changed";
        if (why) {
            bad++;
            keel_diag_add(&local, o->allow_changed_kinds ? KEEL_SEV_WARNING : KEEL_SEV_ERROR, KEEL_INVALID_OPERATION,
                          key, path, 0, 0, "kind %s %s than when it was recorded", key,
                          strcmp(why, "is not declared now") == 0 ? "is not declared now, other" : why);
        }
        free(key);
    }
    keel_diags_append(d, &local, "");
    keel_diags_free(&local);
    if (bad && !o->allow_changed_kinds)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "%zu kinds differ from the recording's (keel.replay(path, { allow_changed_kinds = true }) runs it anyway)",
                          bad);
    return KEEL_OK;
}

static keel_status parse(keel_replay *rp, const char *path, const keel_replay_opts *o, keel_diags *d)
{
    const uint8_t *p = rp->data;
    size_t n = rp->size;
    if (n < KEEL__REC_MAGIC_LEN || memcmp(p, KEEL__REC_MAGIC, KEEL__REC_MAGIC_LEN) != 0)
        return damaged(d, path, 0, "not a keel recording (no " KEEL__REC_MAGIC " magic)");
    size_t at = KEEL__REC_MAGIC_LEN, fcap = 0;
    bool header = false;
    while (at < n) {
        if (n - at < 9) {
            rp->truncated = true;
            break;
        }
        uint8_t tag = p[at];
        uint32_t len = keel__get_u32(p + at + 1);
        if (len > KEEL__REC_CHUNK_MAX) return damaged(d, path, at, "a chunk longer than the limit");
        if ((size_t)len + 9 > n - at) { /* cut short: a torn last write */
            rp->truncated = true;
            break;
        }
        uint32_t crc = keel__get_u32(p + at + 5 + len);
        if ((uint32_t)crc32_z(0L, p + at, 5 + (size_t)len) != crc) return damaged(d, path, at, "CRC mismatch");
        const uint8_t *pay = p + at + 5;
        keel__rd r = { pay, len, 0, NULL, false };
        if (!header) {
            if (tag != KEEL__CH_HEADER) return damaged(d, path, at, "the first chunk is not the header");
            free(keel__rd_str(&r, "truncated header")); /* keel's version: informative */
            keel__rd_uuid(&r, "truncated header");
            free(keel__rd_str(&r, "truncated header"));
            keel__rd_u32(&r, "truncated header");
            if (r.err) return damaged(d, path, at, r.err);
            keel_status st = check_kinds(&r, o, path, d);
            if (r.err) return damaged(d, path, at, r.err);
            if (st) return st;
            header = true;
        } else if (tag == KEEL__CH_FRAME) {
            uint64_t f = keel__rd_u64(&r, "truncated frame");
            if (r.err || f != rp->nframes + 1) return damaged(d, path, at, "frames out of order");
            if (rp->nframes == fcap) rp->frames = keel__xrealloc(rp->frames, (fcap = fcap ? fcap * 2 : 256) * sizeof *rp->frames);
            rp->frames[rp->nframes++] = (rp_frame){ pay, len };
        } else if (tag == KEEL__CH_KEYFRAME || tag == KEEL__CH_KEYDIFF) {
            rp_key k = { 0 };
            k.frame = keel__rd_u64(&r, "truncated keyframe");
            k.pending = keel__rd_u32(&r, "truncated keyframe");
            k.raw_len = keel__rd_u32(&r, "truncated keyframe");
            if (r.err || k.frame != rp->nframes || k.raw_len > KEEL__REC_CHUNK_MAX)
                return damaged(d, path, at, "a keyframe out of place");
            if (tag == KEEL__CH_KEYDIFF) { /* against the keyframe chunk just before, at an earlier frame */
                k.diff = true;
                uint64_t base = keel__rd_u64(&r, "truncated keyframe");
                k.delta_len = keel__rd_u32(&r, "truncated keyframe");
                if (r.err || !rp->nkeys || rp->keys[rp->nkeys - 1].frame != base || base >= k.frame ||
                    k.delta_len > KEEL__REC_CHUNK_MAX)
                    return damaged(d, path, at, "a diff keyframe without the keyframe it follows");
            }
            k.p = pay + r.pos;
            k.len = (uint32_t)(len - r.pos);
            if (rp->nkeys && rp->keys[rp->nkeys - 1].frame == k.frame) rp->keys[rp->nkeys - 1] = k;
            else {
                KEEL__VEC_RESERVE(rp->keys, rp->nkeys, rp->keys_cap, 1, 16);
                rp->keys[rp->nkeys++] = k;
            }
        } else {
            return damaged(d, path, at, "unknown chunk");
        }
        at += 9 + (size_t)len;
    }
    if (!header || !rp->nkeys || rp->keys[0].frame != 0)
        return damaged(d, path, at, rp->truncated ? "the file ends before keyframe 0" : "no keyframe 0");
    return KEEL_OK;
}

/* ================================================================ stepping */

static keel_status restore(keel_replay *rp, const rp_key *k, keel_diags *d)
{
    uint8_t *raw = NULL;
    keel_status st = keel__keyframe_raw(rp->keys, (size_t)(k - rp->keys), &raw, d);
    if (st == KEEL_OK) {
        keel__world_freeze(rp->w, false);
        st = keel__keyframe_apply(rp->w, raw, k->raw_len, d);
        keel__world_freeze(rp->w, true);
    }
    free(raw);
    if (st == KEEL_OK) rp->frame = k->frame;
    return st;
}

/* Applies the frame's inputs from *i on, up to the mark of those that came after the step (then
 * *i is past the mark and *after true) or to the end. */
static keel_status apply_inputs(keel_replay *rp, keel__rd *r, uint32_t n, uint32_t *at, bool *after, keel_diags *d)
{
    keel_world *w = rp->w;
    *after = false;
    for (uint32_t i = *at; i < n; i++) {
        uint8_t t = keel__rd_u8(r, "truncated input");
        *at = i + 1;
        if (t == KEEL__IN_AFTER_STEP) {
            *after = true;
            return KEEL_OK;
        }
        if (t == KEEL__IN_CMD || t == KEEL__IN_MIRROR_CMD) {
            keel_cmd c;
            bool ok = keel__cmd_decode(r, &c, 0);
            if (t == KEEL__IN_MIRROR_CMD) keel__world_mirror_apply(w, true);
            keel_status st = ok ? keel__cmd_apply(w, &c, NULL, true, d) : KEEL_OK;
            if (t == KEEL__IN_MIRROR_CMD) keel__world_mirror_apply(w, false);
            keel_cmd_free(&c);
            if (!ok) break;
            if (st) return KEEL_ERROR(d, KEEL_DIVERGED, "", "frame %llu: input %u no longer applies",
                                      (unsigned long long)rp->frame + 1, i + 1);
        } else if (t == KEEL__IN_RANDOM) {
            int64_t seed = (int64_t)keel__rd_u64(r, "truncated input");
            uint64_t rs[4], ids[4];
            for (int k = 0; k < 4; k++) rs[k] = keel__rd_u64(r, "truncated input");
            for (int k = 0; k < 4; k++) ids[k] = keel__rd_u64(r, "truncated input");
            if (r->err) break;
            int64_t now_seed;
            uint64_t now[4];
            keel_random_state(w, &now_seed, now);
            if (now_seed != seed || memcmp(now, rs, sizeof now) != 0) /* a spawn moves only the UUIDs' */
                keel_random_set_state(w, seed, rs, NULL);
            if (ids[0] | ids[1] | ids[2] | ids[3]) memcpy(w->idrng, ids, sizeof ids);
        } else if (t == KEEL__IN_MESSAGE) {
            keel_status st = keel__rec_post_message(w, r, false, d);
            if (r->err) break;
            if (st) return KEEL_ERROR(d, KEEL_DIVERGED, "", "frame %llu: message input %u no longer applies",
                                      (unsigned long long)rp->frame + 1, i + 1);
        } else if (t == KEEL__IN_TIMER || t == KEEL__IN_TIMER_CANCEL) {
            keel_status st = t == KEEL__IN_TIMER ? keel__rec_apply_timer(w, r, d) : keel__rec_apply_cancel(w, r, d);
            if (r->err) break;
            if (st) return KEEL_ERROR(d, KEEL_DIVERGED, "", "frame %llu: timer input %u no longer applies",
                                      (unsigned long long)rp->frame + 1, i + 1);
        } else if (t == KEEL__IN_STATE) { /* play's stop: the world whole as it left it */
            uint32_t len = keel__rd_count(r, 1, "truncated input");
            if (r->err) break;
            keel_status st = keel__keyframe_apply(w, r->p + r->pos, len, d);
            r->pos += len;
            if (st) return st;
        } else {
            if (!r->err) r->err = "unknown input";
            break;
        }
    }
    if (r->err) return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: frame %llu: %s", (unsigned long long)rp->frame + 1, r->err);
    return KEEL_OK;
}

/* One frame: inputs, the step, and the hash it should leave in *want. */
static keel_status one_frame(keel_replay *rp, uint64_t *want, uint64_t *got, keel_diags *d)
{
    const rp_frame *f = &rp->frames[rp->frame];
    keel__rd r = { f->p, f->len, 0, NULL, false };
    keel__rd_u64(&r, "truncated frame");
    double dt;
    uint64_t bits = keel__rd_u64(&r, "truncated frame");
    memcpy(&dt, &bits, 8);
    uint32_t n = keel__rd_count(&r, 2, "truncated frame"), at = 0;
    bool after = false;
    keel__world_freeze(rp->w, false);
    keel_status st = r.err ? KEEL_OK : apply_inputs(rp, &r, n, &at, &after, d);
    if (st == KEEL_OK && !r.err) {
        keel_diags sd; /* the step's own failures are the game's (recorded in world errors) */
        keel_diags_init(&sd);
        st = keel_step(rp->w, dt, &sd);
        if (st) keel_diags_append(d, &sd, "");
        keel_diags_free(&sd);
    }
    if (st == KEEL_OK && after && !r.err) st = apply_inputs(rp, &r, n, &at, &after, d); /* at the step's end */
    *want = keel__rd_u64(&r, "truncated frame");
    if (st == KEEL_OK && r.err)
        st = KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: frame %llu: %s", (unsigned long long)rp->frame + 1, r.err);
    keel__world_freeze(rp->w, true);
    rp->frame++;
    *got = keel__hasher_hash(&rp->hash, rp->w);
    return st;
}

/* ---- what differs: the replay's world against a keyframe's ---- */

static char *value_text(const keel_field_desc *f, const keel_value *v)
{
    keel_node *n = keel__value_node(f->type, v, f->type == KEEL_T_ENUM ? keel__value_choice(f, v->as.i) : NULL, true);
    char *s = NULL;
    if (n && n->kind == KEEL_NODE_SCALAR) s = keel__strdup(n->text ? n->text : "");
    else if (n && n->kind == KEEL_NODE_SEQ) {
        keel__buf b = { 0 };
        keel__buf_bytes(&b, "[", 1);
        for (size_t i = 0; i < n->count; i++) {
            if (i) keel__buf_bytes(&b, ", ", 2);
            const char *t = n->items[i].text ? n->items[i].text : "";
            keel__buf_bytes(&b, t, strlen(t));
        }
        keel__buf_bytes(&b, "]", 2);
        s = (char *)b.p;
    }
    keel_node_free(n);
    return s ? s : keel__strdup("?");
}

static void diff_add(keel_replay *rp, keel_uuid u, const char *kind, uint32_t slot, const char *field, char *rec,
                     char *rep)
{
    if (rp->ndiffs == DIFFS_MAX) {
        free(rec);
        free(rep);
        return;
    }
    if (!rp->diffs) rp->diffs = keel__xcalloc(DIFFS_MAX, sizeof *rp->diffs);
    keel_replay_diff *x = &rp->diffs[rp->ndiffs++];
    if (keel_uuid_is_nil(u)) x->entity[0] = 0;
    else keel_uuid_format(u, x->entity);
    x->kind = kind ? keel__strdup(kind) : NULL;
    x->slot = slot;
    x->field = field ? keel__strdup(field) : NULL;
    x->recorded = rec;
    x->replayed = rep;
}

static void compare_entity(keel_replay *rp, const keel_world *a, keel_entity ea, const keel_world *b, keel_entity eb,
                           keel_uuid u)
{
    keel_member mb, ma;
    if (eb && ea && eb != keel_world_root(b) && strcmp(keel_entity_name(b, eb), keel_entity_name(a, ea)) != 0)
        diff_add(rp, u, NULL, 0, "name", keel__strdup(keel_entity_name(b, eb)), keel__strdup(keel_entity_name(a, ea)));
    for (size_t i = 0; eb && keel_member_at(b, eb, i, &mb); i++) {
        bool found = false;
        for (size_t j = 0; ea && keel_member_at(a, ea, j, &ma); j++) {
            if (strcmp(ma.key, mb.key) != 0 || ma.slot != mb.slot) continue;
            found = true;
            if (!mb.loaded || !ma.loaded) break;
            const keel_kind_desc *kd = keel_kind_describe(mb.kind);
            for (size_t f = 0; f < kd->field_count; f++) {
                keel_value va, vb;
                if (keel_get(a, (keel_comp){ ea, ma.kind, ma.slot }, (int)f, &va, NULL) != KEEL_OK) continue;
                if (keel_get(b, (keel_comp){ eb, mb.kind, mb.slot }, (int)f, &vb, NULL) != KEEL_OK) continue;
                if (keel__value_equal(&va, &vb)) continue;
                diff_add(rp, u, mb.key, mb.slot, kd->fields[f].key, value_text(&kd->fields[f], &vb),
                         value_text(&kd->fields[f], &va));
            }
            break;
        }
        if (!found) diff_add(rp, u, mb.key, mb.slot, NULL, keel__strdup("(present)"), keel__strdup("(absent)"));
    }
    for (size_t j = 0; ea && keel_member_at(a, ea, j, &ma); j++) {
        bool found = false;
        for (size_t i = 0; eb && keel_member_at(b, eb, i, &mb); i++)
            if (strcmp(ma.key, mb.key) == 0 && ma.slot == mb.slot) found = true;
        if (!found) diff_add(rp, u, ma.key, ma.slot, NULL, keel__strdup("(absent)"), keel__strdup("(present)"));
    }
}

/* Every difference between the replay's world (a) and the recorded state (b). */
static void compare_worlds(keel_replay *rp, const keel_world *a, const keel_world *b)
{
    compare_entity(rp, a, keel_world_root(a), b, keel_world_root(b), (keel_uuid){ { 0 } });
    for (uint32_t i = 1; i < b->ent_count; i++) {
        if (!b->ents[i].alive) continue;
        keel_uuid u = b->ents[i].uuid;
        keel_entity ea = keel_find(a, u), eb = keel_find(b, u);
        if (!ea) diff_add(rp, u, NULL, 0, NULL, keel__strdup("(present)"), keel__strdup("(absent)"));
        else compare_entity(rp, a, ea, b, eb, u);
    }
    for (uint32_t i = 1; i < a->ent_count; i++)
        if (a->ents[i].alive && !keel_find(b, a->ents[i].uuid))
            diff_add(rp, a->ents[i].uuid, NULL, 0, NULL, keel__strdup("(absent)"), keel__strdup("(present)"));
}

static void diffs_free(keel_replay *rp)
{
    for (size_t i = 0; i < rp->ndiffs; i++) {
        free(rp->diffs[i].kind);
        free(rp->diffs[i].field);
        free(rp->diffs[i].recorded);
        free(rp->diffs[i].replayed);
    }
    free(rp->diffs);
    rp->diffs = NULL;
    rp->ndiffs = 0;
}

static keel_status seek_to(keel_replay *rp, uint64_t frame, bool verify, keel_diags *d);

/* Frame `at` failed: on to the next keyframe, compare, back to `at`. */
static void diagnose(keel_replay *rp, uint64_t at)
{
    diffs_free(rp);
    const rp_key *k = NULL;
    for (size_t i = 0; i < rp->nkeys && !k; i++)
        if (rp->keys[i].frame >= at) k = &rp->keys[i];
    if (!k) return;
    keel_diags quiet;
    keel_diags_init(&quiet);
    keel_status st = KEEL_OK;
    while (st == KEEL_OK && rp->frame < k->frame) {
        uint64_t want, got;
        st = one_frame(rp, &want, &got, &quiet);
    }
    keel_world *b = keel_world_new("");
    uint8_t *raw = NULL;
    if (st == KEEL_OK && keel__keyframe_raw(rp->keys, (size_t)(k - rp->keys), &raw, &quiet) == KEEL_OK &&
        keel__keyframe_apply(b, raw, k->raw_len, &quiet) == KEEL_OK)
        compare_worlds(rp, rp->w, b);
    free(raw);
    keel_world_free(b);
    seek_to(rp, at, false, &quiet);
    keel_diags_free(&quiet);
}

static keel_status diverged_error(keel_replay *rp, uint64_t want, uint64_t got, keel_diags *d)
{
    keel_diag_add(d, KEEL_SEV_ERROR, KEEL_DIVERGED, "", NULL, 0, 0,
                  "the replay diverged at frame %llu: state hash %016llx, recorded %016llx (%zu differences found%s)",
                  (unsigned long long)rp->diverged, (unsigned long long)got, (unsigned long long)want, rp->ndiffs,
                  rp->ndiffs ? " at the next keyframe" : "");
    for (size_t i = 0; i < rp->ndiffs; i++) {
        const keel_replay_diff *x = &rp->diffs[i];
        char path[256];
        snprintf(path, sizeof path, "%s", x->entity[0] ? x->entity : "root");
        if (x->kind) snprintf(path + strlen(path), sizeof path - strlen(path), "/%s[%u]", x->kind, x->slot);
        if (x->field) snprintf(path + strlen(path), sizeof path - strlen(path), ".%s", x->field);
        keel_diag_add(d, KEEL_SEV_ERROR, KEEL_DIVERGED, path, NULL, 0, 0, "frame %llu: %s: recorded %s, replayed %s",
                      (unsigned long long)rp->diverged, path, x->recorded, x->replayed);
    }
    return KEEL_DIVERGED;
}

static keel_status step_n(keel_replay *rp, uint64_t n, bool verify, keel_diags *d)
{
    for (uint64_t i = 0; i < n; i++) {
        if (rp->frame >= rp->nframes)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "the recording ends at frame %llu%s",
                              (unsigned long long)rp->nframes, rp->truncated ? " (its last write was torn)" : "");
        if (verify && rp->diverged && rp->frame + 1 >= rp->diverged) /* never past it silently */
            return diverged_error(rp, rp->want, rp->got, d);
        uint64_t want, got;
        keel_status st = one_frame(rp, &want, &got, d);
        if (st == KEEL_DIVERGED || (st == KEEL_OK && verify && want != got)) {
            uint64_t at = rp->frame;
            rp->diverged = at;
            rp->want = want;
            rp->got = got;
            if (st == KEEL_OK) {
                diagnose(rp, at);
                return diverged_error(rp, want, got, d);
            }
            return st;
        }
        if (st) return st;
    }
    return KEEL_OK;
}

static keel_status seek_to(keel_replay *rp, uint64_t frame, bool verify, keel_diags *d)
{
    const rp_key *k = NULL;
    for (size_t i = 0; i < rp->nkeys; i++)
        if (rp->keys[i].frame <= frame && (rp->keys[i].pending == 0 || rp->keys[i].frame == 0)) k = &rp->keys[i];
    keel_status st = KEEL_OK;
    if (rp->frame > frame || rp->frame < k->frame) st = restore(rp, k, d);
    if (st == KEEL_OK) st = step_n(rp, frame - rp->frame, verify, d);
    return st;
}

/* ================================================================ the interface */

static keel_status open_replay(const char *path, const void *bytes, size_t len, keel_world *w,
                               const keel_replay_opts *o, keel_replay **out, keel_diags *d)
{
    static const keel_replay_opts defaults = { false, true, NULL, NULL };
    *out = NULL;
    if (!o) o = &defaults;
    if (!path || !w) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel.replay: NULL path or world");
    keel_replay *rp = keel__xcalloc(1, sizeof *rp);
    rp->w = w;
    rp->verify = o->verify;
    keel_status st = bytes ? KEEL_OK : read_all(path, &rp->data, &rp->size, d);
    if (bytes) {
        rp->data = keel__xrealloc(NULL, len ? len : 1);
        if (len) memcpy(rp->data, bytes, len);
        rp->size = len;
    }
    if (st == KEEL_OK) st = parse(rp, path, o, d);
    if (st == KEEL_OK) {
        w->ids_from_rng = true;
        st = restore(rp, &rp->keys[0], d);
    }
    if (st) {
        keel__world_freeze(w, false);
        w->ids_from_rng = false;
        free(rp->data);
        free(rp->frames);
        free(rp->keys);
        free(rp);
        return st;
    }
    *out = rp;
    return KEEL_OK;
}

keel_status keel__replay_open(const char *path, keel_world *w, const keel_replay_opts *o, keel_replay **out,
                              keel_diags *d)
{
    return open_replay(path, NULL, 0, w, o, out, d);
}

keel_status keel__replay_open_bytes(const void *p, size_t len, const char *name, keel_world *w,
                                    const keel_replay_opts *o, keel_replay **out, keel_diags *d)
{
    return open_replay(name ? name : "(bytes)", p ? p : "", len, w, o, out, d);
}

void keel__replay_close(keel_replay *rp)
{
    if (!rp) return;
    diffs_free(rp); /* the world is the caller's (unfrozen by it, or already gone) */
    keel__hasher_free(&rp->hash);
    free(rp->data);
    free(rp->frames);
    free(rp->keys);
    free(rp);
}

uint64_t keel__replay_frames(const keel_replay *rp) { return rp->nframes; }
uint64_t keel__replay_frame(const keel_replay *rp) { return rp->frame; }
bool keel__replay_truncated(const keel_replay *rp) { return rp->truncated; }
keel_world *keel__replay_world(const keel_replay *rp) { return rp->w; }

size_t keel__replay_keyframes(const keel_replay *rp, uint64_t *out, size_t cap)
{
    for (size_t i = 0; i < rp->nkeys && i < cap; i++) out[i] = rp->keys[i].frame;
    return rp->nkeys;
}

keel_status keel__replay_step(keel_replay *rp, uint64_t n, keel_diags *d)
{
    return step_n(rp, n, rp->verify, d);
}

keel_status keel__replay_seek(keel_replay *rp, uint64_t frame, keel_diags *d)
{
    if (frame > rp->nframes)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "frame %llu is past the recording's last (%llu)",
                          (unsigned long long)frame, (unsigned long long)rp->nframes);
    return seek_to(rp, frame, rp->verify, d);
}

uint64_t keel__replay_diverged(const keel_replay *rp, const keel_replay_diff **diffs, size_t *n)
{
    if (diffs) *diffs = rp->diffs;
    if (n) *n = rp->ndiffs;
    return rp->diverged;
}

keel_world *keel__replay_adopt(keel_replay *rp, keel_world *fresh, keel_diags *d)
{
    keel_world *old = rp->w;
    uint64_t at = rp->frame;
    keel__world_freeze(old, false);
    old->ids_from_rng = false; /* a live world again: UUIDs from the process pool */
    rp->w = fresh;
    fresh->ids_from_rng = true;
    rp->frame = UINT64_MAX; /* nothing in `fresh` yet: restore, whatever the frame */
    if (seek_to(rp, at, false, d) != KEEL_OK) {
        rp->frame = at;
        rp->w = old; /* not expected: the frames re-simulated before */
        keel__world_freeze(old, true);
        old->ids_from_rng = true;
        return NULL;
    }
    return old;
}

uint64_t keel__replay_hash(const keel_replay *rp) { return keel__world_hash(rp->w); }
