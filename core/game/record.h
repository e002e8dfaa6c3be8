/* record.h — the recording's file (record.c writes it, replay.c reads it): chunks, the world's
 * state as a keyframe, the state hash, inputs as commands. design/replay.md is the contract. */
#ifndef KEEL_GAME_RECORD_H
#define KEEL_GAME_RECORD_H

#include "keel.h"
#include "base/bytes.h"

#define KEEL__REC_MAGIC "KEELREC1"
#define KEEL__REC_MAGIC_LEN 8
#define KEEL__REC_CHUNK_MAX (256u << 20)   /* one chunk's payload, bounded before it is read */
#define KEEL__REC_INPUTS_MAX (1u << 20)    /* inputs in one frame */
#define KEEL__REC_KINDS_MAX 65536
#define KEEL__REC_DEPTH 64                 /* nesting of an input's batches and trees */

enum { KEEL__CH_HEADER = 'H', KEEL__CH_KEYFRAME = 'K', KEEL__CH_FRAME = 'F' };
enum { KEEL__IN_CMD = 1, KEEL__IN_RANDOM = 2, KEEL__IN_MESSAGE = 3 };

/* A kind as the recording saw it: what keel.replay compares with the kind registered now. */
typedef struct keel__rec_kind {
    char *key;
    int version;
    uint64_t layout;  /* keel__kind_layout_hash */
    uint64_t source;  /* a Lua kind's source file's hash; 0 for a C kind or none known */
} keel__rec_kind;

/* Hash of what decides a kind's records and files: key, multiplicity, field keys, types, flags
 * and choices in order. */
uint64_t keel__kind_layout_hash(keel_kind_id k);
/* The 64-bit hash of w's committed state: every entity (UUID, name, parent, enabled) and every
 * component (kind, slot, enabled, field values), and the random generators. A sum of one hash per
 * entity and per component, so the order of rows and indices (which a replay need not share)
 * does not count; run order does, through the values it leaves. */
uint64_t keel__world_hash(const keel_world *w);
/* The same hash kept up to date across calls (state_hash.c): the terms no record decides are
 * taken again only when the world's counters say they may have moved; records are hashed every
 * call. Zeroed is empty; one hasher follows one world at a time (another world: a full pass). */
struct keel__hash_kind;
typedef struct keel__hasher {
    bool valid;
    uint64_t epoch, structure, enabling, relabels;
    uint64_t fixed;                /* entities' terms and unknown components' */
    struct keel__hash_kind *kinds; /* by kind id: each stored component's place, by row */
    size_t nkinds;
    uint64_t *keys; /* kind key hashes by kind id */
    size_t keys_cap;
} keel__hasher;
/* keel__world_hash(w), from what h kept (a debug build checks it against the full pass). */
uint64_t keel__hasher_hash(keel__hasher *h, const keel_world *w);
void keel__hasher_reset(keel__hasher *h); /* the next call takes a full pass */
void keel__hasher_free(keel__hasher *h);  /* its memory; h is empty again */
/* The world's whole state into b (a keyframe): settings, generators, time, every entity in
 * hierarchy pre-order with its components (all fields, runtime and transient too, unknown
 * bodies whole, started/awoken/faulted flags). */
void keel__keyframe_encode(const keel_world *w, keel__buf *b);
/* Rebuilds w (emptied first: no hook runs, timers and messages dropped) from a keyframe.
 * ParseError (bad bytes, every length bounded first) or the command's own error. */
keel_status keel__keyframe_apply(keel_world *w, const uint8_t *p, size_t len, keel_diags *d);
/* One command, batches and trees included. */
void keel__cmd_encode(keel__buf *b, const keel_cmd *c);
/* Reads one command into c (caller frees with keel_cmd_free); false with r->err set on bad bytes. */
bool keel__cmd_decode(keel__rd *r, keel_cmd *c, int depth);
/* ---- keyframes as diffs (keydelta.c) ----
 * A keyframe chunk is whole (KEEL__CH_KEYFRAME: frame u64, pending u32, raw length u32, the
 * encoding zlib-compressed) or a diff against the keyframe chunk before it (KEEL__CH_KEYDIFF:
 * frame u64, pending u32, raw length u32, that keyframe's frame u64, the delta's length u32,
 * the delta zlib-compressed). A diff is written when it is under half the encoding, and at most
 * KEEL__REC_DIFF_RUN in a row: rebuilding a keyframe inflates at most that many deltas. */
#define KEEL__CH_KEYDIFF 'D'
#define KEEL__REC_DIFF_RUN 7
typedef struct keel__rec_key {
    uint64_t frame;
    uint32_t pending; /* timers and messages pending then */
    uint32_t raw_len; /* the encoding's length */
    const uint8_t *p; /* compressed: the encoding, or for a diff the delta */
    uint32_t len;
    bool diff;          /* against the key before it in the file */
    uint32_t delta_len; /* a diff's delta, inflated */
} keel__rec_key;
/* The writer's side: the last keyframe's encoding, what the next diff is taken against. */
typedef struct keel__keyframes {
    keel__buf prev;
    uint64_t prev_frame;
    uint32_t run; /* diffs written since the last whole keyframe */
    bool any;
} keel__keyframes;
/* Appends keyframe `frame` (its encoding `raw`, which k keeps: raw is emptied) to out, whole or
 * as a diff against the last one k put. */
void keel__keyframe_put(keel__keyframes *k, keel__buf *out, uint64_t frame, uint32_t pending, keel__buf *raw);
void keel__keyframes_free(keel__keyframes *k);
/* The encoding of keys[i] into *raw (malloc'd, keys[i].raw_len bytes), inflating the whole
 * keyframe at or before it and applying the diffs after that one; ParseError when any part is
 * damaged. */
keel_status keel__keyframe_raw(const keel__rec_key *keys, size_t i, uint8_t **raw, keel_diags *d);
/* A delta rebuilding cur from old (keydelta.c), and its application into out (out_len bytes,
 * what it must fill exactly); false with *err set when it reaches outside either. */
void keel__delta_encode(const uint8_t *old, size_t olen, const uint8_t *cur, size_t clen, keel__buf *out);
bool keel__delta_apply(const uint8_t *old, size_t olen, const uint8_t *ops, size_t n, uint8_t *out, size_t out_len,
                       const char **err);
/* Frames one chunk: tag, length, payload, CRC-32 of the three. */
void keel__chunk_put(keel__buf *out, uint8_t tag, const void *payload, size_t len);

#endif
