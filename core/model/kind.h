/* kind.h — the registry's private side: key rules, rejections and the callback guard. */
#ifndef KEEL_KIND_H
#define KEEL_KIND_H

#include "keel.h"
#include "model/record.h"

struct keel__batch;
/* A registry entry; keel_kind_describe hands out &desc, its first member. */
typedef struct keel__kind {
    keel_kind_desc desc;  /* deep copy: every string and array owned here */
    keel__layout lay;     /* where its fields live in a record, and its defaults */
    bool rejected;        /* some declared kind names it in rejects */
    void (*batch)(struct keel__batch *b); /* keel__kind_set_batch's; a redeclaration clears it */
} keel__kind;
/* How declared kind kd's stretches of a run list run in one go (NULL: one hook call at a time). */
static inline void (*keel__kind_batch(const keel_kind_desc *kd))(struct keel__batch *b)
{
    return ((const keel__kind *)(const void *)kd)->batch;
}

bool keel__kind_key_valid(const char *key);  /* ns:name, [a-z0-9_]+ both sides */
/* NULL, or UTF-8 of at most KEEL_TOOLTIP_MAX bytes (InvalidArgument at `path`, `what` naming it). */
keel_status keel__tooltip_check(const char *tip, const char *path, const char *what, keel_diags *d);
bool keel__kind_rejected(keel_kind_id k);   /* some declared kind names k in rejects */
/* Around every call of a validate or migrate callback: keel_kind_declare refuses meanwhile. */
void keel__callback_enter(void);
void keel__callback_leave(void);
/* The layout of declared kind k (NULL for an unknown id): the registry owns it. */
const keel__layout *keel__kind_layout(keel_kind_id k);
/* Both at once (records ask for both on every get and put): the description, NULL when k is
 * not declared, and its layout in *layout. */
const keel_kind_desc *keel__kind_parts(keel_kind_id k, const keel__layout **layout);

#endif
