/* kind.c — the process-wide kind registry: types, declaring (checked, deep-copied), finding, describing. */
#include "base/util.h"
#include "bind.h"
#include "model/builtins.h"
#include "model/kind.h"
#include "model/kinds_pin.h"
#include "model/member.h"
#include "model/record.h"
#include "model/reload.h"
#include "model/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef keel__kind kind;

static struct {
    bool ready;
    bool frozen;
    kind **by_id;         /* id - 1 -> kind; ids are never reused */
    size_t count;
    keel_kind_id *sorted; /* ids sorted by key */
} reg;
/* Bumps on every declaration (and at shutdown): a binding's per-kind caches (field names to
 * indices) built under one value are good while it holds. */
static uint64_t declarations;

uint64_t keel__kind_declarations(void) { return declarations; }

/* ---- types ---- */

static const char *const type_names[KEEL_T_COUNT_] = {
    "bool", "int", "float", "vec2", "vec3", "vec4", "quat", "color", "enum", "string", "asset", "entity"
};

const char *keel_type_name(keel_type t)
{
    return (unsigned)t < KEEL_T_COUNT_ ? type_names[t] : "?";
}

bool keel_type_parse(const char *name, keel_type *out)
{
    for (int t = 0; name && t < KEEL_T_COUNT_; t++)
        if (!strcmp(name, type_names[t])) {
            if (out)
                *out = (keel_type)t;
            return true;
        }
    return false;
}

int keel_type_width(keel_type t)
{
    switch (t) {
    case KEEL_T_VEC2: return 2;
    case KEEL_T_VEC3: return 3;
    case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: return 4;
    default: return 1;
    }
}

static bool is_vector(keel_type t)
{
    return t >= KEEL_T_VEC2 && t <= KEEL_T_COLOR;
}

static bool is_numeric(keel_type t)
{
    return t == KEEL_T_INT || t == KEEL_T_FLOAT || is_vector(t);
}

size_t keel_type_size(keel_type t)
{
    if (is_vector(t))
        return 8u * (size_t)keel_type_width(t);
    if (t == KEEL_T_ASSET || t == KEEL_T_ENTITY)
        return sizeof(keel_uuid);
    return 8; /* bool (padded), int64, double, enum index, char * */
}

/* ---- registry lookups ---- */

static kind *kind_get(keel_kind_id k)
{
    if (k == KEEL_NO_KIND || k > reg.count)
        return NULL;
    return reg.by_id[k - 1];
}

const keel_kind_desc *keel__kind_parts(keel_kind_id k, const keel__layout **layout)
{
    kind *K = kind_get(k);
    *layout = K ? &K->lay : NULL;
    return K ? &K->desc : NULL;
}

const keel__layout *keel__kind_layout(keel_kind_id k)
{
    kind *K = kind_get(k);
    return K ? &K->lay : NULL;
}

/* Position in `sorted` where key is or would go. */
static size_t sorted_pos(const char *key, bool *found)
{
    size_t lo = 0, hi = reg.count;
    *found = false;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(reg.by_id[reg.sorted[mid] - 1]->desc.key, key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

keel_kind_id keel_kind_find(const char *key)
{
    if (!key || !reg.count)
        return KEEL_NO_KIND;
    bool found;
    size_t i = sorted_pos(key, &found);
    return found ? reg.sorted[i] : KEEL_NO_KIND;
}

size_t keel_kind_count(void)
{
    return reg.count;
}

keel_kind_id keel_kind_at(size_t i)
{
    return i < reg.count ? reg.sorted[i] : KEEL_NO_KIND;
}

void keel__kind_set_batch(keel_kind_id k, void (*run)(keel__batch *b))
{
    kind *K = kind_get(k);
    if (K) K->batch = run;
}

const keel_kind_desc *keel_kind_describe(keel_kind_id k)
{
    kind *K = kind_get(k);
    return K ? &K->desc : NULL;
}

int keel_kind_field(keel_kind_id k, const char *field)
{
    kind *K = kind_get(k);
    if (!K || !field)
        return -1;
    for (size_t i = 0; i < K->desc.field_count; i++)
        if (!strcmp(K->desc.fields[i].key, field))
            return (int)i;
    return -1;
}

size_t keel_kind_record_size(keel_kind_id k)
{
    kind *K = kind_get(k);
    return K ? K->lay.size : 0;
}

size_t keel_kind_field_offset(keel_kind_id k, int field)
{
    kind *K = kind_get(k);
    if (!K || field < 0 || (size_t)field >= K->desc.field_count)
        return 0;
    return K->lay.offsets[field];
}

keel_status keel_field_check(keel_kind_id k, int field, keel_value *v, keel_diags *d)
{
    kind *K = kind_get(k);
    if (!K)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "no kind with id %u", (unsigned)k);
    if (field < 0 || (size_t)field >= K->desc.field_count)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "%s has no field #%d", K->desc.key, field);
    if (!v)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, K->desc.fields[field].key, "%s: no value given",
                          K->desc.fields[field].key);
    return keel__value_check(&K->desc.fields[field], v, d);
}

