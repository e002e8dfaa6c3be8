/* kind.h — the registry's private side: key rules, rejections and the callback guard. */
#ifndef KEEL_KIND_H
#define KEEL_KIND_H

#include "keel.h"
#include "model/record.h"

bool keel__kind_key_valid(const char *key);  /* ns:name, [a-z0-9_]+ both sides */
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
