/* field.c — the one write path of a field: check, put, validate, bump the change counters, journal. */
#include "model/world.h"
#include "model/field.h"
#include "model/kind.h"
#include "model/body.h"
#include "model/record.h"
#include "model/txn.h"
#include "model/value.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

keel_status keel_get(const keel_world *w, keel_comp c, int field, keel_value *out, keel_diags *d)
{
    keel__entry *m = NULL;
    keel_status st = keel__comp_resolve(w, c, &m, "read", d);
    if (st) return st;
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    if (field < 0 || (size_t)field >= kd->field_count)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s has no field %d", kd->key, field);
    keel__record_get(c.kind, keel__store_rec(&w->stores[c.kind], m->row), field, out);
    return KEEL_OK;
}

static void value_own(keel_value *v)
{
    if (v->type == KEEL_T_STRING && v->as.s) v->as.s = keel__strdup(v->as.s);
}

static void value_drop(keel_value *v)
{
    if (v->type == KEEL_T_STRING) free((char *)v->as.s);
}

/* Whether a write of field f to w is a client's write to what its authority owns (InvalidOperation). */
static bool mirrored(const keel_world *w, const keel_field_desc *f)
{
    return w->mirror && !w->mirror_applying && (f->flags & KEEL_FIELD_SYNC);
}

static keel_status refuse_mirrored(keel_diags *d, const keel_kind_desc *kd, const keel_field_desc *f)
{
    return KEEL_ERROR(d, KEEL_INVALID_OPERATION, f->key, "field %s of %s is synced: a client world only mirrors it",
                      f->key, kd->key);
}

/* May field `field` of c (entry m) be written now? NotFound for a field out of range, Unsupported
 * for a readonly one unless `internal` or the component's own hook is running. */
static keel_status writable(const keel_world *w, keel_comp c, const keel__entry *m, const keel_kind_desc *kd,
                            int field, bool internal, keel_diags *d)
{
    if (w->frozen) return keel__refuse_frozen(d);
    if (field < 0 || (size_t)field >= kd->field_count)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s has no field %d", kd->key, field);
    /* readonly means "not from outside": the component's own hooks may write it */
    bool own = w->txn_depth > 0 && w->hook_comp.entity == c.entity && w->hook_comp.kind == c.kind &&
               w->hook_comp.slot == keel__entry_slot(w, m);
    if (mirrored(w, &kd->fields[field])) return refuse_mirrored(d, kd, &kd->fields[field]);
    if (!internal && !own && (kd->fields[field].flags & KEEL_FIELD_READONLY))
        return KEEL_ERROR(d, KEEL_UNSUPPORTED, kd->fields[field].key, "field %s of %s is readonly",
                          kd->fields[field].key, kd->key);
    return KEEL_OK;
}

/* Asks the kind's validate hook about the value just put (not while rolling back). On a refusal
 * the old value goes back and `m` is NULL when the component went away meanwhile. */
static keel_status validate(keel_world *w, keel_comp c, keel__entry **m, const keel_kind_desc *kd, int field,
                            const keel_value *old, keel_diags *d)
{
    if (!kd->validate || w->rolling_back) return KEEL_OK;
    size_t before = d ? d->errors : 0;
    void *rec = keel__store_rec(&w->stores[c.kind], (*m)->row);
    keel_comp at = { c.entity, c.kind, keel__entry_slot(w, *m) };
    keel_call call = { w, at, rec, KEEL_PHASE_COUNT_, 0, kd->user, d, NULL };
    keel__callback_enter();
    keel_status st = kd->validate(&call, field);
    keel__callback_leave();
    /* the hook may have moved the record, or removed the component */
    *m = keel__entry_find(w, &w->ents[(uint32_t)c.entity], c.kind, c.slot);
    if (st == KEEL_OK) return KEEL_OK;
    if (*m) keel__record_put(c.kind, keel__store_rec(&w->stores[c.kind], (*m)->row), field, old);
    if (!d || d->errors == before)
        KEEL_ERROR(d, st, kd->fields[field].key, "%s rejected the value of %s", kd->key, kd->fields[field].key);
    return st;
}

/* Whether record `rec` of kind k, with these values put, still makes a body a save can write
 * (LimitExceeded otherwise); tried on a copy, and only for kinds whose bodies can grow past it. */