/* ---- records ---- */

/* ---- declaration ---- */

static bool valid_name_part(const char *s, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

bool keel__kind_key_valid(const char *key)
{
    if (!key)
        return false;
    const char *colon = strchr(key, ':');
    if (!colon)
        return false;
    return valid_name_part(key, (size_t)(colon - key)) && valid_name_part(colon + 1, strlen(colon + 1));
}

/* "core:mesh_renderer" -> "Mesh Renderer" */
static char *display_from_key(const char *key)
{
    const char *name = strchr(key, ':');
    name = name ? name + 1 : key;
    char *s = keel__strdup(name);
    bool start = true;
    for (char *p = s; *p; p++) {
        if (*p == '_') {
            *p = ' ';
            start = true;
        } else {
            if (start && *p >= 'a' && *p <= 'z')
                *p = (char)(*p - 'a' + 'A');
            start = false;
        }
    }
    return s;
}

/* The value a field has when its declaration names none: zero, identity for
 * quats, the first choice, "" / nil; nudged inside min/max when zero is outside. */
static keel_value implicit_default(const keel_field_desc *f)
{
    keel_value v;
    memset(&v, 0, sizeof v);
    v.type = f->type;
    if (f->type == KEEL_T_STRING)
        v.as.s = "";
    if (f->type == KEEL_T_QUAT)
        v.as.v[3] = 1;
    if (f->type == KEEL_T_ASSET || f->type == KEEL_T_ENTITY)
        v.nil = true;
    if (f->type == KEEL_T_INT || f->type == KEEL_T_FLOAT || (is_vector(f->type) && f->type != KEEL_T_QUAT)) {
        double x = 0;
        if (f->has_min && (f->min_exclusive ? !(x > f->min) : !(x >= f->min)))
            x = f->min_exclusive ? f->min + 1 : f->min;
        if (f->has_max && (f->max_exclusive ? !(x < f->max) : !(x <= f->max)))
            x = f->max_exclusive ? f->max - 1 : f->max;
        if (f->has_min && f->has_max && (f->min_exclusive || f->max_exclusive) &&
            (!(x > f->min) || !(x < f->max)))
            x = f->min + (f->max - f->min) / 2;
        if (f->type == KEEL_T_INT)
            v.as.i = (int64_t)ceil(x);
        else if (f->type == KEEL_T_FLOAT)
            v.as.f = x;
        else
            for (int i = 0; i < 4; i++)
                v.as.v[i] = x;
    }
    return v;
}

static void free_desc(keel_kind_desc *d)
{
    free((char *)d->key);
    free((char *)d->display);
    free((char *)d->category);
    free((char *)d->tooltip);
    for (size_t i = 0; i < d->requires_count; i++)
        free((char *)d->requires[i]);
    free((void *)d->requires);
    for (size_t i = 0; i < d->rejects_count; i++)
        free((char *)d->rejects[i]);
    free((void *)d->rejects);
    for (size_t i = 0; i < d->field_count; i++) {
        keel_field_desc *f = (keel_field_desc *)&d->fields[i];
        free((char *)f->key);
        free((char *)f->tooltip);
        for (size_t c = 0; c < f->choice_count; c++)
            free((char *)f->choices[c]);
        free((void *)f->choices);
        if (f->type == KEEL_T_STRING)
            free((char *)f->def.as.s);
    }
    free((void *)d->fields);
    memset(d, 0, sizeof *d);
}

static const char **copy_strings(const char *const *src, size_t n)
{
    if (!n)
        return NULL;
    const char **dst = keel__xrealloc(NULL, n * sizeof *dst);
    for (size_t i = 0; i < n; i++)
        dst[i] = keel__strdup(src[i]);
    return dst;
}

/* A tooltip is shown in every tool that reads the registry: text of bounded size. */
keel_status keel__tooltip_check(const char *tip, const char *path, const char *what, keel_diags *d)
{
    if (!tip) return KEEL_OK;
    if (strlen(tip) > KEEL_TOOLTIP_MAX)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: a tooltip is at most %d bytes, got %zu", what,
                          KEEL_TOOLTIP_MAX, strlen(tip));
    if (!keel__utf8_valid(tip))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: a tooltip must be valid UTF-8", what);
    return KEEL_OK;
}

