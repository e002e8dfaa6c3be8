/* cook_read.c — keel_cook_read: a cooked binary scene validated whole, then built into a new world (see COOKED.md).
 *
 * The reader runs in two halves, and the first one never touches a world. Validation goes
 * outside in: check_frame reads the header, the CRC over the whole file and the section table
 * (every offset and length inside the body, no two sections overlapping); read_strings copies
 * the string table into one pool, each string NUL-terminated, length-bounded and valid UTF-8;
 * check_sections then walks the scene, entity and component sections once with every index
 * bounded (strings, parents before their children, owners grouped in order, type tags known,
 * values inside the section) and the limits applied. After that pass the builder may read
 * without checking a length: the `rd` cursor's reads are unchecked on purpose, and only
 * read_strings and check_sections call rd_need. A file that fails any of it builds nothing.
 *
 * Building is the YAML reader's result by another road: the scene section makes the world,
 * entities are spawned in file order (hierarchy pre-order, so a parent's handle exists before
 * its children need it), and components go onto their owners. A component takes the fast path
 * when its kind is declared at the same version and every cooked field has the declared type:
 * keel_add with defaults, then each value checked and stored directly. Anything else (an older
 * version to migrate, a field whose type changed, a kind not declared here) goes through a
 * body tree (fields_node) so that keel_add's migrations and unknown components behave exactly
 * as for a YAML scene. Kind rules and entity and asset references are checked only once the
 * whole world is built, since a component may require or point at one that comes later; any
 * error frees the world, so a load is all or nothing. */
#include "base/util.h"
#include "base/bytes.h"
#include "model/kind.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "files/cook.h"
#include "files/features.h"
#include "model/body.h"
#include "model/record.h"
#include "model/field.h"
#include "model/member.h"
#include "model/value.h"

static const char *const section_names[] = { "?", "strings", "scene", "entities", "components" };

/* ---------------------------------------------------------------- reading */

typedef struct rd {
    const uint8_t *p;
    size_t len, pos;
} rd;

