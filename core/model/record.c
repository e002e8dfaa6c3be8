/* record.c — a kind's record layout and its records: defaults, init, fini, copy, get and put of one field. */
#include "model/kind.h"
#include "model/record.h"
#include "base/util.h"
#include "model/value.h"

#include <stdlib.h>
#include <string.h>

/* Stored fields first in declared order, then the slots of the derived ones: a C struct over the
 * stored fields stays the record's layout. */
size_t keel__layout_offset(const keel_kind_desc *d, int field)
{
    size_t off = 0;
    bool derived = field >= 0 && (size_t)field < d->field_count && d->fields[field].get;
    for (size_t i = 0; i < d->field_count; i++)
        if (!d->fields[i].get && (derived || (int)i < field))
            off += (keel_type_size(d->fields[i].type) + 7u) & ~(size_t)7u;
    for (int i = 0; derived && i < field; i++)
        if (d->fields[i].get) off += (keel_type_size(d->fields[i].type) + 7u) & ~(size_t)7u;
    return off;
}

size_t keel__layout_size(const keel_kind_desc *d)
{
    size_t s = 0;
    for (size_t i = 0; i < d->field_count; i++) s += (keel_type_size(d->fields[i].type) + 7u) & ~(size_t)7u;
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
    if (L->has_derived) keel__record_derive(k, record); /* a get may read the strings */
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
        if (!d->fields[i].get) off += (keel_type_size(d->fields[i].type) + 7u) & ~(size_t)7u; /* derived: after */
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
    if (D->fields[f].get) {
        keel__record_derived_set(k, NULL, (keel_comp){ 0, k, 0 }, record, f, v, NULL);
        keel__record_derive(k, record);
        return;
    }
    keel__value_store(&D->fields[f], (unsigned char *)record + L->offsets[f], v);
    if (L->has_derived) keel__record_derive(k, record);
}

keel_status keel__record_derived_set(keel_kind_id k, keel_world *w, keel_comp c, void *record, int f,
                                     const keel_value *v, keel_diags *d)
{
    const keel_kind_desc *D = keel_kind_describe(k);
    keel_call call = { w, c, record, KEEL_PHASE_COUNT_, 0, D->user, d, NULL };
    size_t before = d ? d->errors : 0;
    keel__callback_enter();
    keel_status st = D->fields[f].set(&call, f, v);
    keel__callback_leave();
    if (st && (!d || d->errors == before))
        KEEL_ERROR(d, st, D->fields[f].key, "%s: set of %s failed", D->key, D->fields[f].key);
    return st;
}

void keel__record_derive(keel_kind_id k, void *record)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D || !L->has_derived) return;
    for (size_t i = 0; i < D->field_count; i++) {
        const keel_field_desc *f = &D->fields[i];
        if (!f->get) continue;
        keel_call call = { NULL, { 0, k, 0 }, record, KEEL_PHASE_COUNT_, 0, D->user, NULL, NULL };
        keel_value v;
        memset(&v, 0, sizeof v);
        v.type = f->type;
        keel__callback_enter();
        keel_status st = f->get(&call, (int)i, &v);
        keel__callback_leave();
        /* a get that fails, or answers out of type, leaves what it showed last */
        if (st == KEEL_OK && v.type == f->type) keel__value_store(f, (unsigned char *)record + L->offsets[i], &v);
    }
}

void keel__layout_derive(keel_kind_id k, keel_diags *d)
{
    const keel__layout *L;
    const keel_kind_desc *D = keel__kind_parts(k, &L);
    if (!D || !L->has_derived) return;
    for (size_t i = 0; i < D->field_count; i++) {
        if (!D->fields[i].get || !D->fields[i].has_default) continue;
        keel_diags tmp;
        keel_diags_init(&tmp);
        if (keel__record_derived_set(k, NULL, (keel_comp){ 0, k, 0 }, L->defaults, (int)i, &D->fields[i].def, &tmp))
            keel_diag_add(d, KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, D->fields[i].key, NULL, 0, 0,
                          "%s: the default of %s could not be set: %s", D->key, D->fields[i].key,
                          tmp.count ? tmp.items[0].message : "");
        keel_diags_free(&tmp);
    }
    keel__record_derive(k, L->defaults);
}

keel_status keel__derived_validate(const keel_call *call, int field)
{
    (void)call;
    (void)field;
    return KEEL_OK;
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
    L->has_derived = false;
    for (size_t i = 0; i < d->field_count; i++) L->has_derived |= d->fields[i].get != NULL;
    L->body_bounded = !L->has_strings && L->body_most <= keel_limits_default().body_size;
}

void keel__layout_free(keel__layout *L)
{
    free(L->offsets);
    free(L->defaults);
    *L = (keel__layout){ 0 };
}
