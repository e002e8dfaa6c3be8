/* message.c — messages between components: keel_send / keel_broadcast queue them per world in
 * send order (C and binding messages in one queue); keel_step delivers them to the kinds'
 * on_message hooks at the end of each phase (after its systems) and, for those sent outside a
 * step, at its start. Each handler call is a hook transaction. Runtime state: never saved. */
#include "model/world.h"
#include "base/vec.h"
#include "bind.h"
#include "model/prof.h"
#include "game/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct keel__msg {
    keel_message m;              /* name and data owned */
    keel_entity target;          /* KEEL_NO_ENTITY: a broadcast */
    void (*release)(void *user); /* the binding's payload, released with the message */
} keel__msg;

struct keel__msgq {
    keel__msg *items;
    size_t head, count, cap; /* [head, count) are queued */
    bool delivering;
};

static void deliver_at_step(keel_world *w, void *state, double dt);
static void deliver_at_phase(keel_world *w, void *state, keel_phase phase, double dt);
static void queue_drop(keel_world *w, void *state);
static void queue_free(keel_world *w, void *state);
/* delivery comes last at a phase's end: after the C and the binding's systems, which may send */
static const keel__ext_type messages_ext = { .name = "messages",
                                             .order = 30,
                                             .step_begin = deliver_at_step,
                                             .phase_end = deliver_at_phase,
                                             .stop = queue_drop,
                                             .free = queue_free };

static struct keel__msgq *queue_of(const keel_world *w)
{
    return keel__ext_get(w, &messages_ext);
}

static void msg_free(keel__msg *m)
{
    free((char *)m->m.name);
    free((void *)m->m.data);
    if (m->release) m->release(m->m.user);
}

keel_status keel__message_post(keel_world *w, keel_entity to, bool broadcast, const char *name, const void *data,
                               size_t size, keel_entity sender, void *user, void (*release)(void *user),
                               keel_diags *d)
{
    keel_status st = KEEL_OK;
    if (!w || !name) st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a message needs a world and a name");
    else if (!*name) st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a message name cannot be empty");
    else if (w->frozen) st = keel__refuse_frozen(d);
    else if (size > KEEL_MESSAGE_MAX_SIZE)
        st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "message data larger than %d bytes", KEEL_MESSAGE_MAX_SIZE);
    else if (size && !data)
        st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "message data is NULL but its size is %zu", size);
    else if (!broadcast && !keel_alive(w, to))
        st = KEEL_ERROR(d, KEEL_NOT_FOUND, "", "a message's target must be a live entity of its world");
    if (st != KEEL_OK) {
        if (release) release(user);
        return st;
    }
    if (keel__input_wanted(w)) { /* from outside a step while recording: an input */
        keel_message m = { name, data, size, sender, user };
        st = keel__record_message(w, to, broadcast, &m, d);
        if (st != KEEL_OK) {
            if (release) release(user);
            return st;
        }
    }
    struct keel__msgq *q = queue_of(w);
    if (!q) {
        q = keel__xcalloc(1, sizeof *q);
        keel__ext_add(w, &messages_ext, q);
    }
    if (q->count == q->cap) {
        if (q->head && !q->delivering) { /* delivered ones leave room at the front */
            memmove(q->items, q->items + q->head, (q->count - q->head) * sizeof *q->items);
            q->count -= q->head;
            q->head = 0;
        }
        KEEL__VEC_RESERVE(q->items, q->count, q->cap, 1, 16);
    }
    void *copy = NULL;
    if (size) {
        copy = keel__xrealloc(NULL, size);
        memcpy(copy, data, size);
    }
    q->items[q->count++] = (keel__msg){ { keel__strdup(name), copy, size, sender, user },
                                        broadcast ? KEEL_NO_ENTITY : to,
                                        release };
    return KEEL_OK;
}

keel_status keel_send(keel_world *w, keel_entity to, const char *name, const void *data, size_t size,
                      keel_entity sender, keel_diags *d)
{
    return keel__message_post(w, to, false, name, data, size, sender, NULL, NULL, d);
}