static bool rd_need(rd *r, size_t n) { return n <= r->len - r->pos; }
static uint8_t rd_u8(rd *r) { return r->p[r->pos++]; }
static uint32_t rd_u32(rd *r)
{
    uint32_t v = keel__get_u32(r->p + r->pos);
    r->pos += 4;
    return v;
}
static uint64_t rd_u64(rd *r)
{
    uint64_t v = keel__get_u64(r->p + r->pos);
    r->pos += 8;
    return v;
}
static double rd_f64(rd *r)
{
    uint64_t v = rd_u64(r);
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static keel_uuid rd_uuid(rd *r)
{
    keel_uuid u;
    memcpy(u.bytes, r->p + r->pos, 16);
    r->pos += 16;
    return u;
}

typedef struct section {
    uint32_t id, offset, length, count;
} section;

typedef struct cooked {
    section sec[SEC_COUNT_ + 1]; /* by id */
    char **strings;              /* NUL-terminated copies */
    char *string_pool;
    uint32_t nstrings;
    uint32_t features; /* the header's feature bits (all known) */
} cooked;

static keel_status bad(keel_diags *d, const char *path, const char *msg, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static keel_status bad(keel_diags *d, const char *path, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return KEEL_ERROR(d, KEEL_PARSE_ERROR, path, "cooked file: %s", msg);
}

static size_t value_size(keel_type t)
{
    switch (t) {
    case KEEL_T_BOOL: return 1;
    case KEEL_T_INT: case KEEL_T_FLOAT: return 8;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
        return 8 * (size_t)keel_type_width(t);
    case KEEL_T_ENUM: case KEEL_T_STRING: return 4;
    case KEEL_T_ASSET: case KEEL_T_ENTITY: return 16;
    default: return 0;
    }
}

/* Header, CRC and section table: every offset, length and count bounded. */
static keel_status check_frame(const uint8_t *p, size_t len, const keel_limits *lim, cooked *ck, keel_diags *d)
{
    if (len > lim->document_size)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "cooked file is %zu bytes, over the %zu byte limit",
                          len, lim->document_size);
    if (len < 8 || memcmp(p, "KEELCOOK", 8) != 0) return bad(d, "", "bad magic (not a KEELCOOK file)");
    if (len < COOK_HEADER + 4) return bad(d, "", "truncated header (%zu bytes)", len);
    uint32_t version = keel__get_u32(p + 8);
    if (version != COOK_VERSION)
        return bad(d, "", "format version %u is not supported (this reader knows %u)", version, COOK_VERSION);
    if (keel__get_u32(p + 12) != COOK_ENDIAN) return bad(d, "", "bad endianness marker 0x%08x", keel__get_u32(p + 12));
    uint32_t stored = keel__get_u32(p + len - 4);
    uint32_t crc = (uint32_t)crc32_z(0L, p, len - 4);
    if (stored != crc)
        return bad(d, "", "CRC mismatch (stored 0x%08x, computed 0x%08x): file is damaged or truncated", stored, crc);
    uint32_t nsec = keel__get_u32(p + 16);
    if (nsec != SEC_COUNT_) return bad(d, "", "section count is %u, expected %u", nsec, (unsigned)SEC_COUNT_);
    uint32_t feats = keel__get_u32(p + 20);
    if (feats & ~KEEL__FEATURES_KNOWN) { /* a newer keel's file: refused whole */
        uint32_t bit = 0;
        while (!((feats & ~KEEL__FEATURES_KNOWN) & (1u << bit))) bit++;
        return KEEL_ERROR(d, KEEL_UNSUPPORTED, "features",
                          "feature bit %u of the cooked header is not known to this keel", (unsigned)bit);
    }
    ck->features = feats;
    uint64_t table_end = COOK_HEADER + (uint64_t)nsec * COOK_SECTION_ENTRY;
    uint64_t body_end = len - 4;
    if (table_end > body_end) return bad(d, "", "section table runs past the end of the file");
    memset(ck->sec, 0, sizeof ck->sec);
    section sorted[SEC_COUNT_];
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *e = p + COOK_HEADER + i * COOK_SECTION_ENTRY;
        section s = { keel__get_u32(e), keel__get_u32(e + 4), keel__get_u32(e + 8), keel__get_u32(e + 12) };
        if (s.id < 1 || s.id > SEC_COUNT_) return bad(d, "", "section %u has unknown id %u", i, s.id);
        if (ck->sec[s.id].id) return bad(d, "", "section %s appears twice", section_names[s.id]);
        if (s.offset < table_end || (uint64_t)s.offset + s.length > body_end)
            return bad(d, "", "section %s (offset %u, length %u) lies outside the file body [%llu, %llu)",
                       section_names[s.id], s.offset, s.length, (unsigned long long)table_end,
                       (unsigned long long)body_end);
        ck->sec[s.id] = s;
        /* insertion sort by offset, then check neighbours for overlap */
        uint32_t j = i;
        while (j > 0 && sorted[j - 1].offset > s.offset) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = s;
    }
    for (uint32_t i = 1; i < nsec; i++)
        if ((uint64_t)sorted[i - 1].offset + sorted[i - 1].length > sorted[i].offset)
            return bad(d, "", "sections %s and %s overlap", section_names[sorted[i - 1].id],
                       section_names[sorted[i].id]);
    return KEEL_OK;
}

static keel_status read_strings(const uint8_t *p, const keel_limits *lim, cooked *ck, keel_diags *d)
{
    const section *s = &ck->sec[SEC_STRINGS];
    if (s->count > s->length / 4)
        return bad(d, "", "string table claims %u strings in %u bytes", s->count, s->length);
    rd r = { p + s->offset, s->length, 0 };
    ck->strings = keel__xcalloc(s->count, sizeof *ck->strings);
    ck->string_pool = keel__xrealloc(NULL, (size_t)s->length + 1);
    char *pool = ck->string_pool;
    for (uint32_t i = 0; i < s->count; i++) {
        if (!rd_need(&r, 4)) return bad(d, "", "string %u: truncated length", i);
        uint32_t n = rd_u32(&r);
        if (!rd_need(&r, n)) return bad(d, "", "string %u: length %u runs past the string table", i, n);
        if (n > lim->string_length)
            return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "cooked file: string %u is %u bytes, over the %zu limit",
                              i, n, lim->string_length);
        if (memchr(r.p + r.pos, 0, n)) return bad(d, "", "string %u contains a NUL byte", i);
        memcpy(pool, r.p + r.pos, n);
        pool[n] = 0;
        if (!keel__utf8_valid(pool)) return bad(d, "", "string %u is not valid UTF-8", i); /* YAML could not hold it */
        ck->strings[i] = pool;
        pool += n + 1;
        r.pos += n;
        ck->nstrings = i + 1;
    }
    if (r.pos != r.len) return bad(d, "", "string table has %zu trailing bytes", r.len - r.pos);
    return KEEL_OK;
}

