/* bind.h — what a language binding (keel.core, the Lua module) needs from the core beyond
 * keel.h: the field write path with readonly allowed, and hook batches. Not public API: it
 * changes with the core; the bindings are its only users outside core/. */
#ifndef KEEL_BIND_H
#define KEEL_BIND_H

#include "keel.h"
#include "base/vec.h"  /* the one growable array, the bindings' too */
#include "model/ext.h" /* what attaches to a world: the Lua state's extension */

/* ---- field.c: the one write path ---- */

/* keel_set, with readonly fields writable when `internal` (command replay, rollback, save-game
 * apply, a kind's own hooks). Inside an open callback transaction the write is journaled. */
keel_status keel__field_set(keel_world *w, keel_comp c, int field, const keel_value *v, bool internal,
                            keel_cmd *inverse, keel_diags *d);
/* n fields of c at once (values converted in place by the checks). Without a validate hook every
 * value is checked first and a refusal writes nothing; with one, each is validated as it lands
 * and the first refusal stops (earlier writes stay, journaled inside a transaction). */
keel_status keel__field_set_many(keel_world *w, keel_comp c, size_t n, const int *fields, keel_value *vals,
                                 bool internal, keel_diags *d);
/* The copy-back of a hook's own component, its last act before its transaction closes:
 * `record` is c's record, which the caller knows has not moved since the hook began (nothing
 * entered the core since), and c is the running hook's component. Values are checked first
 * and a refusal writes nothing. When the hook's transaction is the outermost one it commits
 * right after, so nothing is journaled; otherwise as keel__field_set_many. Any other case
 * (c not the running hook's, a kind with validate) goes through keel__field_set_many. */
keel_status keel__field_copy_back(keel_world *w, keel_comp c, void *record, size_t n, const int *fields,
                                  keel_value *vals, keel_diags *d);
/* keel__field_copy_back for a callback that is not c's own hook (a system's `each`), its last act
 * before its transaction closes: `record` is c's (live, slot resolved) at storage row `row` and has
 * not moved since the callback began. Readonly fields are refused as keel_set refuses them; a kind
 * with validate goes through keel__field_set_many. */
keel_status keel__field_copy_back_at(keel_world *w, keel_comp c, void *record, uint32_t row, size_t n,
                                     const int *fields, keel_value *vals, keel_diags *d);
/* The copy-back of plain float fields (a Lua batch's, a system's): the caller promises every
 * field is a float with no bounds and not readonly, every value finite, the kind has no validate
 * hook, and c (live, slot resolved) has `record` at storage row `row`, unmoved since its callback
 * began. With nothing left to check, the values are stored at their offsets. False (nothing
 * written) when a journal entry is needed (a nested transaction): take the general path. */
bool keel__field_copy_floats(keel_world *w, keel_comp c, void *record, uint32_t row, size_t n, const int *fields,
                             const double *vals);
/* A component's first values, already checked, before anything else saw it (a Lua body written
 * just after its add, a cooked scene being built) or hot reload putting a default back: no
 * validate, no journal (a rollback of the add takes the component whole). `counted`: the change
 * counters move as n writes would move them. */
void keel__field_store(keel_world *w, keel_comp c, size_t n, const int *fields, const keel_value *vals,
                       bool counted);

/* A new component's body built from values (a binding's body table) is held to the load limit
 * before it is added, as keel_set holds a write: a save must be able to write what was added.
 * keel__field_body_room is the cheap answer: true when kind k's body fits whatever its fields
 * hold, given string values of `strings` bytes in all (defaults counted as if all kept).
 * Otherwise keel__field_body_fits asks exactly: k's defaults with these n checked values put
 * (LimitExceeded when a save could not write it). */
bool keel__field_body_room(keel_kind_id k, size_t strings);
keel_status keel__field_body_fits(keel_kind_id k, size_t n, const int *fields, const keel_value *vals, keel_diags *d);