keel_status keel_broadcast(keel_world *w, const char *name, const void *data, size_t size, keel_entity sender,
                           keel_diags *d)
{
    return keel__message_post(w, KEEL_NO_ENTITY, true, name, data, size, sender, NULL, NULL, d);
}

size_t keel_message_count(const keel_world *w)
{
    const struct keel__msgq *q = w ? queue_of(w) : NULL;
    return q ? q->count - q->head : 0;
}

const keel_message *keel__message_at(const keel_world *w, size_t i, keel_entity *target, bool *broadcast)
{
    const struct keel__msgq *q = queue_of(w);
    if (!q || i >= q->count - q->head) return NULL;
    const keel__msg *m = &q->items[q->head + i];
    *target = m->target;
    *broadcast = m->target == KEEL_NO_ENTITY;
    return &m->m;
}

/* Components of entity e with an on_message hook, in membership order, appended to *list. */
static void receivers(keel_world *w, keel_entity e, keel_comp **list, size_t *n, size_t *cap)
{
    keel__ent *en = keel__ent_get(w, e);
    for (uint32_t i = 0; en && i < en->member_count; i++) {
        const keel__entry *m = &keel__members(w, en)[i];
        if (!m->kind) continue;
        const keel_kind_desc *kd = keel_kind_describe(m->kind);
        if (!kd || !kd->hooks[KEEL_PHASE_ON_MESSAGE]) continue;
        KEEL__VEC_RESERVE((*list), (*n), (*cap), 1, 16);
        (*list)[(*n)++] = (keel_comp){ e, m->kind, keel__entry_slot(w, m) };
    }
}

static void messages_deliver(keel_world *w, struct keel__msgq *q)
{
    if ( q->head == q->count || q->delivering) return;
    q->delivering = true;
    size_t done = 0;
    keel_comp *list = NULL;
    size_t cap = 0;
    while (q->head < q->count) { /* handlers may add: same pass */
        if (++done > KEEL_MESSAGE_MAX_PASS) {
            char text[128];
            snprintf(text, sizeof text, "LimitExceeded: more than %d messages in one delivery pass: %zu dropped",
                     KEEL_MESSAGE_MAX_PASS, q->count - q->head);
            keel__fault_add(w, (keel_uuid){ { 0 } }, "message", 0, KEEL_PHASE_ON_MESSAGE, text);
            break;
        }
        keel__msg m = q->items[q->head++]; /* a copy: handlers may grow the array */
        keel__prof *p = w->prof;           /* lives as long as the world (prof.h) */
        if (p) p->messages++;
        size_t count = 0;
        if (m.target) { /* to one entity: dropped when it is gone */
            if (keel_alive(w, m.target)) receivers(w, m.target, &list, &count, &cap);
        } else { /* to every component with on_message, in run order: the root first */
            receivers(w, keel_world_root(w), &list, &count, &cap);
            for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) receivers(w, e, &list, &count, &cap);
        }
        keel__stretch s = { 0 }; /* profiling: the clock is read where the receiving kind changes */
        for (size_t i = 0; i < count; i++) {
            if (p) keel__stretch_to(p, &s, list[i].kind, KEEL_PHASE_ON_MESSAGE);
            keel__deliver_message(w, list[i], &m.m);
        }
        if (p) keel__stretch_to(p, &s, 0, KEEL_PHASE_ON_MESSAGE);
        msg_free(&m);
    }
    free(list);
    /* the pass is over: what is left (dropped past the cap) goes too */
    while (q->head < q->count) msg_free(&q->items[q->head++]);
    q->head = q->count = 0;
    q->delivering = false;
}

static void deliver_at_step(keel_world *w, void *state, double dt) { messages_deliver(w, state); }
static void deliver_at_phase(keel_world *w, void *state, keel_phase phase, double dt) { messages_deliver(w, state); }

/* Play mode's stop: what was queued while playing is dropped, each payload released. */
static void queue_drop(keel_world *w, void *state)
{
    struct keel__msgq *q = state;
    for (size_t i = q->head; i < q->count; i++) msg_free(&q->items[i]);
    q->head = q->count = 0;
}

static void queue_free(keel_world *w, void *state)
{
    struct keel__msgq *q = state;
    queue_drop(w, q);
    free(q->items);
    free(q);
}