static bool str_ok(const cooked *ck, uint32_t i) { return i < ck->nstrings; }

/* Structure of the scene, entity and component sections, before anything is built. */
static keel_status check_sections(const uint8_t *p, const keel_limits *lim, cooked *ck, keel_diags *d)
{
    const section *sc = &ck->sec[SEC_SCENE];
    if (sc->count != 1 || (sc->length != COOK_SCENE_SIZE && sc->length != COOK_SCENE_SIZE_LOOK))
        return bad(d, "scene", "scene section has count %u and length %u (expected 1 and %u or %u)", sc->count,
                   sc->length, COOK_SCENE_SIZE, COOK_SCENE_SIZE_LOOK);
    rd r = { p + sc->offset, sc->length, 0 };
    if (keel_uuid_is_nil(rd_uuid(&r))) return bad(d, "scene.uuid", "scene UUID is nil");
    if (!str_ok(ck, rd_u32(&r))) return bad(d, "scene.name", "string index out of range");
    if (rd_u8(&r) > 1) return bad(d, "settings.grid.enabled", "not a boolean");

    const section *se = &ck->sec[SEC_ENTITIES];
    if (se->count > lim->entities)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "entities", "cooked file: %u entities, over the %zu limit",
                          se->count, lim->entities);
    if ((uint64_t)se->count * COOK_ENTITY_SIZE != se->length)
        return bad(d, "entities", "entity section length %u does not hold %u entities", se->length, se->count);
    uint32_t *depth = keel__xcalloc(se->count, sizeof *depth);
    keel_status st = KEEL_OK;
    r = (rd){ p + se->offset, se->length, 0 };
    for (uint32_t i = 0; i < se->count && st == KEEL_OK; i++) {
        char path[32];
        snprintf(path, sizeof path, "entities[%u]", i);
        keel_uuid u = rd_uuid(&r);
        uint32_t name = rd_u32(&r), parent = rd_u32(&r);
        uint8_t en = rd_u8(&r);
        if (keel_uuid_is_nil(u)) st = bad(d, path, "entity UUID is nil");
        else if (!str_ok(ck, name)) st = bad(d, path, "name string index %u out of range", name);
        else if (parent != COOK_NONE && parent >= i)
            st = bad(d, path, "parent index %u does not precede the entity", parent);
        else if (en > 1) st = bad(d, path, "enabled flag is %u, not a boolean", en);
        else {
            depth[i] = parent == COOK_NONE ? 1 : depth[parent] + 1;
            if (depth[i] > lim->hierarchy_depth)
                st = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, path, "cooked file: hierarchy deeper than %zu",
                                lim->hierarchy_depth);
        }
    }
    free(depth);
    if (st != KEEL_OK) return st;

    const section *sm = &ck->sec[SEC_COMPONENTS];
    if (sm->count > sm->length / 21u)
        return bad(d, "components", "component section claims %u components in %u bytes", sm->count, sm->length);
    r = (rd){ p + sm->offset, sm->length, 0 };
    uint32_t prev_owner = 0, per_owner = 0;
    for (uint32_t i = 0; i < sm->count; i++) {
        char path[40];
        snprintf(path, sizeof path, "components[%u]", i);
        if (!rd_need(&r, 21)) return bad(d, path, "truncated component header");
        uint32_t owner = rd_u32(&r), key = rd_u32(&r), version = rd_u32(&r), slot = rd_u32(&r);
        uint8_t en = rd_u8(&r);
        uint32_t nf = rd_u32(&r);
        if (owner > se->count) return bad(d, path, "owner %u out of range", owner);
        if (owner < prev_owner) return bad(d, path, "components are not grouped by owner");
        per_owner = owner == prev_owner ? per_owner + 1 : 1;
        prev_owner = owner;
        if (per_owner > lim->components_per_entity)
            return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, path, "cooked file: more than %zu components on one entity",
                              lim->components_per_entity);
        if (!str_ok(ck, key)) return bad(d, path, "kind key string index %u out of range", key);
        if (!keel__kind_key_valid(ck->strings[key]))
            return bad(d, path, "malformed kind key '%.64s'", ck->strings[key]);
        if (version < 1 || version > INT32_MAX) return bad(d, path, "kind version %u out of range", version);
        if (slot == KEEL_SLOT_AUTO) return bad(d, path, "slot %u out of range", slot);
        if (en > 1) return bad(d, path, "enabled flag is %u, not a boolean", en);
        if (nf > (r.len - r.pos) / 6) return bad(d, path, "field count %u runs past the section", nf);
        for (uint32_t f = 0; f < nf; f++) {
            if (!rd_need(&r, 5)) return bad(d, path, "field %u truncated", f);
            uint32_t fk = rd_u32(&r);
            uint8_t t = rd_u8(&r);
            if (!str_ok(ck, fk)) return bad(d, path, "field %u key string index out of range", f);
            if (t >= KEEL_T_COUNT_) return bad(d, path, "field %s has unknown type tag %u", ck->strings[fk], t);
            size_t vs = value_size((keel_type)t);
            if (!rd_need(&r, vs)) return bad(d, path, "field %s value truncated", ck->strings[fk]);
            if (t == KEEL_T_BOOL && r.p[r.pos] > 1) return bad(d, path, "field %s is not a boolean", ck->strings[fk]);
            if ((t == KEEL_T_ENUM || t == KEEL_T_STRING) && !str_ok(ck, keel__get_u32(r.p + r.pos)))
                return bad(d, path, "field %s string index out of range", ck->strings[fk]);
            r.pos += vs;
        }
    }
    if (r.pos != r.len) return bad(d, "components", "component section has %zu trailing bytes", r.len - r.pos);
    return KEEL_OK;
}