/* Validates one field declaration; on success `*out` is its owned copy. */
static keel_status field_copy(const char *kkey, const keel_field_desc *src, size_t index,
                              keel_field_desc *out, keel_diags *d)
{
    char path[48];
    snprintf(path, sizeof path, "fields[%zu]", index);
    memset(out, 0, sizeof *out);
    if (!src->key || !*src->key)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: fields[%zu] has no key", kkey, index);
    if (!keel__utf8_valid(src->key)) /* written into scene files as a body key */
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: fields[%zu]: a field name must be valid UTF-8", kkey,
                          index);
    for (size_t c = 0; src->choices && c < src->choice_count; c++)
        if (src->choices[c] && !keel__utf8_valid(src->choices[c]))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': a choice must be valid UTF-8", kkey,
                              src->key);
    if ((unsigned)src->type >= KEEL_T_COUNT_)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s' has an unknown type (%d)", kkey,
                          src->key, (int)src->type);
    if ((src->flags & KEEL_FIELD_TRANSIENT) && (src->flags & KEEL_FIELD_RUNTIME))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path,
                          "%s: field '%s' is transient (saved nowhere) and runtime (saved in save games) at once", kkey,
                          src->key);
    if ((src->has_min || src->has_max) && !is_numeric(src->type))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': min/max apply to numbers only, not %s",
                          kkey, src->key, keel_type_name(src->type));
    if ((src->has_min && !isfinite(src->min)) || (src->has_max && !isfinite(src->max)))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': min/max must be finite", kkey,
                          src->key);
    if (src->has_min && src->has_max && src->min > src->max)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': min is greater than max", kkey,
                          src->key);
    if (src->type == KEEL_T_ENUM) {
        if (src->choice_count < 1 || !src->choices)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': an enum needs at least one choice",
                              kkey, src->key);
        for (size_t c = 0; c < src->choice_count; c++) {
            if (!src->choices[c] || !*src->choices[c])
                return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': choice #%zu is empty", kkey,
                                  src->key, c + 1);
            for (size_t e = 0; e < c; e++)
                if (!strcmp(src->choices[c], src->choices[e]))
                    return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': choice '%s' appears twice",
                                      kkey, src->key, src->choices[c]);
        }
    } else if (src->choice_count) {
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: field '%s': only enums have choices", kkey,
                          src->key);
    }
    char what[300];
    snprintf(what, sizeof what, "%s: field '%s'", kkey, src->key);
    if (keel__tooltip_check(src->tooltip, path, what, d)) return KEEL_INVALID_ARGUMENT;
    if (!src->get != !src->set)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: a derived field needs both get and set", what);
    if (src->get && (src->type == KEEL_T_STRING || src->type == KEEL_T_ASSET || src->type == KEEL_T_ENTITY))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: a derived field must be a plain value, not %s",
                          what, keel_type_name(src->type));
    keel_value def = src->has_default ? src->def : implicit_default(src);
    keel_diags tmp;
    keel_diags_init(&tmp);
    keel_status st = keel__value_check(src, &def, &tmp);
    if (st) {
        const char *msg = tmp.count ? tmp.items[0].message : "";
        KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s: bad default for %s", kkey, msg);
        keel_diags_free(&tmp);
        return KEEL_INVALID_ARGUMENT;
    }
    keel_diags_free(&tmp);
    *out = *src;
    out->key = keel__strdup(src->key);
    out->tooltip = src->tooltip ? keel__strdup(src->tooltip) : NULL;
    out->choices = copy_strings(src->choices, src->choice_count);
    out->has_default = true;
    out->def = def;
    if (src->type == KEEL_T_STRING)
        out->def.as.s = keel__strdup(def.as.s ? def.as.s : "");
    return KEEL_OK;
}

