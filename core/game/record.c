/* record.c — recording a session (design/replay.md): the file's chunks, keyframes, the state
 * hash, inputs as commands, and the recorder that attaches to a world.
 *
 * The file is the magic KEELREC2 (1 had keyframes in text form) and then chunks, each a tag byte, a u32 length, the payload
 * and a CRC-32 of the three: a header (keel's version, the scene, the keyframe interval, the
 * kinds registered with their version, layout hash and source hash), keyframe 0, and then one
 * frame chunk per step (its number, dt, the inputs that reached the world since the step before,
 * the state hash after it), with a keyframe chunk after every Nth frame. Each frame goes out
 * in one write and a flush, never an fsync: a killed process leaves whole chunks and at most
 * one torn one at the end, which the reader drops.
 *
 * Inputs are every change made from outside a step, caught on the world's one write path: a
 * command's inverse (world.h `input`, called when the outermost command ends outside a step and
 * outside any hook transaction) is turned into the command that does it again, read from the
 * world as the change left it; a field write outside any command is recorded as the SET it was.
 * The random generators are compared at each step's start, so a draw or a seed from outside
 * is recorded as the state it left. While recording, the world's new UUIDs come from its own
 * generator (world.h ids_from_rng), so the entities hooks and timers spawn get the same UUIDs
 * in a replay.
 *
 * A keyframe is the world whole (keel__keyframe_encode), compressed with zlib, or a diff
 * against the keyframe before it (keydelta.c, which chooses). Timers and
 * messages hold Lua functions and tables that a file cannot: a keyframe says how many were
 * pending, and one with any is not a place a replay may restore to (replay.c re-simulates from
 * an earlier one); keyframe 0 must have none. */
#include "bind.h"
#include "base/util.h"
#include "base/vec.h"
#include "game/record.h"
#include "model/body.h"
#include "model/command.h"
#include "model/hierarchy.h"
#include "model/record.h"
#include "model/kind.h"
#include "model/value.h"
#include "model/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ================================================================ chunks and commands */

void keel__chunk_put(keel__buf *out, uint8_t tag, const void *payload, size_t len)
{
    size_t at = out->len;
    keel__buf_u8(out, tag);
    keel__buf_u32(out, (uint32_t)len);
    keel__buf_bytes(out, payload, len);
    keel__buf_u32(out, (uint32_t)crc32_z(0L, out->p + at, out->len - at));
}

static void put_opt_str(keel__buf *b, const char *s)
{
    keel__buf_u8(b, s != NULL);
    if (s) keel__buf_str(b, s);
}

static char *rd_opt_str(keel__rd *r)
{
    return keel__rd_u8(r, "truncated command") ? keel__rd_str(r, "truncated command") : NULL;
}

static void put_value(keel__buf *b, const keel_value *v)
{
    keel__buf_u8(b, (uint8_t)v->type);
    keel__buf_u8(b, v->nil);
    switch (v->type) {
    case KEEL_T_BOOL: keel__buf_u8(b, v->as.b); break;
    case KEEL_T_INT:
    case KEEL_T_ENUM: keel__buf_u64(b, (uint64_t)v->as.i); break;
    case KEEL_T_FLOAT: keel__buf_f64(b, v->as.f); break;
    case KEEL_T_STRING: put_opt_str(b, v->as.s); break;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: keel__buf_uuid(b, v->as.u); break;
    default:
        for (int i = 0; i < 4; i++) keel__buf_f64(b, v->as.v[i]);
    }
}