/* One cooked value as a keel_value (strings borrowed from the string table). */
static void read_value(rd *r, const cooked *ck, keel_type t, keel_value *v, const char **enum_name)
{
    memset(v, 0, sizeof *v);
    v->type = t;
    switch (t) {
    case KEEL_T_BOOL: v->as.b = rd_u8(r) != 0; break;
    case KEEL_T_INT: v->as.i = (int64_t)rd_u64(r); break;
    case KEEL_T_FLOAT: v->as.f = rd_f64(r); break;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
        for (int i = 0; i < keel_type_width(t); i++) v->as.v[i] = rd_f64(r);
        break;
    case KEEL_T_ENUM: *enum_name = ck->strings[rd_u32(r)]; break;
    case KEEL_T_STRING: v->as.s = ck->strings[rd_u32(r)]; break;
    case KEEL_T_ASSET: case KEEL_T_ENTITY:
        v->as.u = rd_uuid(r);
        v->nil = keel_uuid_is_nil(v->as.u);
        break;
    default: break;
    }
}


typedef struct comp_hdr {
    uint32_t owner, key, version, slot, nfields;
    bool enabled;
} comp_hdr;

/* Reads the fields into a body MAP (migrations, kind changes, unknown kinds). */
static keel_node *fields_node(rd *r, const cooked *ck, uint32_t nf)
{
    keel_node *body = keel_node_new_map();
    for (uint32_t f = 0; f < nf; f++) {
        const char *key = ck->strings[rd_u32(r)];
        keel_type t = (keel_type)rd_u8(r);
        keel_value v;
        const char *en = NULL;
        read_value(r, ck, t, &v, &en);
        keel_node_put(body, key, keel__value_node(v.type, &v, en, false));
    }
    return body;
}

/* Does every cooked field match the kind's declared type? Then the fast path applies. */
static bool fields_match(rd r, const cooked *ck, keel_kind_id k, const keel_kind_desc *desc, uint32_t nf)
{
    for (uint32_t f = 0; f < nf; f++) {
        const char *key = ck->strings[rd_u32(&r)];
        keel_type t = (keel_type)rd_u8(&r);
        int fi = keel_kind_field(k, key);
        if (fi >= 0 && desc->fields[fi].type != t) return false;
        r.pos += value_size(t);
    }
    return true;
}