/* Enums are stored as choice indices but mean choice names: new or reordered choices
 * count as a layout change, so live records are remapped by name (keel__worlds_relayout). */
static bool same_choices(const keel_field_desc *a, const keel_field_desc *b)
{
    if (a->type != KEEL_T_ENUM)
        return true;
    if (a->choice_count != b->choice_count)
        return false;
    for (size_t c = 0; c < a->choice_count; c++)
        if (strcmp(a->choices[c], b->choices[c]))
            return false;
    return true;
}

static bool same_layout(const keel_kind_desc *a, const keel_kind_desc *b)
{
    if (a->field_count != b->field_count)
        return false;
    for (size_t i = 0; i < a->field_count; i++)
        if (a->fields[i].type != b->fields[i].type || strcmp(a->fields[i].key, b->fields[i].key) ||
            !a->fields[i].get != !b->fields[i].get || /* a derived field's slot is after the stored ones */
            !same_choices(&a->fields[i], &b->fields[i]))
            return false;
    return true;
}

static keel_status check_refs(const kind *K, keel_diags *d)
{
    keel_status st = KEEL_OK;
    for (size_t i = 0; i < K->desc.requires_count; i++)
        if (!keel_kind_find(K->desc.requires[i])) /* never itself: desc_copy refuses that */
            st = KEEL_ERROR(d, KEEL_NOT_FOUND, "requires", "%s requires '%s', which is not declared",
                            K->desc.key, K->desc.requires[i]);
    for (size_t i = 0; i < K->desc.rejects_count; i++)
        if (!keel_kind_find(K->desc.rejects[i]) && strcmp(K->desc.rejects[i], K->desc.key))
            st = KEEL_ERROR(d, KEEL_NOT_FOUND, "rejects", "%s rejects '%s', which is not declared",
                            K->desc.key, K->desc.rejects[i]);
    return st;
}