static double rd_f64(keel__rd *r)
{
    uint64_t u = keel__rd_u64(r, "truncated value");
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static void rd_value(keel__rd *r, keel_value *v)
{
    memset(v, 0, sizeof *v);
    uint8_t t = keel__rd_u8(r, "truncated value");
    v->nil = keel__rd_u8(r, "truncated value") != 0;
    if (t >= KEEL_T_COUNT_) {
        if (!r->err) r->err = "unknown value type";
        return;
    }
    v->type = (keel_type)t;
    switch (v->type) {
    case KEEL_T_BOOL: v->as.b = keel__rd_u8(r, "truncated value") != 0; break;
    case KEEL_T_INT:
    case KEEL_T_ENUM: v->as.i = (int64_t)keel__rd_u64(r, "truncated value"); break;
    case KEEL_T_FLOAT: v->as.f = rd_f64(r); break;
    case KEEL_T_STRING: v->as.s = rd_opt_str(r); break;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: v->as.u = keel__rd_uuid(r, "truncated value"); break;
    default:
        for (int i = 0; i < 4; i++) v->as.v[i] = rd_f64(r);
    }
}

void keel__cmd_encode(keel__buf *b, const keel_cmd *c)
{
    keel__buf_u8(b, (uint8_t)c->type);
    keel__buf_uuid(b, c->entity);
    keel__buf_uuid(b, c->parent);
    put_opt_str(b, c->kind_key);
    keel__buf_u32(b, c->slot);
    keel__buf_u32(b, (uint32_t)c->version);
    put_opt_str(b, c->field);
    if (c->type == KEEL_CMD_SET) put_value(b, &c->value);
    put_opt_str(b, c->name);
    keel__buf_u8(b, c->enabled);
    keel__buf_u64(b, c->index == SIZE_MAX ? UINT64_MAX : (uint64_t)c->index);
    keel__buf_u8(b, c->tree != NULL);
    if (c->tree) keel__buf_node(b, c->tree);
    keel__buf_u32(b, (uint32_t)c->item_count);
    for (size_t i = 0; i < c->item_count; i++) keel__cmd_encode(b, &c->items[i]);
}

bool keel__cmd_decode(keel__rd *r, keel_cmd *c, int depth)
{
    memset(c, 0, sizeof *c);
    if (depth > KEEL__REC_DEPTH) {
        r->err = "commands nested too deep";
        return false;
    }
    uint8_t t = keel__rd_u8(r, "truncated command");
    if (t > KEEL_CMD_BATCH) {
        if (!r->err) r->err = "unknown command type";
        return false;
    }
    c->type = (keel_cmd_type)t;
    c->entity = keel__rd_uuid(r, "truncated command");
    c->parent = keel__rd_uuid(r, "truncated command");
    c->kind_key = rd_opt_str(r);
    c->slot = keel__rd_u32(r, "truncated command");
    c->version = (int)keel__rd_u32(r, "truncated command");
    c->field = rd_opt_str(r);
    if (c->type == KEEL_CMD_SET) rd_value(r, &c->value);
    c->name = rd_opt_str(r);
    c->enabled = keel__rd_u8(r, "truncated command") != 0;
    uint64_t idx = keel__rd_u64(r, "truncated command");
    c->index = idx > SIZE_MAX ? SIZE_MAX : (size_t)idx;
    if (keel__rd_u8(r, "truncated command")) c->tree = keel__rd_node(r, 0, KEEL__REC_DEPTH);
    uint32_t n = keel__rd_count(r, 60, "truncated batch");
    if (n && !r->err) {
        c->items = keel__xcalloc(n, sizeof *c->items);
        c->item_count = n;
        for (uint32_t i = 0; i < n && !r->err; i++) keel__cmd_decode(r, &c->items[i], depth + 1);
    }
    return r->err == NULL;
}

/* ================================================================ keyframes */

/* An entity in a keyframe is binary, not its document form: formatting every double as its
 * shortest text was most of what a keyframe cost, and a keyframe of a big world comes every N
 * frames. Each field carries its key and type, so a kind changed since (allow_changed_kinds)
 * still reads; the reader turns the values back into a body as a scene's text would give it,
 * so adding it goes the scene loader's way. */
enum { KF_STARTED = 1, KF_AWOKEN = 2, KF_FAULTED = 4, KF_DISABLED = 8 };
enum { KE_PARENT = 1, KE_DISABLED = 2 };
enum { KB_FIELDS = 0, KB_NODE = 1 };

static void encode_fields(const keel_world *w, const keel__entry *m, keel__buf *b)
{
    const keel_kind_desc *K = keel_kind_describe(m->kind);
    const void *rec = keel__store_rec(&w->stores[m->kind], m->row);
    keel__buf_u8(b, KB_FIELDS);
    keel__buf_u32(b, (uint32_t)K->field_count);
    for (size_t i = 0; i < K->field_count; i++) {
        const keel_field_desc *f = &K->fields[i];
        keel_value v;
        keel__record_get(m->kind, rec, (int)i, &v);
        keel__buf_str(b, f->key);
        keel__buf_u8(b, (uint8_t)f->type);
        switch (f->type) {
        case KEEL_T_BOOL: keel__buf_u8(b, v.as.b); break;
        case KEEL_T_INT: keel__buf_u64(b, (uint64_t)v.as.i); break;
        case KEEL_T_FLOAT: keel__buf_f64(b, v.as.f); break;
        case KEEL_T_ENUM: keel__buf_str(b, keel__value_choice(f, v.as.i)); break;
        case KEEL_T_STRING: keel__buf_str(b, v.as.s ? v.as.s : ""); break;
        case KEEL_T_ASSET:
        case KEEL_T_ENTITY:
            keel__buf_u8(b, v.nil);
            if (!v.nil) keel__buf_uuid(b, v.as.u);
            break;
        default:
            for (int c = 0; c < keel_type_width(f->type); c++) keel__buf_f64(b, v.as.v[c]);
        }
    }
}

static void encode_entity(const keel_world *w, uint32_t i, keel__buf *b)
{
    const keel__ent *en = &w->ents[i];
    bool parent = en->parent != 0 && en->parent != KEEL__NONE;
    keel__buf_u8(b, (uint8_t)((parent ? KE_PARENT : 0) | (en->enabled ? 0 : KE_DISABLED)));
    keel__buf_uuid(b, en->uuid);
    keel__buf_str(b, keel__ent_name(w, en));
    if (parent) keel__buf_uuid(b, w->ents[en->parent].uuid);
    const keel__entry *ms = keel__members(w, en);
    keel__buf_u32(b, en->member_count);
    for (uint32_t k = 0; k < en->member_count; k++) {
        const keel__entry *m = &ms[k];
        keel__buf_str(b, keel__entry_key(m));
        keel__buf_u32(b, (uint32_t)(m->kind ? keel_kind_describe(m->kind)->version : keel__entry_unk(m)->version));
        keel__buf_u32(b, keel__entry_slot(w, m));
        keel__buf_u8(b, (uint8_t)((m->started ? KF_STARTED : 0) | (m->awoken ? KF_AWOKEN : 0) |
                                  (m->faulted ? KF_FAULTED : 0) | (m->enabled ? 0 : KF_DISABLED)));
        if (m->kind) {
            encode_fields(w, m, b);
        } else {
            const keel_node *body = keel__entry_unk(m)->preserved;
            keel__buf_u8(b, KB_NODE);
            keel__buf_u8(b, body != NULL);
            if (body) keel__buf_node(b, body);
        }
    }
}

void keel__keyframe_encode(const keel_world *w, keel__buf *b)
{
    keel__buf_uuid(b, w->uuid);
    keel__buf_str(b, w->name ? w->name : "");
    keel__buf_f64(b, w->time);
    keel__buf_f64(b, w->acc);
    keel__buf_f64(b, w->fixed_dt);
    keel__buf_u64(b, w->frame);
    int64_t seed;
    uint64_t rs[4];
    bool seeded = keel_random_state(w, &seed, rs);
    keel__buf_u8(b, seeded);
    keel__buf_u64(b, (uint64_t)seed);
    for (int i = 0; i < 4; i++) keel__buf_u64(b, rs[i]);
    for (int i = 0; i < 4; i++) keel__buf_u64(b, w->idrng[i]);
    keel__buf_u32(b, (uint32_t)(keel_timer_count(w) + keel_message_count(w))); /* pending: not restorable */
    uint32_t *list = NULL;
    size_t n = 0, cap = 0;
    keel__subtree_collect(w, 0, &list, &n, &cap);
    uint32_t count = 0;
    for (size_t k = 0; k < n; k++) count += list[k] != 0 && !keel__lifted(w, list[k]);
    encode_entity(w, 0, b); /* the root: its components */
    keel__buf_u32(b, count);
    for (size_t k = 0; k < n; k++)
        if (list[k] != 0 && !keel__lifted(w, list[k])) encode_entity(w, list[k], b);
    free(list);
    keel__rec_put_trailer((keel_world *)w, b); /* record_input.c: the mirror flag, messages queued */
}

/* Empties w without running a hook: entities, the root's components, timers and messages. */
static void world_clear(keel_world *w)
{
    bool rb = w->rolling_back;
    w->rolling_back = true;
    for (;;) { /* a destroy moves children to the top level: until none is left */
        keel_entity e = keel_entity_child(w, keel_world_root(w), 0);
        if (!e) break;
        keel_destroy(w, e, NULL, NULL);
    }
    keel_member m;
    while (keel_member_at(w, keel_world_root(w), 0, &m)) {
        if (keel_remove(w, keel_world_root(w), m.key, m.slot, NULL, NULL) != KEEL_OK) break;
    }
    w->rolling_back = rb;
    keel__ext_stop(w);
    keel__store_flush_pending(w);
}

static keel_status bad_keyframe(keel__rd *r, keel_diags *d)
{
    return KEEL_ERROR(d, r->limit ? KEEL_LIMIT_EXCEEDED : KEEL_PARSE_ERROR, "", "recording: keyframe: %s",
                      r->err ? r->err : "malformed");
}

/* A keyframe's field values back as the body a scene's text would give: what keel__add_internal
 * and keel_add_unknown take. NULL with r->err set when the bytes are damaged. */
static keel_node *read_body(keel__rd *r)
{
    uint8_t form = keel__rd_u8(r, "truncated keyframe");
    if (form == KB_NODE) {
        if (!keel__rd_u8(r, "truncated keyframe")) return r->err ? NULL : keel_node_new_map();
        return keel__rd_node(r, 0, KEEL__REC_DEPTH);
    }
    if (form != KB_FIELDS) {
        if (!r->err) r->err = "unknown body form";
        return NULL;
    }
    size_t max_len = keel_limits_default().string_length;
    uint32_t n = keel__rd_count(r, 6, "truncated keyframe"); /* a key's length and a type at least */
    keel_node *map = keel_node_new_map();
    map->style = KEEL_STYLE_BLOCK;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        char *key = keel__rd_str(r, "truncated keyframe"), *text = NULL;
        uint8_t t = keel__rd_u8(r, "truncated keyframe");
        keel_value v = { .type = (keel_type)t };
        if (!r->err && t >= KEEL_T_COUNT_) r->err = "unknown value type";
        if (!r->err) {
            switch (v.type) {
            case KEEL_T_BOOL: v.as.b = keel__rd_bool(r, "truncated keyframe"); break;
            case KEEL_T_INT: v.as.i = (int64_t)keel__rd_u64(r, "truncated keyframe"); break;
            case KEEL_T_FLOAT: v.as.f = rd_f64(r); break;
            case KEEL_T_ENUM:
            case KEEL_T_STRING: v.as.s = text = keel__rd_str(r, "truncated keyframe"); break;
            case KEEL_T_ASSET:
            case KEEL_T_ENTITY:
                v.nil = keel__rd_bool(r, "truncated keyframe");
                if (!v.nil) v.as.u = keel__rd_uuid(r, "truncated keyframe");
                break;
            default:
                for (int c = 0; c < keel_type_width(v.type); c++) v.as.v[c] = rd_f64(r);
            }
        }
        if (!r->err && (strlen(key) > max_len || (text && strlen(text) > max_len))) {
            r->err = "a string is longer than the limit";
            r->limit = true;
        }
        if (!r->err && keel_node_get(map, key)) r->err = "a field twice in one body";
        if (!r->err) keel_node_put(map, key, keel__value_node(v.type, &v, text, false));
        free(key);
        free(text);
    }
    if (r->err) {
        keel_node_free(map);
        return NULL;
    }
    return map;
}