/* One field of c written by a binding with nothing but the value's own check to ask: no validate
 * hook, not readonly, not a string, a body that cannot outgrow what a save writes, and no open
 * transaction wanting a journal. `record` and `row` are c's as keel__comp_info_get gave them,
 * keel__world_structure(w) unchanged since. The value is checked (and converted) as keel_set
 * would; false when any of that does not hold or the check refuses, having written nothing: the
 * caller then takes keel__field_set, which decides and reports. Counters move as keel_set's. */
bool keel__field_set_plain(keel_world *w, keel_comp c, void *record, uint32_t row, int field, keel_value *v);
/* keel__field_set_plain for a number into a float field without bounds: false (nothing written)
 * in every case that one would refuse, and for a field with bounds or of another type. */
bool keel__field_set_float(keel_world *w, keel_comp c, void *record, uint32_t row, int field, double x);

/* ---- record.c: a derived field's get/set see the record through these (bindings/lua_derived.c) ---- */
void keel__record_get(keel_kind_id k, const void *record, int f, keel_value *out);
void keel__record_put(keel_kind_id k, void *record, int f, const keel_value *v);

/* ---- world.c ---- */

/* The world's structure counter: it moves on every structural change (an add, a remove, a
 * destroy, a reparent, a relayout, play's stop), so a binding that found a component's record
 * under one value knows the component is still there, and its record where it was, while the
 * counter has not moved. */
uint64_t keel__world_structure(const keel_world *w);
/* A replay's world (design/replay.md) is frozen between its frames: commands and field writes
 * refuse with InvalidOperation (keel__refuse_frozen). */
bool keel__world_frozen(const keel_world *w);
void keel__world_freeze(keel_world *w, bool on);

/* ---- recording and replaying (game/record.c, game/replay.c; design/replay.md) ---- */
typedef struct keel_recorder keel_recorder;
/* Starts recording w into `path` (created or truncated): the header, keyframe 0, then a frame per
 * step, a keyframe every `every` frames (0: only the first and the last). `source` (optional)
 * gives a kind's source file hash (0: none). InvalidOperation: inside a step or callback, already
 * recording, a replay's world, lifts open, timers or messages pending; IOError. The world's end
 * closes the file (whole to its last frame); the recorder itself is freed only by keel__record_stop. */
keel_status keel__record_start(keel_world *w, const char *path, uint32_t every,
                               uint64_t (*source)(const char *key, void *ud), void *ud, keel_recorder **out,
                               keel_diags *d);
/* Writes the last keyframe, closes the file, detaches and frees r (NULL: no-op). IOError when a
 * write failed meanwhile (the file then ends at the last frame written). */
keel_status keel__record_stop(keel_recorder *r, keel_diags *d);
keel_recorder *keel__recorder_of(const keel_world *w); /* w's recorder, or NULL */
uint64_t keel__record_frames(const keel_recorder *r);
bool keel__record_open(const keel_recorder *r); /* false once its world went */
uint64_t keel__record_bytes(const keel_recorder *r);
const char *keel__record_path(const keel_recorder *r);
/* A binding's message payloads as bytes, for recordings (game/record_input.c), registered on each
 * world the binding wraps. encode: a malloc'd copy of `user` as bytes (*len), or NULL when it
 * cannot be written; decode: a payload for world w made from bytes, with its release; false on
 * bad bytes (every length bounded first). */
typedef struct keel__msg_codec {
    void *(*encode)(void *ud, const void *user, size_t *len);
    bool (*decode)(void *ud, keel_world *w, const uint8_t *p, size_t len, void **user, void (**release)(void *user));
} keel__msg_codec;
void keel__msg_codec_set(keel_world *w, const keel__msg_codec *c, void *ud);
/* A timer whose action is data (game/record_input.c): each firing queues message `name` (the bytes
 * data/size, and the binding's payload `user`, written at once by the world's codec and released)
 * to `owner`, or to every receiver when owner is 0. A recording holds it (made from outside a
 * step, or pending at a keyframe) where it cannot hold a timer's function. InvalidArgument and
 * NotFound as keel_timer_add and keel_send; InvalidOperation: a payload the world's codec cannot
 * write. */
