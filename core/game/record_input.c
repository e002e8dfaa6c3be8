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

#define MSG_NAME_MAX 4096

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
    uint32_t nlen = keel__rd_count(r, 1, cut);
    if (nlen > MSG_NAME_MAX && !r->err) r->err = "a message name too long";
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

/* ================================================================ the keyframe's trailer */

enum { TR_MIRROR = 1 };

size_t keel__rec_unwritable(keel_world *w)
{
    size_t n = keel_timer_count(w);
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
}

keel_status keel__rec_apply_trailer(keel_world *w, keel__rd *r, keel_diags *d)
{
    if (r->pos == r->len) return KEEL_OK; /* written before keyframes had one */
    uint8_t flags = keel__rd_u8(r, "truncated keyframe");
    w->mirror = (flags & TR_MIRROR) != 0;
    uint32_t n = keel__rd_count(r, 42, "truncated keyframe");
    keel_status st = KEEL_OK;
    for (uint32_t i = 0; i < n && st == KEEL_OK && !r->err; i++) st = keel__rec_post_message(w, r, true, d);
    return st;
}
