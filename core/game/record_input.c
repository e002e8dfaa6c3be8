/* record_input.c — the inputs a recording holds beyond commands and random states: messages sent
 * from outside a step, replicated changes on a client, what arrives at a step's end, play's stop;
 * and the keyframe's trailing section (the messages queued, the world's mirror flag).
 *
 * A message is written as data: its name, bytes, target and sender by UUID, and the binding's
 * payload (the Lua binding's plain-data table) through the codec the binding registered on the
 * world (keel__msg_codec_set). A payload no codec writes makes the message unwritable: sending it
 * from outside a step while recording is refused, and a keyframe with one queued is not a place a
 * seek restores to (as a keyframe with timers pending: they hold functions). */
#include "bind.h"
#include "base/util.h"
#include "game/record.h"
#include "model/world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ the codec on a world */

typedef struct codec_state {
    const keel__msg_codec *c;
    void *ud;
} codec_state;

static void codec_free(keel_world *w, void *state)
{
    (void)w;
    free(state);
}
static const keel__ext_type codec_ext = { .name = "message codec", .order = 2000, .free = codec_free };

void keel__msg_codec_set(keel_world *w, const keel__msg_codec *c, void *ud)
{
    codec_state *s = keel__ext_get(w, &codec_ext);
    if (s) return; /* the first binding to wrap the world writes its payloads */
    s = keel__xcalloc(1, sizeof *s);
    *s = (codec_state){ c, ud };
    keel__ext_add(w, &codec_ext, s);
}

/* ================================================================ messages */

#define MSG_NAME_MAX 4096 /* a message timer's name */

bool keel__rec_put_message(keel_world *w, keel__buf *b, const keel_message *m, keel_entity target, bool broadcast)
{
    void *blob = NULL;
    size_t blen = 0;
    if (m->user) {
        const codec_state *s = keel__ext_get(w, &codec_ext);
        blob = s ? s->c->encode(s->ud, m->user, &blen) : NULL;
        if (!blob) return false;
    }
    keel__buf_u8(b, broadcast);
    keel__buf_uuid(b, broadcast || !keel_alive(w, target) ? (keel_uuid){ { 0 } } : keel_entity_uuid(w, target));
    keel__buf_uuid(b, m->sender && keel_alive(w, m->sender) ? keel_entity_uuid(w, m->sender) : (keel_uuid){ { 0 } });
    keel__buf_str(b, m->name);
    keel__buf_u32(b, (uint32_t)m->size);
    keel__buf_bytes(b, m->data, m->size);
    keel__buf_u8(b, blob != NULL);
    if (blob) {
        keel__buf_u32(b, (uint32_t)blen);
        keel__buf_bytes(b, blob, blen);
        free(blob);
    }
    return true;
}

keel_status keel__rec_post_message(keel_world *w, keel__rd *r, bool lenient, keel_diags *d)
{
    const char *cut = "truncated message";
    bool broadcast = keel__rd_u8(r, cut) != 0;
    keel_uuid tu = keel__rd_uuid(r, cut), su = keel__rd_uuid(r, cut);
    uint32_t nlen = keel__rd_count(r, 1, cut); /* bounded by the chunk: a send takes any length */
    const uint8_t *name = r->err ? NULL : r->p + r->pos;
    if (name) r->pos += nlen;
    uint32_t size = keel__rd_count(r, 1, cut);
    if (size > KEEL_MESSAGE_MAX_SIZE && !r->err) r->err = "message data too large";
    const uint8_t *data = r->err ? NULL : r->p + r->pos;
    if (data) r->pos += size;
    const uint8_t *blob = NULL;
    uint32_t blen = 0;
    if (keel__rd_u8(r, cut)) {
        blen = keel__rd_count(r, 1, cut);
        if (!r->err) {
            blob = r->p + r->pos;
            r->pos += blen;
        }
    }
    if (r->err) return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: %s", r->err);
    if (!nlen || memchr(name, 0, nlen)) {
        r->err = "a message without a name";
        return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: %s", r->err);
    }
    keel_entity to = broadcast ? KEEL_NO_ENTITY : keel_find(w, tu);
    if (!broadcast && !to) {
        if (lenient) return KEEL_OK; /* its target went: delivery would have dropped it */
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "recording: a message's target is not in the world");
    }
    void *user = NULL;
    void (*release)(void *) = NULL;
    const codec_state *s = keel__ext_get(w, &codec_ext);
    if (blob && s && !s->c->decode(s->ud, w, blob, blen, &user, &release))
        return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: a message's payload is malformed");
    char *nm = keel__xrealloc(NULL, (size_t)nlen + 1);
    memcpy(nm, name, nlen);
    nm[nlen] = 0;
    keel_status st = keel__message_post(w, to, broadcast, nm, size ? data : NULL, size, keel_find(w, su), user,
                                        release, d);
    free(nm);
    return st;
}