/* An entity's components, read and added as a scene loader adds them: rules checked by the
 * caller's world as a whole, no awake; then each entry's flags. */
static keel_status read_components(keel_world *w, keel_entity e, keel__rd *r, keel_diags *d)
{
    uint32_t n = keel__rd_count(r, 15, "truncated keyframe");
    keel_status st = r->err ? bad_keyframe(r, d) : KEEL_OK;
    for (uint32_t c = 0; c < n && st == KEEL_OK; c++) {
        char *key = keel__rd_str(r, "truncated keyframe");
        uint32_t version = keel__rd_u32(r, "truncated keyframe"), slot = keel__rd_u32(r, "truncated keyframe");
        uint8_t f = keel__rd_u8(r, "truncated keyframe");
        keel_node *body = r->err ? NULL : read_body(r);
        if (!body || !*key || slot > UINT32_MAX - 1 || version < 1 || version > INT32_MAX) {
            st = r->err ? bad_keyframe(r, d) : KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: a keyframe's component is malformed");
        } else {
            keel_kind_id k = keel_kind_find(key);
            if (k && (int)version <= keel_kind_describe(k)->version) {
                keel_add_opts o = KEEL_ADD_OPTS_INIT;
                o.slot = slot;
                o.body = body;
                o.version = (int)version;
                o.skip_rules = o.no_awake = true;
                st = keel__add_internal(w, e, k, &o, NULL, d);
            } else {
                st = keel_add_unknown(w, e, key, (int)version, slot, body, d);
            }
        }
        free(key);
        keel_node_free(body);
        if (st) break;
        keel__ent *en = keel__ent_get(w, e);
        keel__entry *m = &keel__members(w, en)[en->member_count - 1];
        if (f & KF_DISABLED) keel__entry_set_enabled(w, m, false);
        if (m->kind) {
            m->started = (f & KF_STARTED) != 0;
            m->awoken = (f & KF_AWOKEN) != 0;
            m->faulted = (f & KF_FAULTED) != 0;
        }
    }
    return st;
}