/* Builds an owned, validated copy of `src` (display/category filled in). */
static keel_status desc_copy(const keel_kind_desc *src, keel_kind_desc *out, keel_diags *d)
{
    memset(out, 0, sizeof *out);
    const char *key = src->key ? src->key : "";
    if (!keel__kind_key_valid(src->key))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "key",
                          "bad kind key '%s': expected ns:name with [a-z0-9_]+ on both sides", key);
    if (src->version < 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "version", "%s: version %d is below 1", key, src->version);
    if ((unsigned)src->multiplicity > KEEL_MANY)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "multiplicity", "%s: bad multiplicity %d", key,
                          (int)src->multiplicity);
    if (src->multiplicity == KEEL_ONE && src->max)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "max", "%s: max applies to many kinds only", key);
    if ((src->field_count && !src->fields) || (src->requires_count && !src->requires) ||
        (src->rejects_count && !src->rejects))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "%s: a count is set but its array is NULL", key);
    for (size_t i = 0; i < src->requires_count; i++)
        if (!keel__kind_key_valid(src->requires[i]))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "requires", "%s: requires a bad kind key '%s'", key,
                              src->requires[i] ? src->requires[i] : "");
    for (size_t i = 0; i < src->rejects_count; i++)
        if (!keel__kind_key_valid(src->rejects[i]))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "rejects", "%s: rejects a bad kind key '%s'", key,
                              src->rejects[i] ? src->rejects[i] : "");
    /* A kind no entity could ever hold is a mistake in its declaration, said now. */
    if (src->flags & ~(unsigned)(KEEL_KIND_NOSAVE | KEEL_KIND_EDITOR_ONLY | KEEL_KIND_ROOT_ONLY | KEEL_KIND_NOT_ON_ROOT))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "flags", "%s: unknown kind flags 0x%x", key, src->flags);
    if (src->sync_interval > KEEL_SYNC_INTERVAL_MAX)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "sync", "%s: sync interval %u is outside 1..%d", key,
                          (unsigned)src->sync_interval, KEEL_SYNC_INTERVAL_MAX);
    if (src->sync_radius != 0 &&
        !(isfinite(src->sync_radius) && src->sync_radius > 0 && src->sync_radius <= KEEL_SYNC_RADIUS_MAX))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "sync", "%s: sync radius %g must be finite, > 0 and at most %g",
                          key, src->sync_radius, (double)KEEL_SYNC_RADIUS_MAX);
    if (keel__tooltip_check(src->tooltip, "tooltip", key, d)) return KEEL_INVALID_ARGUMENT;
    if ((src->flags & KEEL_KIND_ROOT_ONLY) && (src->flags & KEEL_KIND_NOT_ON_ROOT))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "flags", "%s: root_only and not_on_root together leave it no place",
                          key);
    for (size_t i = 0; i < src->requires_count; i++) {
        if (!strcmp(src->requires[i], key))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "requires", "%s: a kind cannot require itself", key);
        for (size_t j = 0; j < src->rejects_count; j++)
            if (!strcmp(src->requires[i], src->rejects[j]))
                return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "rejects", "%s: requires and rejects %s", key,
                                  src->requires[i]);
    }
    for (size_t i = 0; i < src->field_count; i++)
        for (size_t j = 0; j < i; j++)
            if (src->fields[i].key && src->fields[j].key && !strcmp(src->fields[i].key, src->fields[j].key))
                return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "fields", "%s: field '%s' is declared twice", key,
                                  src->fields[i].key);

    keel_field_desc *fields = src->field_count ? keel__xrealloc(NULL, src->field_count * sizeof *fields) : NULL;
    for (size_t i = 0; i < src->field_count; i++) {
        keel_status st = field_copy(key, &src->fields[i], i, &fields[i], d);
        if (st) {
            out->fields = fields;
            out->field_count = i; /* free what was copied so far */
            free_desc(out);
            return st;
        }
    }
    *out = *src;
    out->key = keel__strdup(src->key);
    out->display = src->display && *src->display ? keel__strdup(src->display) : display_from_key(src->key);
    out->category = keel__strdup(src->category && *src->category ? src->category : "General");
    out->tooltip = src->tooltip ? keel__strdup(src->tooltip) : NULL;
    /* a kind with derived fields takes the checked write path everywhere (as a kind with a
     * validate hook does): every write then refreshes what the derived fields show */
    for (size_t i = 0; i < out->field_count && !out->validate; i++)
        if (fields[i].get) out->validate = keel__derived_validate;
    out->version = src->version ? src->version : 1;
    out->requires = (const char *const *)copy_strings(src->requires, src->requires_count);
    out->rejects = (const char *const *)copy_strings(src->rejects, src->rejects_count);
    out->fields = fields;
    return KEEL_OK;
}

static void layout(kind *K) { keel__layout_build(&K->desc, &K->lay); }

/* Recomputed on every declaration (rare): an add of a kind nobody rejects, that itself
 * requires and rejects nothing, skips the scan of the entity's stack. */
static void mark_rejected(void)
{
    for (size_t i = 0; i < reg.count; i++)
        reg.by_id[i]->rejected = false;
    for (size_t i = 0; i < reg.count; i++)
        for (size_t r = 0; r < reg.by_id[i]->desc.rejects_count; r++) {
            kind *R = kind_get(keel_kind_find(reg.by_id[i]->desc.rejects[r]));
            if (R)
                R->rejected = true;
        }
}

/* validate and migrate callbacks running: the registry holds still meanwhile (they are pure
 * checks and rewrites, and their callers hold the kind's description). A hook may redeclare
 * kinds (hot reload from a running game): a Lua hook works on a copy of its record; a C hook
 * must not redeclare its own kind, whose records move. */
static int callback_depth;
void keel__callback_enter(void) { callback_depth++; }
void keel__callback_leave(void) { callback_depth--; }

bool keel__kind_rejected(keel_kind_id k)
{
    kind *K = kind_get(k);
    return !K || K->rejected;
}

uint32_t keel__kinds_limit = KEEL__KIND_MAX;