/* The typed fast path: defaults first (keel_add), then each cooked field checked and stored. */
static void put_fields(keel_world *w, keel_comp c, rd *r, const cooked *ck, const keel_kind_desc *desc,
                       uint32_t nf, bool strict, const char *path, keel_diags *d)
{
    for (uint32_t f = 0; f < nf; f++) {
        const char *key = ck->strings[rd_u32(r)];
        keel_type t = (keel_type)rd_u8(r);
        keel_value v;
        const char *en = NULL;
        read_value(r, ck, t, &v, &en);
        char fpath[160];
        snprintf(fpath, sizeof fpath, "%s.body.%s", path, key);
        int fi = keel_kind_field(c.kind, key);
        if (fi < 0) {
            keel_diag_add(d, KEEL_SEV_WARNING, KEEL_NOT_FOUND, fpath, NULL, 0, 0,
                          "%s has no field %s: skipped", desc->key, key);
            continue;
        }
        const keel_field_desc *fd = &desc->fields[fi];
        if (fd->flags & (KEEL_FIELD_TRANSIENT | KEEL_FIELD_RUNTIME)) continue;
        if (t == KEEL_T_ENUM) {
            size_t ci = 0;
            while (ci < fd->choice_count && strcmp(fd->choices[ci], en) != 0) ci++;
            if (ci == fd->choice_count) {
                keel_diag_add(d, strict ? KEEL_SEV_ERROR : KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, fpath, NULL, 0,
                              0, "\"%s\" is not a choice of %s.%s%s", en, desc->key, key,
                              strict ? "" : ": the default is kept");
                continue;
            }
            v.as.i = (int64_t)ci;
        }
        if (keel_field_check(c.kind, fi, &v, d) != KEEL_OK) continue;
        if (fd->get) { /* derived: loading runs its set, a refusal said at the field */
            keel_diags tmp;
            keel_diags_init(&tmp);
            void *rec = keel_record(w, c);
            if (rec && keel__record_derived_set(c.kind, w, c, rec, fi, &v, &tmp))
                keel_diag_add(d, KEEL_SEV_ERROR, tmp.count ? tmp.items[0].code : KEEL_INVALID_ARGUMENT, fpath,
                              NULL, 0, 0, "%s", tmp.count ? tmp.items[0].message : "set failed");
            if (rec) keel__record_derive(c.kind, rec);
            keel_diags_free(&tmp);
            continue;
        }
        keel__field_store(w, c, 1, &fi, &v, false);
    }
}

/* One component onto `owner`; `r` is left somewhere inside its fields (the caller skips them). */
static keel_status build_component(keel_world *w, keel_entity owner, const comp_hdr *h, rd *r, const cooked *ck,
                                   bool strict, const char *path, keel_diags *d)
{
    const char *key = ck->strings[h->key];
    keel_kind_id k = keel_kind_find(key);
    const keel_kind_desc *desc = k ? keel_kind_describe(k) : NULL;
    if (!desc || (int)h->version > desc->version) {
        /* not declared here (or newer than we know): kept unknown, as a YAML load does */
        keel_node *body = fields_node(r, ck, h->nfields);
        keel_status s = keel_add_unknown(w, owner, key, (int)h->version, h->slot, body, d);
        keel_node_free(body);
        return s;
    }
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = h->slot;
    o.strict = strict;
    o.skip_rules = true;
    o.no_awake = true;
    o.path = path;
    keel_comp c;
    keel_status s;
    if ((int)h->version == desc->version && fields_match(*r, ck, k, desc, h->nfields)) {
        s = keel_add(w, owner, k, &o, &c, NULL, d);
        if (s == KEEL_OK) put_fields(w, c, r, ck, desc, h->nfields, strict, path, d);
        /* each string within its limit, the body maybe not: a save would write what a load refuses */
        if (s == KEEL_OK) s = keel__record_body_check(k, keel_record(w, c), d);
        /* a cooked file is input too: its values pass validate as a YAML load's do */
        if (s == KEEL_OK && desc->validate) s = keel__validate_fields(w, c, path, d);
    } else {
        keel_node *body = fields_node(r, ck, h->nfields);
        o.body = body;
        o.version = (int)h->version;
        s = keel_add(w, owner, k, &o, &c, NULL, d);
        keel_node_free(body);
    }
    if (s == KEEL_OK && !h->enabled) s = keel_comp_set_enabled(w, c, false, NULL, d);
    return s;
}