keel_status keel__keyframe_apply(keel_world *w, const uint8_t *p, size_t len, keel_diags *d)
{
    keel__rd r = { p, len, 0, NULL, false };
    keel_uuid scene = keel__rd_uuid(&r, "truncated keyframe");
    char *name = keel__rd_str(&r, "truncated keyframe");
    double time = rd_f64(&r), acc = rd_f64(&r), fixed = rd_f64(&r);
    uint64_t frame = keel__rd_u64(&r, "truncated keyframe");
    bool seeded = keel__rd_u8(&r, "truncated keyframe") != 0;
    int64_t seed = (int64_t)keel__rd_u64(&r, "truncated keyframe");
    uint64_t rs[4], ids[4];
    for (int i = 0; i < 4; i++) rs[i] = keel__rd_u64(&r, "truncated keyframe");
    for (int i = 0; i < 4; i++) ids[i] = keel__rd_u64(&r, "truncated keyframe");
    keel__rd_u32(&r, "truncated keyframe"); /* pending timers and messages: the caller's to judge */
    if (r.err || keel_uuid_is_nil(scene) || !(fixed > 0)) {
        free(name);
        return bad_keyframe(&r, d);
    }
    world_clear(w);
    w->uuid = scene;
    if (name && keel_world_set_name(w, name, NULL) != KEEL_OK) keel_world_set_name(w, "", NULL);
    free(name);
    w->time = time;
    w->acc = acc;
    w->fixed_dt = fixed;
    w->frame = frame;
    if (seeded) keel_random_set_state(w, seed, rs, NULL);
    else w->seeded = false;
    if (ids[0] | ids[1] | ids[2] | ids[3]) memcpy(w->idrng, ids, sizeof ids);
    bool dormant = w->dormant;
    w->dormant = true; /* nothing wakes: the keyframe holds the state awake left */
    keel_status st = KEEL_OK;
    /* the root: only its components count */
    uint8_t rf = keel__rd_u8(&r, "truncated keyframe");
    keel__rd_uuid(&r, "truncated keyframe");
    free(keel__rd_str(&r, "truncated keyframe"));
    if (rf & KE_PARENT) keel__rd_uuid(&r, "truncated keyframe");
    st = r.err ? bad_keyframe(&r, d) : read_components(w, keel_world_root(w), &r, d);
    uint32_t n = st ? 0 : keel__rd_count(&r, 25, "truncated keyframe");
    if (st == KEEL_OK && r.err) st = bad_keyframe(&r, d);
    for (uint32_t k = 0; k < n && st == KEEL_OK; k++) {
        uint8_t ef = keel__rd_u8(&r, "truncated keyframe");
        keel_uuid u = keel__rd_uuid(&r, "truncated keyframe"), pu = { { 0 } };
        char *ename = keel__rd_str(&r, "truncated keyframe");
        if (ef & KE_PARENT) pu = keel__rd_uuid(&r, "truncated keyframe");
        if (r.err || ef > (KE_PARENT | KE_DISABLED) || keel_uuid_is_nil(u)) {
            free(ename);
            st = r.err ? bad_keyframe(&r, d) : KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: a keyframe's entity is malformed");
            break;
        }
        uint32_t parent = 0;
        if (ef & KE_PARENT) {
            keel_entity pe = keel_find(w, pu);
            if (!pe) st = KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: a keyframe names a parent before it");
            parent = (uint32_t)pe;
        }
        keel_entity e = 0;
        if (st == KEEL_OK) st = keel__spawn_at(w, ename, parent, SIZE_MAX, &u, &e, d);
        free(ename);
        if (st == KEEL_OK) st = read_components(w, e, &r, d);
        if (st == KEEL_OK && (ef & KE_DISABLED)) keel__ent_set_enabled(w, (uint32_t)e, false);
    }
    if (st == KEEL_OK && !r.err) st = keel__rec_apply_trailer(w, &r, d);
    if (st == KEEL_OK && (r.err || r.pos != r.len)) {
        if (!r.err) r.err = "trailing bytes";
        st = bad_keyframe(&r, d);
    }
    w->dormant = dormant;
    if (st) world_clear(w);
    keel__touch(w);
    return st;
}