static keel_status body_fits(keel_kind_id k, const void *rec, size_t n, const int *fields, const keel_value *vals,
                             keel_diags *d)
{
    if (keel__record_body_bounded(k)) return KEEL_OK;
    void *scratch = keel__xrealloc(NULL, keel_kind_record_size(k));
    keel__record_copy(k, scratch, rec);
    for (size_t j = 0; j < n; j++) keel__record_put(k, scratch, fields[j], &vals[j]);
    keel_status st = keel__record_body_check(k, scratch, d);
    keel__record_fini(k, scratch);
    free(scratch);
    return st;
}

bool keel__field_body_room(keel_kind_id k, size_t strings)
{
    const keel__layout *L;
    const keel_kind_desc *kd = keel__kind_parts(k, &L);
    if (!kd || L->body_bounded) return true;
    size_t most = L->body_most + strings; /* the given strings, and every default as if kept */
    for (size_t i = 0; i < kd->field_count; i++)
        if (kd->fields[i].type == KEEL_T_STRING && kd->fields[i].def.as.s) most += strlen(kd->fields[i].def.as.s);
    return most <= keel_limits_default().body_size;
}

keel_status keel__field_body_fits(keel_kind_id k, size_t n, const int *fields, const keel_value *vals, keel_diags *d)
{
    if (keel__record_body_bounded(k)) return KEEL_OK;
    void *scratch = keel__xrealloc(NULL, keel_kind_record_size(k));
    keel__record_init(k, scratch);
    for (size_t j = 0; j < n; j++) keel__record_put(k, scratch, fields[j], &vals[j]);
    keel_status st = keel__record_body_check(k, scratch, d);
    keel__record_fini(k, scratch);
    free(scratch);
    return st;
}

static void count_writes(keel_world *w, keel_kind_id k, const keel__entry *m, size_t n)
{
    if (m) keel__row_count(&w->stores[k], m->row, n);
    w->revision += n;
}

/* A derived field's write (value checked): its set runs on the record, in this write's
 * transaction; on a refusal (set or validate) the record is put back as it was. What set changed
 * in the stored fields is journaled field by field, so a rollback is exact. */
static keel_status set_derived(keel_world *w, keel_comp c, keel__entry *m, const keel_kind_desc *kd, int field,
                               const keel_value *nv, keel_cmd *inverse, keel_diags *d)
{
    bool journal = keel__txn_wants(w);
    size_t size = keel_kind_record_size(c.kind);
    void *rec = keel__store_rec(&w->stores[c.kind], m->row);
    void *before = keel__xrealloc(NULL, size);
    keel__record_copy(c.kind, before, rec);
    keel_value old;
    keel__record_get(c.kind, rec, field, &old); /* a plain value: nothing borrowed */
    uint32_t slot = keel__entry_slot(w, m);
    keel_comp at = { c.entity, c.kind, slot };
    w->cmd_depth++; /* what set and validate do is this write's, not journaled apart */
    keel_status st = keel__record_derived_set(c.kind, w, at, rec, field, nv, d);
    if (st == KEEL_OK) keel__record_derive(c.kind, rec);
    if (st == KEEL_OK) st = keel__record_body_check(c.kind, rec, d);
    if (st == KEEL_OK && kd->validate && !w->rolling_back) {
        size_t errs = d ? d->errors : 0;
        keel_call call = { w, at, rec, KEEL_PHASE_COUNT_, 0, kd->user, d, NULL };
        keel__callback_enter();
        st = kd->validate(&call, field);
        keel__callback_leave();
        if (st && (!d || d->errors == errs))
            KEEL_ERROR(d, st, kd->fields[field].key, "%s rejected the value of %s", kd->key, kd->fields[field].key);
    }
    w->cmd_depth--;
    if (st) {
        keel__record_fini(c.kind, rec);
        memcpy(rec, before, size); /* `before` owned its strings: now the record does */
        free(before);
        return st;
    }
    count_writes(w, c.kind, m, 1);
    keel_uuid uuid = w->ents[(uint32_t)c.entity].uuid;
    for (size_t i = 0; journal && i < kd->field_count; i++) {
        if (kd->fields[i].get) continue;
        keel_value was, now;
        keel__record_get(c.kind, before, (int)i, &was);
        keel__record_get(c.kind, rec, (int)i, &now);
        if (keel__value_equal(&was, &now)) continue;
        value_own(&was);
        keel__txn_log_field(w, uuid, c.kind, slot, (int)i, &was);
    }
    if (inverse) {
        inverse->type = KEEL_CMD_SET;
        inverse->entity = uuid;
        inverse->slot = slot;
        inverse->value = old;
        inverse->kind_key = keel__strdup(kd->key);
        inverse->field = keel__strdup(kd->fields[field].key);
    }
    keel__record_fini(c.kind, before);
    free(before);
    return KEEL_OK;
}