/* Entity and asset references of every live component, checked once the world is built. */
static void check_refs(keel_world *w, keel_entity e, const char *prefix, const keel_load_opts *o, keel_diags *d)
{
    size_t n = keel_member_count(w, e);
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (!keel_member_at(w, e, i, &m) || !m.loaded) continue;
        const keel_kind_desc *desc = keel_kind_describe(m.kind);
        keel_comp c = { e, m.kind, m.slot };
        for (size_t f = 0; f < desc->field_count; f++) {
            keel_type t = desc->fields[f].type;
            if (t != KEEL_T_ENTITY && (t != KEEL_T_ASSET || !o->assets)) continue;
            keel_value v;
            if (keel_get(w, c, (int)f, &v, NULL) != KEEL_OK || v.nil || keel_uuid_is_nil(v.as.u)) continue;
            char path[160], text[37];
            snprintf(path, sizeof path, "%s.components[%zu].body.%s", prefix, i, desc->fields[f].key);
            keel_uuid_format(v.as.u, text);
            if (t == KEEL_T_ENTITY && !keel_find(w, v.as.u))
                KEEL_ERROR(d, KEEL_NOT_FOUND, path, "unknown entity reference %s", text);
            else if (t == KEEL_T_ASSET && !keel_assets_has(o->assets, v.as.u))
                keel_diag_add(d, o->strict ? KEEL_SEV_ERROR : KEEL_SEV_WARNING, KEEL_NOT_FOUND, path, NULL, 0, 0,
                              "asset %s is not in the manifest", text);
        }
    }
}

/* The scene section: a new world with its UUID, name and grid. */
static keel_world *build_scene(const uint8_t *p, const cooked *ck, keel_diags *d)
{
    rd r = { p + ck->sec[SEC_SCENE].offset, ck->sec[SEC_SCENE].length, 0 };
    keel_uuid su = rd_uuid(&r);
    keel_world *w = keel_world_new(ck->strings[rd_u32(&r)]);
    keel__world_set_features(w, ck->features);
    if (!w) abort();
    keel_world_set_uuid(w, su, NULL); /* not nil: check_sections saw to it */
    keel_grid g = keel_grid_default();
    g.enabled = rd_u8(&r) != 0;
    for (int i = 0; i < 3; i++) g.origin[i] = rd_f64(&r);
    for (int i = 0; i < 4; i++) g.orientation[i] = rd_f64(&r);
    g.base_spacing = rd_f64(&r);
    g.major_line_every = (int64_t)rd_u64(&r);
    if (ck->sec[SEC_SCENE].length == COOK_SCENE_SIZE_LOOK) {
        double *look[] = { g.minor_color, g.major_color, g.u_color, g.v_color };
        for (int c = 0; c < 4; c++)
            for (int i = 0; i < 4; i++) look[c][i] = rd_f64(&r);
        g.fade = rd_f64(&r);
        g.display = (keel_grid_display)rd_u8(&r);
    }
    keel_world_set_grid(w, &g, d);
    return w;
}

/* The entities section, in order (a parent comes before its children): handles[i] for each. */
static void build_entities(keel_world *w, const uint8_t *p, const cooked *ck, keel_entity *handles, keel_diags *d)
{
    const section *se = &ck->sec[SEC_ENTITIES];
    rd r = { p + se->offset, se->length, 0 };
    for (uint32_t i = 0; i < se->count; i++) {
        keel_uuid u = rd_uuid(&r);
        const char *name = ck->strings[rd_u32(&r)];
        uint32_t parent = rd_u32(&r);
        bool en = rd_u8(&r) != 0;
        char path[32];
        snprintf(path, sizeof path, "entities[%u]", i);
        keel_diags one;
        keel_diags_init(&one);
        keel_status s = keel_spawn(w, name, parent == COOK_NONE ? KEEL_NO_ENTITY : handles[parent], &u,
                                   &handles[i], NULL, &one);
        if (s == KEEL_OK && !en) s = keel_set_enabled(w, handles[i], false, NULL, &one);
        if (s == KEEL_INVALID_OPERATION) {
            char text[37];
            keel_uuid_format(u, text);
            keel_diags_free(&one);
            bad(d, path, "duplicate entity UUID %s", text);
        } else {
            keel_diags_append(d, &one, path);
        }
        keel_diags_free(&one);
    }
}