keel_status keel__timer_message(keel_world *w, double seconds, bool repeat, keel_entity owner, const char *name,
                                const void *data, size_t size, void *user, void (*release)(void *user),
                                keel_timer_id *id, keel_diags *d);

typedef struct keel_replay keel_replay;
typedef struct keel_replay_opts {
    bool allow_changed_kinds; /* run with kinds that differ from the recording's */
    bool verify;              /* compare each frame's hash (true unless asked not to) */
    uint64_t (*source)(const char *key, void *ud); /* a kind's source hash now (as keel__record_start) */
    void *ud;
} keel_replay_opts;
/* One difference found against a keyframe (keel__replay_divergence). */
typedef struct keel_replay_diff {
    char entity[37];          /* "" for the scene root */
    char *kind;               /* NULL: the entity itself (missing on one side, or its name, parent, flags) */
    uint32_t slot;
    char *field;              /* NULL: the whole component (missing on one side) */
    char *recorded, *replayed; /* the values as text ("(absent)" when missing) */
} keel_replay_diff;
/* Opens a recording into a new world `w` (made by the caller, e.g. by a binding that runs hooks in
 * it): reads and checks every chunk up to the last whole one, compares the kinds (refused, all
 * named, unless allowed), builds keyframe 0 in w. ParseError (a bad chunk with its offset), IOError,
 * InvalidOperation (kinds that differ). w is then frozen between frames. */
keel_status keel__replay_open(const char *path, keel_world *w, const keel_replay_opts *o, keel_replay **out,
                              keel_diags *d);
/* The same from bytes in memory (copied), `name` naming them in diagnostics (the fuzz target). */
keel_status keel__replay_open_bytes(const void *p, size_t len, const char *name, keel_world *w,
                                    const keel_replay_opts *o, keel_replay **out, keel_diags *d);
void keel__replay_close(keel_replay *rp); /* the world stays the caller's, and frozen: keel__world_freeze(w, false) */
uint64_t keel__replay_frames(const keel_replay *rp);
uint64_t keel__replay_frame(const keel_replay *rp);
bool keel__replay_truncated(const keel_replay *rp); /* the file ended in a torn chunk (dropped) */
size_t keel__replay_keyframes(const keel_replay *rp, uint64_t *out, size_t cap); /* frames with a keyframe */
/* Re-simulates n frames (inputs, then the step), verifying each. Diverged: the first frame whose
 * hash differs (the replay stays at it; keel__replay_divergence says what differs). */
keel_status keel__replay_step(keel_replay *rp, uint64_t n, keel_diags *d);
/* To `frame`: from the nearest restorable keyframe at or before it (or from here when that is
 * nearer), re-simulating the rest. InvalidArgument past the last frame. */
keel_status keel__replay_seek(keel_replay *rp, uint64_t frame, keel_diags *d);
/* The frame verification failed at (0: none yet) and the differences found against the next
 * keyframe (or the last state); the array stays the replay's. */
uint64_t keel__replay_diverged(const keel_replay *rp, const keel_replay_diff **diffs, size_t *n);
/* Branching: the replay's world becomes a live one (unfrozen, UUIDs from the process again) and is
 * returned; `fresh` (an empty world the caller made) becomes the replay's, re-simulated to the
 * same frame. NULL (nothing changed) when that fails. */
keel_world *keel__replay_adopt(keel_replay *rp, keel_world *fresh, keel_diags *d);
keel_world *keel__replay_world(const keel_replay *rp);
uint64_t keel__replay_hash(const keel_replay *rp); /* the replay world's state hash now */
/* Moves whenever the structure counter moves or an enabled flag of an entity or a component
 * changes (both only grow): a binding that found which rows of a query count (enabled, under
 * active entities) knows the answer holds while this has not moved. */
uint64_t keel__world_visibility(const keel_world *w);
/* Whether handle e was taken in an earlier epoch of w (before a keel_world_stop): its generation
 * carries a tag w no longer has. A binding words its "stale handle" answer with it. */