/* A field write from outside the step, as the SET command that makes it (for a recorder). */
static void record_set(keel_world *w, keel_uuid entity, const keel_kind_desc *kd, uint32_t slot, int field,
                       const keel_value *v)
{
    keel_cmd c = { .type = KEEL_CMD_SET, .entity = entity, .slot = slot, .value = *v };
    c.kind_key = (char *)kd->key;
    c.field = (char *)kd->fields[field].key;
    w->input(w, w->input_state, &c, false);
}

/* The write path of one field: check, put, validate, count, journal, and the caller's inverse. */
static keel_status set_one(keel_world *w, keel_comp c, int field, const keel_value *v, bool internal,
                           keel_cmd *inverse, keel_diags *d)
{
    if (inverse) memset(inverse, 0, sizeof *inverse);
    bool journal = keel__txn_wants(w);
    keel__entry *m = NULL;
    keel_status st = keel__comp_resolve(w, c, &m, "edited", d);
    const keel_kind_desc *kd = st ? NULL : keel_kind_describe(c.kind);
    if (st == KEEL_OK) st = writable(w, c, m, kd, field, internal, d);
    if (!v && st == KEEL_OK) st = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no value given");
    keel_value nv;
    if (st == KEEL_OK) {
        nv = *v;
        st = keel_field_check(c.kind, field, &nv, d);
    }
    if (st) return st;
    if (kd->fields[field].get) return set_derived(w, c, m, kd, field, &nv, inverse, d);

    void *rec = keel__store_rec(&w->stores[c.kind], m->row);
    keel_value old;
    keel__record_get(c.kind, rec, field, &old);
    value_own(&old);
    keel__record_put(c.kind, rec, field, &nv);
    if ((st = keel__record_body_check(c.kind, rec, d))) { /* a save would write what a load refuses */
        keel__record_put(c.kind, rec, field, &old);
        value_drop(&old);
        return st;
    }
    w->cmd_depth++; /* what validate does is this write's, not journaled apart */
    st = validate(w, c, &m, kd, field, &old, d);
    w->cmd_depth--;
    if (st) {
        value_drop(&old);
        return st;
    }
    count_writes(w, c.kind, m, 1);
    keel_uuid uuid = w->ents[(uint32_t)c.entity].uuid;
    uint32_t slot = c.slot == KEEL_SLOT_AUTO && m ? keel__entry_slot(w, m) : c.slot;
    if (inverse) {
        inverse->type = KEEL_CMD_SET;
        inverse->entity = uuid;
        inverse->slot = slot;
        inverse->value = old;
        inverse->kind_key = keel__strdup(kd->key);
        inverse->field = keel__strdup(kd->fields[field].key);
        if (journal) value_own(&old); /* the journal's own copy */
    }
    if (journal) keel__txn_log_field(w, uuid, c.kind, slot, field, &old);
    else if (!inverse) value_drop(&old);
    if (keel__input_wanted(w)) record_set(w, uuid, kd, slot, field, &nv);
    return KEEL_OK;
}

keel_status keel__field_set(keel_world *w, keel_comp c, int field, const keel_value *v, bool internal,
                            keel_cmd *inverse, keel_diags *d)
{
    return set_one(w, c, field, v, internal, inverse, d);
}

keel_status keel_set(keel_world *w, keel_comp c, int field, const keel_value *v, keel_cmd *inverse,
                     keel_diags *d)
{
    return set_one(w, c, field, v, false, inverse, d);
}