/* The components section: each onto its owner (skipped when the owner's spawn failed). */
static void build_components(keel_world *w, const uint8_t *p, const cooked *ck, const keel_entity *handles,
                             bool strict, keel_diags *d)
{
    const section *sm = &ck->sec[SEC_COMPONENTS];
    uint32_t *ncomps = keel__xcalloc((size_t)ck->sec[SEC_ENTITIES].count + 1, sizeof *ncomps);
    rd r = { p + sm->offset, sm->length, 0 };
    for (uint32_t i = 0; i < sm->count; i++) {
        comp_hdr h;
        h.owner = rd_u32(&r);
        h.key = rd_u32(&r);
        h.version = rd_u32(&r);
        h.slot = rd_u32(&r);
        h.enabled = rd_u8(&r) != 0;
        h.nfields = rd_u32(&r);
        char path[64];
        if (h.owner == 0) snprintf(path, sizeof path, "root[%u]", ncomps[0]);
        else snprintf(path, sizeof path, "entities[%u].components[%u]", h.owner - 1, ncomps[h.owner]);
        ncomps[h.owner]++;
        keel_entity owner = h.owner == 0 ? keel_world_root(w) : handles[h.owner - 1];
        size_t start = r.pos;
        if (owner) build_component(w, owner, &h, &r, ck, strict, path, d); /* else its spawn failed */
        /* whichever path ran, continue from the next component */
        r.pos = start;
        for (uint32_t f = 0; f < h.nfields; f++) {
            r.pos += 4;
            keel_type t = (keel_type)rd_u8(&r);
            r.pos += value_size(t);
        }
    }
    free(ncomps);
}

/* Kind rules and references, once everything is in place (the root first, then entities in order). */
static void check_built(keel_world *w, const keel_entity *handles, uint32_t count, const keel_load_opts *o,
                        keel_diags *d)
{
    keel_check_rules(w, keel_world_root(w), "root", d);
    for (uint32_t i = 0; i < count; i++) {
        char path[32];
        snprintf(path, sizeof path, "entities[%u]", i);
        keel_check_rules(w, handles[i], path, d);
    }
    check_refs(w, keel_world_root(w), "root", o, d);
    for (uint32_t i = 0; i < count; i++) {
        char path[32];
        snprintf(path, sizeof path, "entities[%u]", i);
        check_refs(w, handles[i], path, o, d);
    }
}

/* The validated sections as a new world; on any error (a spawn, a field, a rule) none is returned. */
static keel_status build(const uint8_t *p, const cooked *ck, const keel_load_opts *o, keel_world **out,
                         keel_diags *d)
{
    keel_world *w = build_scene(p, ck, d);
    uint32_t count = ck->sec[SEC_ENTITIES].count;
    keel_entity *handles = keel__xcalloc(count, sizeof *handles);
    build_entities(w, p, ck, handles, d);
    build_components(w, p, ck, handles, o->strict, d);
    if (d->errors == 0) check_built(w, handles, count, o, d);
    free(handles);
    keel_status s = keel_diags_status(d);
    if (s == KEEL_OK && !o->no_awake) s = keel_awake_all(w, d);
    if (s != KEEL_OK) {
        keel_world_free(w);
        return s;
    }
    *out = w;
    return KEEL_OK;
}

keel_status keel_cook_read(const void *data, size_t len, const keel_load_opts *o, keel_world **out, keel_diags *d)
{
    if (out) *out = NULL;
    if (!out || (!data && len)) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_cook_read: NULL argument");
    keel_load_opts def = keel_load_opts_default();
    if (!o) o = &def;
    const uint8_t *p = data;
    keel_diags local;
    keel_diags_init(&local);
    cooked ck;
    memset(&ck, 0, sizeof ck);
    keel_status s = check_frame(p, len, &o->limits, &ck, &local);
    if (s == KEEL_OK) s = read_strings(p, &o->limits, &ck, &local);
    if (s == KEEL_OK) s = check_sections(p, &o->limits, &ck, &local);
    if (s == KEEL_OK) s = build(p, &ck, o, out, &local);
    keel__diags_collapse_skipped(&local);
    if (o->file)
        for (size_t i = 0; i < local.count; i++)
            if (!local.items[i].file) local.items[i].file = keel__strdup(o->file);
    keel_diags_append(d, &local, "");
    keel_diags_free(&local);
    free(ck.strings);
    free(ck.string_pool);
    return s;
}