bool keel__world_earlier_epoch(const keel_world *w, keel_entity e);

/* ---- game/close.c ---- */

/* keel_world_close's first half, for a binding whose hooks need the world's own handle alive
 * while they run (w:close): every component retired, the world left empty and not freed. */
keel_status keel__world_retire(keel_world *w, keel_diags *d);

/* ---- pass.c: what a system pass decided, kept between passes ---- */

/* Which entities a system pass visits (keel__each_visit's verdicts) and their components' records
 * and rows hold while keel__pass_stamp_holds: the same world and epoch, no structural change, no
 * enabled or fault flag moved, no kind (re)declared, and, while components added during this
 * step wait for the next frame, the same frame. A binding keeps verdicts under a stamp taken
 * when it made them (the world's address alone could be reused: it adds its own count of freed
 * worlds). */
typedef struct keel__pass_stamp {
    const keel_world *w;
    uint64_t epoch, structure, enabling, decls, frame;
    bool frame_bound;
} keel__pass_stamp;
void keel__pass_stamp_take(const keel_world *w, keel__pass_stamp *s);
bool keel__pass_stamp_holds(const keel_world *w, const keel__pass_stamp *s);

/* ---- kind.c ---- */

/* Moves on every kind declaration or redeclaration (and at shutdown): a binding's per-kind
 * caches built under one value hold while it does. */
uint64_t keel__kind_declarations(void);
/* The most kinds the registry holds: KEEL__KIND_MAX (member.h); a test lowers it to reach the
 * limit without declaring 65,535 kinds. */
extern uint32_t keel__kinds_limit;

/* ---- query.c: one lookup for a binding's handle ---- */

typedef struct keel__comp_info {
    keel_comp c;             /* c.slot the actual slot */
    uint64_t serial;         /* keel_member.serial */
    void *record;            /* valid while keel__world_structure(w) does not move */
    uint32_t row;            /* its storage row, as long */
    bool enabled;            /* its own flag */
} keel__comp_info;
/* keel_get_comp, keel_comp_serial, keel_record and keel_comp_enabled in one lookup; false when e
 * holds no loaded component of kind k in `slot` (KEEL_SLOT_AUTO: the lowest). */
bool keel__comp_info_get(const keel_world *w, keel_entity e, keel_kind_id k, uint32_t slot, keel__comp_info *out);
/* A binding's query loop: live non-root entity e's components of the n kinds (each its lowest
 * slot) in one lookup of e; false when e lacks one or, unless `all`, one is disabled or e is
 * not active (itself and its ancestors enabled). */
bool keel__comp_info_row(const keel_world *w, keel_entity e, const keel_kind_id *kinds, size_t n, bool all,
                         keel__comp_info *out);

/* ---- member.c: a remove whose kind the caller has found ---- */

/* keel_remove with key's kind id k already looked up (KEEL_NO_KIND: not registered; then as
 * keel_remove). k must be keel_kind_find(key)'s answer: a binding's memo of it qualifies. */
keel_status keel__remove(keel_world *w, keel_entity e, keel_kind_id k, const char *key, uint32_t slot,
                         keel_cmd *inverse, keel_diags *d);

/* ---- step.c: hook transactions and batches ---- */

/* An open hook transaction (between its begin and end). */
typedef struct keel__hook_txn {
    keel_call call;          /* call.diags points at diags */
    keel_diags diags;
    keel_uuid uuid;
    uint32_t index;
    uint32_t row;            /* the component's storage row when the hook began */
    size_t mark;
    int cmd_depth;
    keel_comp outer;         /* the hook this one runs inside (w->hook_comp before it) */
    uint32_t outer_row;
    const keel_kind_desc *kd;
    bool detached;           /* an on_destroy run at the commit: the component is gone already */
} keel__hook_txn;