keel_status keel_kind_declare(const keel_kind_desc *desc, keel_kind_id *out, keel_diags *d)
{
    if (out)
        *out = KEEL_NO_KIND;
    if (!desc)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no kind description");
    keel__kinds_quiesce(); /* a save job's worker may be reading the registry */
    keel_kind_desc copy;
    keel_status st = desc_copy(desc, &copy, d);
    if (st)
        return st;
    if (reg.frozen) {
        kind probe = { .desc = copy };
        keel_diags tmp;
        keel_diags_init(&tmp);
        st = check_refs(&probe, &tmp);
        keel_diags_append(d, &tmp, NULL);
        if (st) {
            free_desc(&copy);
            return st;
        }
    }

    keel_kind_id id = keel_kind_find(copy.key);
    /* The core reads built-in records as fixed structs (keel_transform, ...), and a hook's
     * record pointer must outlive its call: neither may change under them. */
    if (id && kind_get(id)->desc.builtin)
        st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "key", "%s is built in: it cannot be redeclared", copy.key);
    else if (callback_depth > 0)
        st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "key", "%s: kinds cannot be declared from a validate or migrate callback",
                        copy.key);
    if (st) {
        free_desc(&copy);
        return st;
    }
    if (id) {
        /* Live components must fit the new rules, or the old declaration stays. */
        if ((st = keel__worlds_check_kind(id, &copy, d))) {
            free_desc(&copy);
            return st;
        }
        kind *K = kind_get(id);
        keel_kind_desc old = K->desc;
        bool relayout = !same_layout(&old, &copy);
        K->desc = copy;
        K->batch = NULL; /* the declaring layer sets it again for its own hooks */
        layout(K);
        keel__layout_derive(id, d); /* the defaults through set, before records are laid out anew */
        if (relayout)
            keel__worlds_relayout(id, &old, d);
        keel__worlds_refit(id, d);
        keel__worlds_unfault(id);
        if (old.user_free && old.user && old.user != copy.user)
            old.user_free(old.user);
        free_desc(&old);
    } else {
        if (reg.count >= keel__kinds_limit) { /* a membership entry holds a kind id in 16 bits (member.h) */
            free_desc(&copy);
            return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "kinds limit (%u) exceeded", (unsigned)keel__kinds_limit);
        }
        kind *K = keel__xrealloc(NULL, sizeof *K);
        memset(K, 0, sizeof *K);
        K->desc = copy;
        layout(K);
        bool found;
        size_t pos = sorted_pos(copy.key, &found);
        reg.by_id = keel__xrealloc(reg.by_id, (reg.count + 1) * sizeof *reg.by_id);
        reg.sorted = keel__xrealloc(reg.sorted, (reg.count + 1) * sizeof *reg.sorted);
        reg.by_id[reg.count] = K;
        id = (keel_kind_id)(reg.count + 1);
        memmove(reg.sorted + pos + 1, reg.sorted + pos, (reg.count - pos) * sizeof *reg.sorted);
        reg.sorted[pos] = id;
        reg.count++;
        keel__layout_derive(id, d);
    }
    mark_rejected();
    declarations++;
    if (out)
        *out = id;
    keel__worlds_adopt(id, d);
    return KEEL_OK;
}

keel_status keel_registry_freeze(keel_diags *d)
{
    keel_status first = KEEL_OK;
    reg.frozen = true;
    for (size_t i = 0; i < reg.count; i++) {
        keel_status st = check_refs(reg.by_id[reg.sorted[i] - 1], d);
        if (st && !first)
            first = st;
    }
    return first;
}


keel_status keel_init(void)
{
    if (reg.ready)
        return KEEL_OK;
    reg.ready = true;
    return keel__builtins_register(NULL);
}

void keel_shutdown(void)
{
    keel__kinds_quiesce();
    for (size_t i = 0; i < reg.count; i++) {
        kind *K = reg.by_id[i];
        if (K->desc.user_free && K->desc.user)
            K->desc.user_free(K->desc.user);
        free_desc(&K->desc);
        keel__layout_free(&K->lay);
        free(K);
    }
    free(reg.by_id);
    free(reg.sorted);
    memset(&reg, 0, sizeof reg);
    declarations++;
}