/* ================================================================ the recorder */

struct keel_recorder {
    keel_world *w;
    FILE *f;
    char *path;
    uint32_t every;
    uint64_t frames;       /* frames written */
    keel__buf inputs;      /* this frame's inputs so far */
    uint32_t ninputs;
    uint64_t rng[4], idrng[4];
    int64_t seed;
    bool failed;           /* a write failed: the recording stops growing (said at close) */
    uint64_t bytes;
    size_t after_len;      /* this frame's inputs before the step's end began (record_input.c) */
    uint32_t after_n;
    size_t stop_len;       /* play's stop under way: the inputs before it */
    uint32_t stop_n;
    const char *ended;     /* why the recording stopped growing early (said at close), or NULL */
    keel__hasher hash;     /* the state hash, kept across frames (state_hash.c) */
    keel__keyframes keys;  /* the last keyframe: the next is a diff against it (keydelta.c) */
};

static const keel__ext_type record_ext;

/* The command that does again what `inv` undid, as the world is now; NONE when it cannot be said. */
static void forward_of(keel_world *w, const keel_cmd *inv, keel_cmd *out)
{
    memset(out, 0, sizeof *out);
    keel_entity e = keel_uuid_is_nil(inv->entity) ? keel_world_root(w) : keel_find(w, inv->entity);
    switch (inv->type) {
    case KEEL_CMD_NONE: return;
    case KEEL_CMD_SETTINGS: return; /* the editor grid and scene name: no part of the simulation */
    case KEEL_CMD_DESTROY: { /* it was a spawn (or a duplicate, an instantiate): the entity as it is */
        if (!e || e == keel_world_root(w)) return;
        out->type = KEEL_CMD_SPAWN;
        out->entity = inv->entity;
        out->tree = keel__entity_tree(w, (uint32_t)e);
        keel_entity p = keel_entity_parent(w, e), c;
        keel_entity host = p ? p : keel_world_root(w);
        out->index = SIZE_MAX;
        for (size_t i = 0; (c = keel_entity_child(w, host, i)); i++)
            if (c == e) out->index = i;
        return;
    }
    case KEEL_CMD_SPAWN: { /* it was a destroy */
        keel_uuid u = inv->entity;
        const keel_node *x = keel_uuid_is_nil(u) && inv->tree ? keel_node_get(inv->tree, "uuid") : NULL;
        if (x && x->kind == KEEL_NODE_SCALAR) keel_uuid_parse(x->text, &u);
        out->type = KEEL_CMD_DESTROY;
        out->entity = u;
        return;
    }
    case KEEL_CMD_REMOVE: { /* it was an add: the component as it is */
        if (!e) return;
        keel_member m;
        for (size_t i = 0; keel_member_at(w, e, i, &m); i++) {
            if (strcmp(m.key, inv->kind_key ? inv->kind_key : "") != 0 || m.slot != inv->slot) continue;
            out->type = KEEL_CMD_ADD;
            out->entity = inv->entity;
            out->kind_key = keel__strdup(m.key);
            out->slot = m.slot;
            out->version = m.version;
            out->index = i;
            if (m.loaded) {
                keel__entry *en = keel__comp_entry(w, (keel_comp){ e, m.kind, m.slot });
                out->tree = en ? keel__body_encode(m.kind, keel__store_rec(&w->stores[m.kind], en->row), 0) : NULL;
            } else {
                out->tree = m.preserved ? keel_node_copy(m.preserved) : NULL;
            }
            return;
        }
        return;
    }
    case KEEL_CMD_ADD: /* it was a remove */
        out->type = KEEL_CMD_REMOVE;
        out->entity = inv->entity;
        out->kind_key = keel__strdup(inv->kind_key);
        out->slot = inv->slot;
        return;
    case KEEL_CMD_SET: {
        keel_kind_id k = inv->kind_key ? keel_kind_find(inv->kind_key) : KEEL_NO_KIND;
        int f = k && inv->field ? keel_kind_field(k, inv->field) : -1;
        keel_value v;
        if (!e || f < 0 || keel_get(w, (keel_comp){ e, k, inv->slot }, f, &v, NULL) != KEEL_OK) return;
        out->type = KEEL_CMD_SET;
        out->entity = inv->entity;
        out->kind_key = keel__strdup(inv->kind_key);
        out->field = keel__strdup(inv->field);
        out->slot = inv->slot;
        out->value = v;
        if (v.type == KEEL_T_STRING && v.as.s) out->value.as.s = keel__strdup(v.as.s);
        return;
    }
    case KEEL_CMD_REPARENT: {
        if (!e) return;
        keel_entity p = keel_entity_parent(w, e), c;
        keel_entity host = p ? p : keel_world_root(w);
        out->type = KEEL_CMD_REPARENT;
        out->entity = inv->entity;
        out->parent = p ? keel_entity_uuid(w, p) : (keel_uuid){ { 0 } };
        out->index = SIZE_MAX;
        for (size_t i = 0; (c = keel_entity_child(w, host, i)); i++)
            if (c == e) out->index = i;
        return;
    }
    case KEEL_CMD_RENAME:
        if (!e) return;
        out->type = KEEL_CMD_RENAME;
        out->entity = inv->entity;
        out->name = keel__strdup(keel_entity_name(w, e));
        return;
    case KEEL_CMD_ENABLE:
        if (!e) return;
        out->type = KEEL_CMD_ENABLE;
        out->entity = inv->entity;
        out->enabled = keel_entity_enabled(w, e);
        return;
    case KEEL_CMD_ENABLE_COMPONENT: {
        keel_kind_id k = inv->kind_key ? keel_kind_find(inv->kind_key) : KEEL_NO_KIND;
        if (!e || !k) return;
        out->type = KEEL_CMD_ENABLE_COMPONENT;
        out->entity = inv->entity;
        out->kind_key = keel__strdup(inv->kind_key);
        out->slot = inv->slot;
        out->enabled = keel_comp_enabled(w, (keel_comp){ e, k, inv->slot });
        return;
    }
    case KEEL_CMD_BATCH: /* the inverse lists the items' inverses last first */
        out->type = KEEL_CMD_BATCH;
        out->items = keel__xcalloc(inv->item_count ? inv->item_count : 1, sizeof *out->items);
        for (size_t i = inv->item_count; i-- > 0;) {
            forward_of(w, &inv->items[i], &out->items[out->item_count]);
            if (out->items[out->item_count].type != KEEL_CMD_NONE) out->item_count++;
        }
        return;
    }
}