/* A stretch [next, end) of one kind's items in a phase's run list, run by a binding in one go
 * (the Lua binding: one protected Lua call for many hooks). Every item is still its own
 * transaction: keel__batch_next skips items not due and opens the next one's (false at the
 * end, or when the kind was redeclared: run_phase takes over from `next`); keel__batch_done
 * commits it, or rolls it back and faults it, exactly as a single hook call. */
typedef struct keel__batch {
    keel_world *w;
    keel_phase phase;
    double dt;
    void *user;              /* the kind's desc.user when the batch began */
    void (*run)(struct keel__batch *b); /* the kind's batch runner when it began */
    size_t next, end;
    keel__hook_txn txn;      /* the open item: txn.call is what the hook gets */
} keel__batch;
#define KEEL__BATCH_MIN 4    /* shorter stretches go one call at a time */
/* Set by a binding after declaring kind k (a redeclaration clears it): k's stretches of at least
 * KEEL__BATCH_MIN items in a phase's run list go through run(b), which calls k's hooks. */
void keel__kind_set_batch(keel_kind_id k, void (*run)(keel__batch *b));
bool keel__batch_next(keel__batch *b);
void keel__batch_done(keel__batch *b, keel_status st);
/* What a system's `each` visits: whether live entity e holds each of the n kinds (lowest slot)
 * taking part in this step (enabled, not faulted, under active entities, not added during this
 * step: what a hook would run); then c[k], rec[k] and row[k] are that
 * component, its record and its storage row. */
bool keel__each_visit(const keel_world *w, keel_entity e, size_t n, const keel_kind_id *kinds, keel_comp *c,
                      void **rec, uint32_t *row);
/* A callback transaction not tied to a component (a system's run, each call of its `each`): close
 * commits, or rolls back on a status other than KEEL_OK (the caller records the failure). Open
 * sets only what close reads and t->diags (empty): t->call is not filled. */
void keel__callback_open(keel_world *w, keel__hook_txn *t);
void keel__callback_close(keel_world *w, keel__hook_txn *t, keel_status st);
/* Records a system's failure in the world's error list (keel_fault.system = its name; where: the
 * Lua position "chunk:line" of the error, or NULL). */
void keel__fault_system(keel_world *w, keel_uuid entity, const char *system, keel_phase phase, const char *message,
                        const char *where);
/* Runs component c's hook for `phase` as a transaction (a failure rolls back, faults, records),
 * unless c is gone, disabled, under a disabled entity or faulted. */
void keel__run_hook(keel_world *w, keel_comp c, keel_phase phase);
/* Queues a message as keel_send (broadcast false: to `to`) or keel_broadcast does, with a
 * binding's payload in message.user: release(user) runs when the message is dropped, delivered
 * or refused (message.c). */
keel_status keel__message_post(keel_world *w, keel_entity to, bool broadcast, const char *name, const void *data,
                               size_t size, keel_entity sender, void *user, void (*release)(void *user),
                               keel_diags *d);
/* Records an entry in the world's error list (keel_fault_at), as a failed hook would. */
void keel__fault_add(keel_world *w, keel_uuid entity, const char *kind, uint32_t slot, keel_phase phase,
                     const char *message);
/* The kind of the batch's next item (the binding prepares its per-kind state from it). */
keel_kind_id keel__batch_kind(const keel__batch *b);

/* ---- value.c ---- */

/* The value as a body node of type t (`choice`: an enum's choice name). `quote_text`: strings
 * double-quoted and choices plain, as typed text; else both left to the writer (canonical). */
keel_node *keel__value_node(keel_type t, const keel_value *v, const char *choice, bool quote_text);

/* ---- the editing loop (design/editing.md) ---- */

/* Sets w's revision: undo puts back the revision the world had before the undone command, so
 * undoing back to the saved checkpoint makes the world clean again (as keel_world_stop does). */
void keel__world_set_revision(keel_world *w, uint64_t revision);
/* How often keel__world_set_revision moved the revision: an observer compares (revision, this),
 * which never repeats, where the revision alone can come back to a value it had. */