keel_status keel__record_message(keel_world *w, keel_entity to, bool broadcast, const keel_message *m, keel_diags *d)
{
    keel__buf tmp = { 0 };
    if (!keel__rec_put_message(w, &tmp, m, to, broadcast)) {
        free(tmp.p);
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "the world is recording: message %s carries a payload no recording can hold", m->name);
    }
    keel__buf *in = keel__recorder_input(w);
    if (in) {
        keel__buf_u8(in, KEEL__IN_MESSAGE);
        keel__buf_bytes(in, tmp.p, tmp.len);
    }
    free(tmp.p);
    return KEEL_OK;
}

/* ================================================================ timers whose action is a message */

typedef struct msg_timer {
    char *name;
    uint8_t *data, *blob;
    size_t size, blen;
    bool has_blob;
} msg_timer;

static void mt_free(void *u)
{
    msg_timer *m = u;
    free(m->name);
    free(m->data);
    free(m->blob);
    free(m);
}

keel_status keel__msg_timer_fire(const keel_timer_call *c)
{
    const msg_timer *m = c->user;
    keel_world *w = c->world;
    void *user = NULL;
    void (*release)(void *) = NULL;
    const codec_state *s = keel__ext_get(w, &codec_ext);
    if (m->has_blob && s && !s->c->decode(s->ud, w, m->blob, m->blen, &user, &release))
        return KEEL_ERROR(c->diags, KEEL_PARSE_ERROR, "", "timer message %s: its data does not decode", m->name);
    return keel__message_post(w, c->owner, c->owner == KEEL_NO_ENTITY, m->name, m->data, m->size, KEEL_NO_ENTITY,
                              user, release, c->diags);
}

static void put_mt(keel_world *w, keel__buf *b, const msg_timer *m, keel_entity owner)
{
    keel__buf_uuid(b, owner && keel_alive(w, owner) ? keel_entity_uuid(w, owner) : (keel_uuid){ { 0 } });
    keel__buf_str(b, m->name);
    keel__buf_u32(b, (uint32_t)m->size);
    keel__buf_bytes(b, m->data, m->size);
    keel__buf_u8(b, m->has_blob);
    if (m->has_blob) {
        keel__buf_u32(b, (uint32_t)m->blen);
        keel__buf_bytes(b, m->blob, m->blen);
    }
}

static uint8_t *rd_bytes(keel__rd *r, size_t n)
{
    uint8_t *p = keel__xrealloc(NULL, n ? n : 1);
    if (n) memcpy(p, r->p + r->pos, n);
    r->pos += n;
    return p;
}

/* One message timer's action (NULL with r->err set on bad bytes) and its owner's UUID. */
static msg_timer *rd_mt(keel__rd *r, keel_uuid *owner)
{
    const char *cut = "truncated timer";
    *owner = keel__rd_uuid(r, cut);
    char *name = keel__rd_str(r, cut);
    if (!r->err && (!name || !*name || strlen(name) > MSG_NAME_MAX)) r->err = "a timer message without a name";
    uint32_t size = keel__rd_count(r, 1, cut);
    if (size > KEEL_MESSAGE_MAX_SIZE && !r->err) r->err = "timer message data too large";
    if (r->err) {
        free(name);
        return NULL;
    }
    msg_timer *m = keel__xcalloc(1, sizeof *m);
    m->name = name;
    m->size = size;
    m->data = rd_bytes(r, size);
    m->has_blob = keel__rd_u8(r, cut) != 0;
    if (m->has_blob) {
        m->blen = keel__rd_count(r, 1, cut);
        if (!r->err) m->blob = rd_bytes(r, m->blen);
    }
    if (r->err) {
        mt_free(m);
        return NULL;
    }
    return m;
}