static void on_input(keel_world *w, void *state, const keel_cmd *cmd, bool inverse)
{
    keel_recorder *r = state;
    keel_cmd fwd;
    if (inverse) forward_of(w, cmd, &fwd);
    if (inverse && fwd.type == KEEL_CMD_NONE) return;
    /* a replication client's write of the authority's values: the replay writes it as one too */
    keel__buf_u8(&r->inputs, w->mirror_applying ? KEEL__IN_MIRROR_CMD : KEEL__IN_CMD);
    keel__cmd_encode(&r->inputs, inverse ? &fwd : cmd);
    r->ninputs++;
    if (inverse) keel_cmd_free(&fwd);
}

static bool write_bytes(keel_recorder *r, const keel__buf *b)
{
    if (r->failed) return false;
    if (fwrite(b->p, 1, b->len, r->f) != b->len || fflush(r->f) != 0) {
        r->failed = true;
        return false;
    }
    r->bytes += b->len;
    return true;
}

static void put_keyframe(keel_recorder *r, keel__buf *out)
{
    keel__buf raw = { 0 };
    keel__keyframe_encode(r->w, &raw);
    /* > 0 pending: not a place to restore to */
    keel__keyframe_put(&r->keys, out, r->frames, (uint32_t)keel__rec_unwritable(r->w), &raw);
}