keel_status keel__field_set_many(keel_world *w, keel_comp c, size_t n, const int *fields, keel_value *vals,
                                 bool internal, keel_diags *d)
{
    keel__entry *m = NULL;
    keel_status st = keel__comp_resolve(w, c, &m, "edited", d);
    if (st) return st;
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    if (kd->validate) { /* each value is validated as it lands, as n single writes */
        for (size_t j = 0; j < n && st == KEEL_OK; j++) st = set_one(w, c, fields[j], &vals[j], internal, NULL, d);
        return st;
    }
    for (size_t j = 0; j < n; j++) {
        if ((st = writable(w, c, m, kd, fields[j], internal, d))) return st;
        if ((st = keel_field_check(c.kind, fields[j], &vals[j], d))) return st;
    }
    void *rec = keel__store_rec(&w->stores[c.kind], m->row);
    if ((st = body_fits(c.kind, rec, n, fields, vals, d))) return st;
    /* all checked: nothing below can fail */
    bool journal = keel__txn_wants(w);
    keel_uuid uuid = journal ? w->ents[(uint32_t)c.entity].uuid : (keel_uuid){ { 0 } };
    for (size_t j = 0; j < n; j++) {
        if (journal) {
            keel_value old;
            keel__record_get(c.kind, rec, fields[j], &old);
            value_own(&old);
            keel__txn_log_field(w, uuid, c.kind, keel__entry_slot(w, m), fields[j], &old);
        }
        keel__record_put(c.kind, rec, fields[j], &vals[j]);
    }
    count_writes(w, c.kind, m, n);
    if (keel__input_wanted(w))
        for (size_t j = 0; j < n; j++)
            record_set(w, w->ents[(uint32_t)c.entity].uuid, kd, keel__entry_slot(w, m), fields[j], &vals[j]);
    return KEEL_OK;
}

/* The copy-back's checked store of n values into c's `record` (storage row `row`), with readonly
 * fields refused unless `internal`; journaled only when a transaction encloses the caller's. */
static keel_status copy_checked(keel_world *w, keel_comp c, const keel_kind_desc *kd, void *record, uint32_t row,
                                bool internal, size_t n, const int *fields, keel_value *vals, keel_diags *d)
{
    keel_status st;
    for (size_t j = 0; j < n; j++) {
        if (fields[j] < 0 || (size_t)fields[j] >= kd->field_count)
            return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s has no field %d", kd->key, fields[j]);
        const keel_field_desc *f = &kd->fields[fields[j]];
        if (mirrored(w, f)) return refuse_mirrored(d, kd, f);
        if (!internal && (f->flags & KEEL_FIELD_READONLY))
            return KEEL_ERROR(d, KEEL_UNSUPPORTED, f->key, "field %s of %s is readonly", f->key, kd->key);
        /* a plain float needs only to be finite: the common case, checked here */
        if (f->type == KEEL_T_FLOAT && vals[j].type == KEEL_T_FLOAT && !f->has_min && !f->has_max &&
            isfinite(vals[j].as.f))
            continue;
        if ((st = keel__value_check(f, &vals[j], d))) return st;
    }
    if ((st = body_fits(c.kind, record, n, fields, vals, d))) return st;
    /* all checked: nothing below can fail */
    bool journal = w->txn_depth > 1 && keel__txn_wants(w); /* the outermost one commits right after */
    const keel__layout *L = keel__kind_layout(c.kind);
    unsigned char *rec = record;
    for (size_t j = 0; j < n; j++) {
        const keel_field_desc *f = &kd->fields[fields[j]];
        unsigned char *p = rec + L->offsets[fields[j]];
        if (journal) {
            keel_value old;
            keel__value_load(f, p, &old);
            value_own(&old);
            keel__txn_log_field(w, w->ents[(uint32_t)c.entity].uuid, c.kind, c.slot, fields[j], &old);
        }
        if (f->type == KEEL_T_FLOAT) memcpy(p, &vals[j].as.f, sizeof vals[j].as.f);
        else keel__value_store(f, p, &vals[j]);
    }
    keel__row_count(&w->stores[c.kind], row, n);
    w->revision += n;
    return KEEL_OK;
}

keel_status keel__field_copy_back(keel_world *w, keel_comp c, void *record, size_t n, const int *fields,
                                  keel_value *vals, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    bool own = w->txn_depth > 0 && w->hook_comp.entity == c.entity && w->hook_comp.kind == c.kind &&
               w->hook_comp.slot == c.slot;
    if (!own || !kd || kd->validate) return keel__field_set_many(w, c, n, fields, vals, true, d);
    return copy_checked(w, c, kd, record, w->hook_row, true, n, fields, vals, d);
}

keel_status keel__field_copy_back_at(keel_world *w, keel_comp c, void *record, uint32_t row, size_t n,
                                     const int *fields, keel_value *vals, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    if (!kd || kd->validate || w->txn_depth == 0) return keel__field_set_many(w, c, n, fields, vals, false, d);
    return copy_checked(w, c, kd, record, row, false, n, fields, vals, d);
}

