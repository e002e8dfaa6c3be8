/* record.h — the recording's file (record.c writes it, replay.c reads it): chunks, the world's
 * state as a keyframe, the state hash, inputs as commands. design/replay.md is the contract. */
#ifndef KEEL_GAME_RECORD_H
#define KEEL_GAME_RECORD_H

#include "keel.h"
#include "base/bytes.h"

#define KEEL__REC_MAGIC "KEELREC2"
#define KEEL__REC_MAGIC_LEN 8
#define KEEL__REC_CHUNK_MAX (256u << 20)   /* one chunk's payload, bounded before it is read */
#define KEEL__REC_INPUTS_MAX (1u << 20)    /* inputs in one frame */
#define KEEL__REC_KINDS_MAX 65536
#define KEEL__REC_DEPTH 64                 /* nesting of an input's batches and trees */

enum { KEEL__CH_HEADER = 'H', KEEL__CH_KEYFRAME = 'K', KEEL__CH_FRAME = 'F' };
enum { KEEL__IN_CMD = 1, KEEL__IN_RANDOM = 2, KEEL__IN_MESSAGE = 3 };
/* record_input.c's inputs: a replicated change (applied as the authority's write on a client),
 * the mark after which a frame's inputs came at the step's end (applied after the step), and
 * the world whole after play's stop (a keyframe's bytes). */
enum { KEEL__IN_MIRROR_CMD = 4, KEEL__IN_AFTER_STEP = 5, KEEL__IN_STATE = 6 };
/* a timer whose action is a message, made from outside a step; a timer cancelled from outside one
 * (by its place among the live timers, keel__timer_ordinal) */
enum { KEEL__IN_TIMER = 7, KEEL__IN_TIMER_CANCEL = 8 };

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

/* ---- record_input.c: messages, the keyframe's trailing section, inputs at a step's end ---- */

/* One message as written in an input or a keyframe: broadcast flag, target and sender UUIDs,
 * name, its bytes, and the binding's payload as the world's codec wrote it. false (nothing
 * written) when the payload cannot be written (no codec, or the codec refused it). */
bool keel__rec_put_message(keel_world *w, keel__buf *b, const keel_message *m, keel_entity target, bool broadcast);
/* Reads one message and queues it in w (the payload made by w's codec; none without one).
 * `lenient`: a target gone is skipped (a keyframe's queue) rather than refused. */
keel_status keel__rec_post_message(keel_world *w, keel__rd *r, bool lenient, keel_diags *d);
/* The inputs KEEL__IN_TIMER (a message timer made) and KEEL__IN_TIMER_CANCEL, read and applied. */
keel_status keel__rec_apply_timer(keel_world *w, keel__rd *r, keel_diags *d);
keel_status keel__rec_apply_cancel(keel_world *w, keel__rd *r, keel_diags *d);
/* The keyframe's trailing section (after the entities): the world's flags (a replication
 * client's mirror) and the messages queued that can be written. */
void keel__rec_put_trailer(keel_world *w, keel__buf *b);
keel_status keel__rec_apply_trailer(keel_world *w, keel__rd *r, keel_diags *d);
/* What pending at a keyframe no file can hold: timers (they hold functions) and messages whose
 * payload cannot be written. A keyframe with any is not a place a seek restores to. */
size_t keel__rec_unwritable(keel_world *w);
/* The recorder's input buffer for one more input of w's recording (counted), or NULL when w is
 * not recording (record.c). */
keel__buf *keel__recorder_input(keel_world *w);
/* message.c: a message sent from outside a step while w records, as an input. InvalidOperation
 * when its payload cannot be written (the message is then not sent). */
keel_status keel__record_message(keel_world *w, keel_entity to, bool broadcast, const keel_message *m, keel_diags *d);
/* message.c: the i-th message queued (send order) and its target (0 and *broadcast: to all). */
const keel_message *keel__message_at(const keel_world *w, size_t i, keel_entity *target, bool *broadcast);
/* ---- timer.c: the live timers, for recordings ---- */
typedef struct keel__timer_info {
    keel_timer_id id;
    double due, period;
    keel_entity owner;
    keel_timer_fn fn;
    void *user;
} keel__timer_info;
/* Each live timer (not ended, not cancelled, its owner not gone) in id order: creation order. */
void keel__timers_each(const keel_world *w, void (*cb)(void *ud, const keel__timer_info *t), void *ud);
/* A live timer's place among them (UINT64_MAX: none), and the id of the one at place n (0: none). */
uint64_t keel__timer_ordinal(const keel_world *w, keel_timer_id id);
keel_timer_id keel__timer_nth(const keel_world *w, uint64_t n);
/* keel_timer_add with its due time and period given exactly (a keyframe's). */
keel_status keel__timer_add_due(keel_world *w, double due, double period, const keel_timer_desc *desc,
                                keel_timer_id *id, keel_diags *d);
/* record_input.c: a timer's function when its action is a message (bind.h keel__timer_message). */
keel_status keel__msg_timer_fire(const keel_timer_call *c);

/* play.c: play's stop while w records is one input, the world whole as the stop left it (the
 * commands the stop itself made are dropped: the state holds them). */
void keel__record_stop_begin(keel_world *w);
void keel__record_stop_end(keel_world *w);

#endif