static void note_random(keel_recorder *r)
{
    keel_random_state(r->w, &r->seed, r->rng);
    memcpy(r->idrng, r->w->idrng, sizeof r->idrng);
}

/* A draw or a seed from outside the step: recorded as the state it left. */
static void rec_step_begin(keel_world *w, void *state, double dt)
{
    (void)dt;
    keel_recorder *r = state;
    int64_t seed;
    uint64_t rs[4];
    keel_random_state(w, &seed, rs);
    if (seed == r->seed && !memcmp(rs, r->rng, sizeof rs) && !memcmp(w->idrng, r->idrng, sizeof rs)) return;
    keel__buf_u8(&r->inputs, KEEL__IN_RANDOM);
    keel__buf_u64(&r->inputs, (uint64_t)seed);
    for (int i = 0; i < 4; i++) keel__buf_u64(&r->inputs, rs[i]);
    for (int i = 0; i < 4; i++) keel__buf_u64(&r->inputs, w->idrng[i]);
    r->ninputs++;
}

/* The step's end begins (first of the extensions there): what reaches the world from here on (a
 * replication client's service) comes after the step, and the replay applies it there. */
static void rec_mark_after(keel_world *w, void *state, double dt)
{
    (void)w, (void)dt;
    keel_recorder *r = state;
    r->after_len = r->inputs.len;
    r->after_n = r->ninputs;
}
static const keel__ext_type record_mark_ext = { .name = "recorder mark", .order = -1000, .step_end = rec_mark_after };

static void rec_step_end(keel_world *w, void *state, double dt)
{
    keel_recorder *r = state;
    if (r->ended) {
        r->inputs.len = 0;
        r->ninputs = 0;
        return;
    }
    r->frames++;
    keel__buf pay = { 0 }, out = { 0 };
    keel__buf_u64(&pay, r->frames);
    keel__buf_f64(&pay, dt);
    bool after = r->ninputs > r->after_n && r->after_len <= r->inputs.len;
    keel__buf_u32(&pay, r->ninputs + after);
    if (after) {
        keel__buf_bytes(&pay, r->inputs.p, r->after_len);
        keel__buf_u8(&pay, KEEL__IN_AFTER_STEP);
        keel__buf_bytes(&pay, r->inputs.p + r->after_len, r->inputs.len - r->after_len);
    } else {
        keel__buf_bytes(&pay, r->inputs.p, r->inputs.len);
    }
    keel__buf_u64(&pay, keel__hasher_hash(&r->hash, w));
    keel__chunk_put(&out, KEEL__CH_FRAME, pay.p, pay.len);
    if (r->every && r->frames % r->every == 0) put_keyframe(r, &out);
    write_bytes(r, &out); /* one write per frame */
    free(pay.p);
    free(out.p);
    r->inputs.len = 0;
    r->ninputs = 0;
    r->after_len = 0;
    r->after_n = 0;
    note_random(r);
}

static void recorder_free(keel_recorder *r)
{
    if (r->f) fclose(r->f);
    free(r->inputs.p);
    free(r->path);
    keel__hasher_free(&r->hash);
    keel__keyframes_free(&r->keys);
    free(r);
}

static void detach(keel_recorder *r)
{
    keel_world *w = r->w;
    if (keel__ext_get(w, &record_ext) == r) keel__ext_remove(w, &record_ext);
    keel__ext_remove(w, &record_mark_ext);
    if (w->input_state == r) {
        w->input = NULL;
        w->input_state = NULL;
    }
    w->ids_from_rng = false;
}

/* The world goes while recording: its last frame is in the file already. The file is closed;
 * the recorder stays, closed, until keel__record_stop (its counts still readable). */
static void rec_world_free(keel_world *w, void *state)
{
    keel_recorder *r = state;
    if (w->input_state == r) w->input = NULL, w->input_state = NULL;
    if (r->f) fclose(r->f);
    r->f = NULL;
    r->w = NULL;
}

static const keel__ext_type record_ext = { .name = "recorder", .order = 1000, .step_begin = rec_step_begin,
                                           .step_end = rec_step_end, .free = rec_world_free };

keel_recorder *keel__recorder_of(const keel_world *w) { return w ? keel__ext_get(w, &record_ext) : NULL; }