bool keel__field_copy_floats(keel_world *w, keel_comp c, void *record, uint32_t row, size_t n, const int *fields,
                             const double *vals)
{
    const keel__layout *L = keel__kind_layout(c.kind);
    /* a mirror's synced fields are refused by the general path */
    if (!L || !L->body_bounded || L->has_derived || w->mirror || (w->txn_depth > 1 && keel__txn_wants(w)))
        return false;
    unsigned char *rec = record;
    for (size_t j = 0; j < n; j++) memcpy(rec + L->offsets[fields[j]], &vals[j], sizeof vals[j]);
    keel__row_count(&w->stores[c.kind], row, n);
    w->revision += n;
    return true;
}

/* Field `field` of c's kind when a plain write may skip the general path (no validate hook, a
 * bounded body, no journal wanted, not readonly, not a mirror's synced field), with its offset
 * in *off; else NULL. */
static const keel_field_desc *plain_field(const keel_world *w, keel_comp c, int field, size_t *off)
{
    const keel__layout *L;
    const keel_kind_desc *kd = keel__kind_parts(c.kind, &L);
    if (!kd || kd->validate || !L->body_bounded || field < 0 || (size_t)field >= kd->field_count ||
        keel__txn_wants(w) || keel__input_wanted(w) || w->frozen)
        return NULL;
    const keel_field_desc *f = &kd->fields[field];
    if ((f->flags & KEEL_FIELD_READONLY) || mirrored(w, f)) return NULL;
    *off = L->offsets[field];
    return f;
}

bool keel__field_set_plain(keel_world *w, keel_comp c, void *record, uint32_t row, int field, keel_value *v)
{
    size_t off;
    const keel_field_desc *f = plain_field(w, c, field, &off);
    if (!f || f->type == KEEL_T_STRING) return false;
    if (f->type == KEEL_T_FLOAT && v->type == KEEL_T_FLOAT && !f->has_min && !f->has_max) {
        if (!isfinite(v->as.f)) return false;
    } else if (keel__value_check(f, v, NULL) != KEEL_OK) {
        return false;
    }
    unsigned char *p = (unsigned char *)record + off;
    if (f->type == KEEL_T_FLOAT) memcpy(p, &v->as.f, sizeof v->as.f);
    else keel__value_store(f, p, v);
    keel__row_count(&w->stores[c.kind], row, 1);
    w->revision++;
    return true;
}

bool keel__field_set_float(keel_world *w, keel_comp c, void *record, uint32_t row, int field, double x)
{
    size_t off;
    const keel_field_desc *f = plain_field(w, c, field, &off);
    if (!f || f->type != KEEL_T_FLOAT || f->has_min || f->has_max || !isfinite(x)) return false;
    memcpy((unsigned char *)record + off, &x, sizeof x);
    keel__row_count(&w->stores[c.kind], row, 1);
    w->revision++;
    return true;
}

void keel__field_store(keel_world *w, keel_comp c, size_t n, const int *fields, const keel_value *vals,
                       bool counted)
{
    keel__entry *m = keel__comp_entry(w, c);
    if (!m) return;
    void *rec = keel__store_rec(&w->stores[c.kind], m->row);
    for (size_t j = 0; j < n; j++) keel__record_put(c.kind, rec, fields[j], &vals[j]); /* derives too */
    if (counted) count_writes(w, c.kind, m, n);
}

keel_status keel_reset(keel_world *w, keel_comp c, int field, keel_diags *d)
{
    keel__entry *m = NULL;
    keel_status st = keel__comp_resolve(w, c, &m, "reset", d);
    if (st) return st;
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    if (field < -1 || field >= (int)kd->field_count)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s has no field %d", kd->key, field);
    size_t size = keel_kind_record_size(c.kind);
    void *def = keel__xrealloc(NULL, size ? size : 1);
    memset(def, 0, size);
    keel__record_init(c.kind, def);
    for (int f = field < 0 ? 0 : field; f < (field < 0 ? (int)kd->field_count : field + 1); f++) {
        keel_value v;
        keel__record_get(c.kind, def, f, &v);
        st = set_one(w, c, f, &v, true, NULL, d);
        if (st) break;
    }
    keel__record_fini(c.kind, def);
    free(def);
    return st;
}