uint64_t keel__world_revision_sets(const keel_world *w);
/* e and its subtree as a scene fragment: `keel: 1`, the scene's uuid and name, and `entities:`
 * in pre-order with parents as UUIDs, e's own parent left out (canonical, as keel_scene_dump). */
keel_status keel__scene_dump_subtree(const keel_world *w, keel_entity e, char **out, size_t *len, keel_diags *d);
/* keel_scene_parse for a fragment: its entity fields may name entities outside it (w:paste
 * keeps or clears those). */
keel_status keel__scene_parse_fragment(const char *text, size_t len, const keel_load_opts *o, keel_world **out,
                                       keel_diags *d);
/* keel_instantiate for a pasted fragment: entity fields naming an entity outside the template
 * keep their UUID when dst holds it and are cleared otherwise; `inverse` (may be NULL) gets the
 * batch that destroys the copies. */
keel_status keel__paste(keel_world *dst, const keel_world *tmpl, keel_entity parent, keel_entity *out, size_t cap,
                        size_t *count, keel_cmd *inverse, keel_diags *d);

/* ---- util.c ---- */

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF): what YAML can hold. */
bool keel__utf8_valid(const char *s);

/* ---- play.c, keep.c: play mode's keep (editing.md) ---- */

/* Marks e (kind NULL) or its component kind/slot (KEEL_SLOT_AUTO: the lowest, or slot 0 when e
 * has none: kept away, removed at stop) to carry back at stop; `on` false unmarks it.
 * InvalidOperation when w is not playing; NotFound for a dead e or an unknown kind. */
keel_status keel__world_keep(keel_world *w, keel_entity e, const char *kind, uint32_t slot, bool on, keel_diags *d);
/* keel_world_stop, and then the kept state written into the restored world: the inverse of all
 * of it as one BATCH in *inverse (NONE when nothing applied), each refused entry an
 * InvalidOperation of severity sev in refused. */
keel_status keel__world_stop(keel_world *w, keel_cmd *inverse, keel_diags *refused, keel_severity sev, keel_diags *d);

/* ---- Replication (core/net/): counters the Lua binding, tests and benches read ---- */
struct keel_net_host;
struct keel_net_client;
typedef struct keel__net_stats {
    uint64_t spawns, removals, adds, drops, deltas, ignored; /* client: records applied / ignored */
    uint64_t resnapshots;                                    /* host: full resnapshots sent */
    uint64_t bytes;                                          /* host: payload bytes sent; client: received */
    uint64_t packets;
    uint64_t wire;         /* host: bytes ENet put on the wire (headers too) */
    uint64_t handshaking;  /* host: peers connected that have not said hello yet */
    uint64_t dropped_slow; /* host: peers dropped for not saying hello within the deadline */
} keel__net_stats;
keel__net_stats keel__net_client_stats(const struct keel_net_client *c);
keel__net_stats keel__net_host_stats(const struct keel_net_host *h);

/* ---- files/rescene.c: the scene file watcher's core (editing.md) ---- */

#include "keel_merge.h" /* keel_merge_scenes, keel_merge_take: the watcher merges as keel merge does */

/* `w` brought from scene text `from` to `to` in place: their differences (entities by UUID,
 * components by kind and slot, fields by name, hierarchy and order) applied as one BATCH, whose
 * inverse is `*inverse` (untouched when nothing differs). *changes counts the commands. A text
 * that does not load is its load's errors, and nothing is applied. `cache` (may be NULL): a
 * world read from `from` already, used instead of reading it (and freed); on success it gets
 * the world read from `to`, on failure NULL. */
keel_status keel__scene_rebase(keel_world *w, const char *from, size_t flen, const char *to, size_t tlen,
                               const char *name, keel_world **cache, keel_cmd *inverse, size_t *changes,
                               keel_diags *d);
/* A merged scene's `conflicts:` list (an empty SEQ when none), the caller's to free. */
keel_status keel__scene_conflicts(const char *text, size_t len, keel_node **out, keel_diags *d);
/* The content hash a watcher compares (crc32). */
uint32_t keel__text_hash(const char *text, size_t len);

#endif