keel_status keel__record_start(keel_world *w, const char *path, uint32_t every, uint64_t (*source)(const char *key, void *ud),
                               void *ud, keel_recorder **out, keel_diags *d)
{
    *out = NULL;
    if (!w || !path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel.record: NULL world or path");
    if (keel_world_in_callback(w) || w->in_step)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel.record refuses inside a step or callback");
    if (keel__ext_get(w, &record_ext))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "the world is recording already");
    if (w->frozen) return keel__refuse_frozen(d);
    if (w->lifts) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel.record refuses while entities are lifted");
    size_t pending = keel__rec_unwritable(w);
    if (pending)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "keel.record: %zu timers (or messages whose data no file can hold) are pending: timers "
                          "hold functions; start recording before they are made, e.g. right after loading",
                          pending);
    FILE *f = fopen(path, "wb");
    if (!f) return KEEL_ERROR(d, KEEL_IO_ERROR, "", "cannot write %s", path);
    keel_recorder *r = keel__xcalloc(1, sizeof *r);
    r->w = w;
    r->f = f;
    r->path = keel__strdup(path);
    r->every = every;
    keel__store_flush_pending(w);
    /* from now on the world draws its UUIDs from its own generator, seeded from its random state */
    int64_t seed;
    uint64_t rs[4];
    keel_random_state(w, &seed, rs);
    keel__random_seed_state(w->idrng, rs[0] ^ rs[2] ^ 0x7265636f7264ull);
    w->ids_from_rng = true;
    note_random(r);

    keel__buf hdr = { 0 }, head = { 0 };
    keel__buf_bytes(&head, KEEL__REC_MAGIC, KEEL__REC_MAGIC_LEN);
    keel__buf_str(&hdr, KEEL_VERSION_STRING);
    keel__buf_uuid(&hdr, w->uuid);
    keel__buf_str(&hdr, w->name ? w->name : "");
    keel__buf_u32(&hdr, every);
    size_t nk = keel_kind_count();
    keel__buf_u32(&hdr, (uint32_t)nk);
    for (size_t i = 0; i < nk; i++) {
        keel_kind_id k = keel_kind_at(i);
        const keel_kind_desc *kd = keel_kind_describe(k);
        keel__buf_str(&hdr, kd->key);
        keel__buf_u32(&hdr, (uint32_t)kd->version);
        keel__buf_u64(&hdr, keel__kind_layout_hash(k));
        keel__buf_u64(&hdr, source ? source(kd->key, ud) : 0);
    }
    keel__chunk_put(&head, KEEL__CH_HEADER, hdr.p, hdr.len);
    put_keyframe(r, &head);
    bool ok = write_bytes(r, &head);
    free(hdr.p);
    free(head.p);
    if (!ok) {
        w->ids_from_rng = false;
        recorder_free(r);
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "cannot write %s", path);
    }
    keel__ext_add(w, &record_ext, r);
    keel__ext_add(w, &record_mark_ext, r);
    w->input = on_input;
    w->input_state = r;
    *out = r;
    return KEEL_OK;
}

uint64_t keel__record_frames(const keel_recorder *r) { return r->frames; }
bool keel__record_open(const keel_recorder *r) { return r->w != NULL; }
uint64_t keel__record_bytes(const keel_recorder *r) { return r->bytes; }
const char *keel__record_path(const keel_recorder *r) { return r->path; }

keel_status keel__record_stop(keel_recorder *r, keel_diags *d)
{
    if (!r) return KEEL_OK;
    if (!r->w) { /* its world went: the file is closed already */
        recorder_free(r);
        return KEEL_OK;
    }
    keel_status st = KEEL_OK;
    if (!r->failed && !r->ended && !(r->every && r->frames % r->every == 0) && !r->w->in_step) {
        keel__buf out = { 0 };
        put_keyframe(r, &out); /* the last state, for a divergence found after the last keyframe */
        write_bytes(r, &out);
        free(out.p);
    }
    if (r->failed) st = KEEL_ERROR(d, KEEL_IO_ERROR, "", "writing %s failed: it ends at frame %llu", r->path,
                                   (unsigned long long)r->frames);
    else if (r->ended) st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s ends at frame %llu: %s", r->path,
                                       (unsigned long long)r->frames, r->ended);
    detach(r);
    if (fclose(r->f) != 0 && st == KEEL_OK) st = KEEL_ERROR(d, KEEL_IO_ERROR, "", "closing %s failed", r->path);
    r->f = NULL;
    recorder_free(r);
    return st;
}

/* ================================================================ inputs from other files */

keel__buf *keel__recorder_input(keel_world *w)
{
    keel_recorder *r = keel__recorder_of(w);
    if (!r || r->ended) return NULL;
    r->ninputs++;
    return &r->inputs;
}

void keel__record_stop_begin(keel_world *w)
{
    keel_recorder *r = keel__recorder_of(w);
    if (!r) return;
    r->stop_len = r->inputs.len;
    r->stop_n = r->ninputs;
}

void keel__record_stop_end(keel_world *w)
{
    keel_recorder *r = keel__recorder_of(w);
    if (!r || r->ended) return;
    r->inputs.len = r->stop_len; /* the stop's own commands: the state below holds them */
    r->ninputs = r->stop_n;
    if (keel__rec_unwritable(w)) { /* awake made timers again: no file holds their functions */
        r->ended = "play's stop left timers pending (they hold functions no file can)";
        r->inputs.len = 0;
        r->ninputs = 0;
        w->input = NULL; /* nothing more is an input: the file ends at its last frame */
        w->input_state = NULL;
        return;
    }
    keel__buf raw = { 0 };
    keel__keyframe_encode(w, &raw);
    keel__buf_u8(&r->inputs, KEEL__IN_STATE);
    keel__buf_u32(&r->inputs, (uint32_t)raw.len);
    keel__buf_bytes(&r->inputs, raw.p, raw.len);
    r->ninputs++;
    free(raw.p);
    note_random(r);
}