keel_status keel__timer_message(keel_world *w, double seconds, bool repeat, keel_entity owner, const char *name,
                                const void *data, size_t size, void *user, void (*release)(void *user),
                                keel_timer_id *id, keel_diags *d)
{
    keel_status st = KEEL_OK;
    if (id) *id = 0;
    if (!w || !name || !*name || strlen(name) > MSG_NAME_MAX)
        st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a timer's message needs a world and a name (1 to %d bytes)",
                        MSG_NAME_MAX);
    else if (size > KEEL_MESSAGE_MAX_SIZE || (size && !data))
        st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a timer's message data: NULL, or larger than %d bytes",
                        KEEL_MESSAGE_MAX_SIZE);
    void *blob = NULL;
    size_t blen = 0;
    if (st == KEEL_OK && user) {
        const codec_state *s = keel__ext_get(w, &codec_ext);
        blob = s ? s->c->encode(s->ud, user, &blen) : NULL;
        if (!blob)
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "timer message %s: its data cannot be written", name);
    }
    if (user && release) release(user); /* the bytes are what each firing decodes */
    if (st != KEEL_OK) return st;
    msg_timer *m = keel__xcalloc(1, sizeof *m);
    m->name = keel__strdup(name);
    m->size = size;
    m->data = keel__xrealloc(NULL, size ? size : 1);
    if (size) memcpy(m->data, data, size);
    m->blob = blob;
    m->blen = blen;
    m->has_blob = blob != NULL;
    keel_timer_desc desc = { .seconds = seconds, .repeat = repeat, .owner = owner, .fn = keel__msg_timer_fire,
                             .user = m, .release = mt_free };
    st = keel_timer_add(w, &desc, id, d);
    if (st != KEEL_OK) {
        mt_free(m);
        return st;
    }
    keel__buf *in = keel__input_wanted(w) ? keel__recorder_input(w) : NULL;
    if (in) {
        keel__buf_u8(in, KEEL__IN_TIMER);
        keel__buf_f64(in, seconds);
        keel__buf_u8(in, repeat);
        put_mt(w, in, m, owner);
    }
    return KEEL_OK;
}

keel_status keel__rec_apply_timer(keel_world *w, keel__rd *r, keel_diags *d)
{
    uint64_t bits = keel__rd_u64(r, "truncated timer");
    double seconds;
    memcpy(&seconds, &bits, 8);
    bool repeat = keel__rd_u8(r, "truncated timer") != 0;
    keel_uuid ou;
    msg_timer *m = rd_mt(r, &ou);
    if (!m) return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: %s", r->err);
    keel_entity owner = keel_uuid_is_nil(ou) ? KEEL_NO_ENTITY : keel_find(w, ou);
    if (!keel_uuid_is_nil(ou) && !owner) {
        mt_free(m);
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "recording: a timer's owner is not in the world");
    }
    keel_timer_desc desc = { .seconds = seconds, .repeat = repeat, .owner = owner, .fn = keel__msg_timer_fire,
                             .user = m, .release = mt_free };
    keel_status st = keel_timer_add(w, &desc, NULL, d);
    if (st != KEEL_OK) mt_free(m);
    return st;
}

keel_status keel__rec_apply_cancel(keel_world *w, keel__rd *r, keel_diags *d)
{
    uint64_t n = keel__rd_u64(r, "truncated input");
    if (r->err) return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: %s", r->err);
    keel_timer_id id = keel__timer_nth(w, n);
    if (!id || keel_timer_cancel(w, id) != KEEL_OK)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "recording: the timer cancelled is not in the world");
    return KEEL_OK;
}

