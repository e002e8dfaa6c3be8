/* record.c — a kind's record layout and its records: defaults, init, fini, copy, get and put of one field. */
#include "model/kind.h"
#include "model/record.h"
#include "base/util.h"
#include "model/value.h"

#include <stdlib.h>
#include <string.h>

size_t keel__layout_offset(const keel_kind_desc *d, int field)
{
    size_t off = 0;
    for (int i = 0; i < field && (size_t)i < d->field_count; i++)
        off += (keel_type_size(d->fields[i].type) + 7u) & ~(size_t)7u;
    return off;
}

size_t keel__layout_size(const keel_kind_desc *d)
{
    size_t s = keel__layout_offset(d, (int)d->field_count);
    return s ? s : 8;
}

void keel__record_init(keel_kind_id k, void *record)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D)
        return;
    memcpy(record, L->defaults, L->size);
    if (!L->has_strings)
        return;
    for (size_t i = 0; i < D->field_count; i++)
        if (D->fields[i].type == KEEL_T_STRING)
            keel__value_store(&D->fields[i], (unsigned char *)record + L->offsets[i], &D->fields[i].def);
}

void keel__desc_record_fini(const keel_kind_desc *d, void *record)
{
    size_t off = 0;
    for (size_t i = 0; i < d->field_count; i++) {
        if (d->fields[i].type == KEEL_T_STRING) {
            char *s;
            memcpy(&s, (unsigned char *)record + off, sizeof s);
            free(s);
        }
        off += (keel_type_size(d->fields[i].type) + 7u) & ~(size_t)7u;
    }
    memset(record, 0, keel__layout_size(d));
}

void keel__record_fini(keel_kind_id k, void *record)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D)
        return;
    if (L->has_strings)
        keel__desc_record_fini(D, record);
    else
        memset(record, 0, L->size);
}

void keel__record_copy(keel_kind_id k, void *dst, const void *src)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D)
        return;
    memcpy(dst, src, L->size);
    for (size_t i = 0; L->has_strings && i < D->field_count; i++) {
        if (D->fields[i].type != KEEL_T_STRING)
            continue;
        char *s;
        memcpy(&s, (unsigned char *)src + L->offsets[i], sizeof s);
        s = keel__strdup(s ? s : "");
        memcpy((unsigned char *)dst + L->offsets[i], &s, sizeof s);
    }
}

void keel__record_get(keel_kind_id k, const void *record, int f, keel_value *out)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D || f < 0 || (size_t)f >= D->field_count) {
        memset(out, 0, sizeof *out);
        return;
    }
    keel__value_load(&D->fields[f], (const unsigned char *)record + L->offsets[f], out);
}

void keel__record_put(keel_kind_id k, void *record, int f, const keel_value *v)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D || f < 0 || (size_t)f >= D->field_count)
        return;
    keel__value_store(&D->fields[f], (unsigned char *)record + L->offsets[f], v);
}

void keel__layout_build(const keel_kind_desc *d, keel__layout *L)
{
    free(L->offsets);
    L->offsets = d->field_count ? keel__xrealloc(NULL, d->field_count * sizeof *L->offsets) : NULL;
    for (size_t i = 0; i < d->field_count; i++)
        L->offsets[i] = keel__layout_offset(d, (int)i);
    L->size = keel__layout_size(d);
    free(L->defaults);
    L->defaults = keel__xrealloc(NULL, L->size);
    memset(L->defaults, 0, L->size);
    L->has_strings = false;
    L->body_most = 2; /* a map */
    for (size_t i = 0; i < d->field_count; i++) {
        const keel_field_desc *f = &d->fields[i];
        if (f->flags & KEEL_FIELD_TRANSIENT) continue; /* not saved */
        size_t most = 0;                                /* the value's longest text */
        switch (f->type) {
        case KEEL_T_BOOL: most = 5; break;               /* false */
        case KEEL_T_INT: most = 20; break;               /* -9223372036854775808 */
        case KEEL_T_ENUM:
            for (size_t c = 0; c < f->choice_count; c++)
                if (f->choices[c] && strlen(f->choices[c]) > most) most = strlen(f->choices[c]);
            break;
        case KEEL_T_STRING: break;
        case KEEL_T_ASSET: case KEEL_T_ENTITY: most = 36; break;
        default: most = 24; break;                       /* -2.2250738585072014e-308 */
        }
        int width = keel_type_width(f->type);
        size_t value = f->type == KEEL_T_FLOAT || width == 1 ? most + 1 : 2 + (size_t)width * (most + 1);
        L->body_most += strlen(f->key) + 1 + value;
    }
    for (size_t i = 0; i < d->field_count; i++) {
        if (d->fields[i].type == KEEL_T_STRING)
            L->has_strings = true; /* filled per record: each owns its copy */
        else
            keel__value_store(&d->fields[i], L->defaults + L->offsets[i], &d->fields[i].def);
    }
    L->body_bounded = !L->has_strings && L->body_most <= keel_limits_default().body_size;
}

void keel__layout_free(keel__layout *L)
{
    free(L->offsets);
    free(L->defaults);
    *L = (keel__layout){ 0 };
}