/* ================================================================ the keyframe's trailer */

enum { TR_MIRROR = 1 };

typedef struct timer_walk {
    keel_world *w;
    keel__buf *b;
    size_t n;
} timer_walk;

static void count_fn(void *ud, const keel__timer_info *t)
{
    timer_walk *tw = ud;
    tw->n += t->fn != keel__msg_timer_fire;
}

static void put_timer(void *ud, const keel__timer_info *t)
{
    timer_walk *tw = ud;
    if (t->fn != keel__msg_timer_fire) return;
    keel__buf_f64(tw->b, t->due);
    keel__buf_f64(tw->b, t->period);
    put_mt(tw->w, tw->b, t->user, t->owner);
    tw->n++;
}

size_t keel__rec_unwritable(keel_world *w)
{
    timer_walk tw = { w, NULL, 0 };
    keel__timers_each(w, count_fn, &tw); /* a timer holding a function */
    size_t n = tw.n;
    const keel_message *m;
    keel_entity to;
    bool all;
    keel__buf tmp = { 0 };
    for (size_t i = 0; (m = keel__message_at(w, i, &to, &all)); i++) {
        tmp.len = 0;
        if (!keel__rec_put_message(w, &tmp, m, to, all)) n++;
    }
    free(tmp.p);
    return n;
}

void keel__rec_put_trailer(keel_world *w, keel__buf *b)
{
    keel__buf_u8(b, w->mirror ? TR_MIRROR : 0);
    size_t at = b->len, n = 0;
    keel__buf_u32(b, 0);
    const keel_message *m;
    keel_entity to;
    bool all;
    for (size_t i = 0; (m = keel__message_at(w, i, &to, &all)); i++) {
        if (!all && !keel_alive(w, to)) continue; /* delivery drops it */
        n += keel__rec_put_message(w, b, m, to, all);
    }
    keel__put_u32(b->p + at, (uint32_t)n);
    at = b->len;
    keel__buf_u32(b, 0);
    timer_walk tw = { w, b, 0 };
    keel__timers_each(w, put_timer, &tw); /* those whose action is a message, in id order */
    keel__put_u32(b->p + at, (uint32_t)tw.n);
}

keel_status keel__rec_apply_trailer(keel_world *w, keel__rd *r, keel_diags *d)
{
    uint8_t flags = keel__rd_u8(r, "truncated keyframe");
    w->mirror = (flags & TR_MIRROR) != 0;
    uint32_t n = keel__rd_count(r, 42, "truncated keyframe");
    keel_status st = KEEL_OK;
    for (uint32_t i = 0; i < n && st == KEEL_OK && !r->err; i++) st = keel__rec_post_message(w, r, true, d);
    n = st || r->err ? 0 : keel__rd_count(r, 39, "truncated keyframe");
    for (uint32_t i = 0; i < n && st == KEEL_OK; i++) {
        uint64_t due = keel__rd_u64(r, "truncated keyframe"), period = keel__rd_u64(r, "truncated keyframe");
        keel_uuid ou;
        msg_timer *m = rd_mt(r, &ou);
        if (!m) return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: keyframe: %s", r->err);
        keel_entity owner = keel_uuid_is_nil(ou) ? KEEL_NO_ENTITY : keel_find(w, ou);
        if (!keel_uuid_is_nil(ou) && !owner) { /* its owner went: the timer ended with it */
            mt_free(m);
            continue;
        }
        double du, pe;
        memcpy(&du, &due, 8);
        memcpy(&pe, &period, 8);
        if (!isfinite(du) || !isfinite(pe) || pe < 0) {
            mt_free(m);
            return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: keyframe: a timer's due time is not a number");
        }
        keel_timer_desc desc = { .owner = owner, .fn = keel__msg_timer_fire, .user = m, .release = mt_free };
        st = keel__timer_add_due(w, du, pe, &desc, NULL, d);
        if (st) mt_free(m);
    }
    return st;
}
