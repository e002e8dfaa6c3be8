/* body.c — component bodies (keel_node MAPs of field values by name) <-> records. */
#include "util.h"
#include "body.h"
#include "value.h"
#include "kind.h"
#include "record.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct decode_ctx {
    const char *kind;
    const char *path;
    const char *file;
    keel_diags *d;
} decode_ctx;

static char *field_path(const decode_ctx *c, const char *field)
{
    if (!c->path || !*c->path)
        return keel__strdup(field);
    return keel__strfmt("%s.%s", c->path, field);
}

static keel_status fail(const decode_ctx *c, keel_severity sev, keel_status code, const char *field,
                        const keel_node *at, const char *fmt, const char *a, const char *b)
{
    char *p = field_path(c, field);
    char *msg = keel__strfmt(fmt, a ? a : "", b ? b : "");
    keel_diag_add(c->d, sev, code, p, c->file, at ? at->line : 0, at ? at->col : 0, "%s: %s", field, msg);
    free(msg);
    free(p);
    return code;
}

static const char *show(const keel_node *n)
{
    if (n->kind == KEEL_NODE_SEQ)
        return "a sequence";
    if (n->kind == KEEL_NODE_MAP)
        return "a map";
    return NULL;
}

/* Reads `n` into `v` as a value of field type `f->type` (before the range checks). */
static keel_status read_value(const decode_ctx *c, const keel_field_desc *f, const keel_node *n,
                              bool strict, keel_value *v, bool *keep_default)
{
    memset(v, 0, sizeof *v);
    v->type = f->type;
    *keep_default = false;
    char quoted[96];
    if (n->kind == KEEL_NODE_SCALAR)
        snprintf(quoted, sizeof quoted, "'%.80s%s'", n->text ? n->text : "",
                 n->len > 80 ? "..." : "");
    const char *got = show(n) ? show(n) : quoted;
    /* libyaml decodes "\0": a keel string is a C string, so a NUL would cut it (or a choice
     * name, a UUID, a number) short. Refused, whatever the field's type. */
    if (keel__node_has_nul(n))
        return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "%s field holds a NUL byte%s",
                    keel_type_name(f->type), NULL);
    switch (f->type) {
    case KEEL_T_BOOL:
        if (!keel_node_as_bool(n, &v->as.b))
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected bool, got %s%s", got, NULL);
        return KEEL_OK;
    case KEEL_T_INT: {
        double x;
        if (keel_node_as_int(n, &v->as.i))
            return KEEL_OK;
        if (keel_node_as_float(n, &x)) {
            v->type = KEEL_T_FLOAT; /* integral floats are converted by the field check */
            v->as.f = x;
            return KEEL_OK;
        }
        return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected int, got %s%s", got, NULL);
    }
    case KEEL_T_FLOAT:
        if (!keel_node_as_float(n, &v->as.f))
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected float, got %s%s", got, NULL);
        return KEEL_OK;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: {
        int w = keel_type_width(f->type);
        char want[48];
        snprintf(want, sizeof want, "%s (a sequence of %d numbers)", keel_type_name(f->type), w);
        if (n->kind != KEEL_NODE_SEQ || n->count != (size_t)w)
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected %s, got %s", want,
                        n->kind == KEEL_NODE_SEQ ? "a sequence of another length" : got);
        for (int i = 0; i < w; i++)
            if (!keel_node_as_float(&n->items[i], &v->as.v[i]))
                return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, &n->items[i],
                            "expected %s, got a non-number in it", want, NULL);
        return KEEL_OK;
    }
    case KEEL_T_ENUM:
        if (n->kind != KEEL_NODE_SCALAR)
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected a choice name, got %s%s",
                        got, NULL);
        for (size_t i = 0; i < f->choice_count; i++)
            if (!strcmp(f->choices[i], n->text)) {
                v->as.i = (int64_t)i;
                return KEEL_OK;
            }
        if (strict)
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "%s is not one of its choices%s",
                        quoted, NULL);
        *keep_default = true;
        fail(c, KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, f->key, n,
             "%s is not one of its choices; kept the default", quoted, NULL);
        return KEEL_OK;
    case KEEL_T_STRING:
        if (n->kind != KEEL_NODE_SCALAR)
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected string, got %s%s", got, NULL);
        v->as.s = n->text ? n->text : "";
        return KEEL_OK;
    case KEEL_T_ASSET: case KEEL_T_ENTITY:
        if (n->kind != KEEL_NODE_SCALAR)
            return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "expected a UUID or null, got %s%s",
                        got, NULL);
        if (keel_node_is_null(n)) {
            v->nil = true;
            return KEEL_OK;
        }
        if (!keel_uuid_parse(n->text, &v->as.u))
            return fail(c, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, f->key, n, "%s is not a canonical UUID%s", quoted,
                        NULL);
        v->nil = keel_uuid_is_nil(v->as.u);
        return KEEL_OK;
    default:
        return fail(c, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, f->key, n, "bad field type%s%s", NULL, NULL);
    }
}

/* Runs the kind's migrations on `*body` (a private copy) from `version` up to `to`. */
static keel_status migrate(const keel_kind_desc *k, keel_node **body, int version, const decode_ctx *c)
{
    for (int v = version + 1; v <= k->version; v++) {
        if (!k->migrate)
            return KEEL_OK;
        keel_diags tmp;
        keel_diags_init(&tmp);
        keel__callback_enter();
        keel_status st = k->migrate(*body, v, k->user, &tmp);
        keel__callback_leave();
        if (st && !tmp.errors)
            keel_error(&tmp, st, "", "%s: migration to version %d failed", k->key, v);
        for (size_t i = 0; i < tmp.count; i++)
            if (!tmp.items[i].file && c->file) {
                tmp.items[i].file = keel__strdup(c->file);
            }
        keel_diags_append(c->d, &tmp, c->path);
        if (st)
            return st;
        if (!*body || (*body)->kind != KEEL_NODE_MAP) {
            char *p = field_path(c, "");
            if (p[0] && p[strlen(p) - 1] == '.')
                p[strlen(p) - 1] = '\0';
            keel_diag_add(c->d, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, p, c->file, 0, 0,
                          "%s: migration to version %d did not leave a map", k->key, v);
            free(p);
            return KEEL_INVALID_ARGUMENT;
        }
    }
    return KEEL_OK;
}

keel_status keel__body_decode(keel_kind_id k, const keel_node *body, int version, bool strict,
                              void *record, const char *path, const char *file, keel_diags *d)
{
    const keel_kind_desc *K = keel_kind_describe(k);
    decode_ctx c = { K ? K->key : "?", path ? path : "", file, d };
    if (!K)
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_NOT_FOUND, c.path, file, 0, 0, "no kind with id %u",
                             (unsigned)k);
    if (version <= 0)
        version = K->version;
    if (version > K->version)
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_UNSUPPORTED, c.path, file, body ? body->line : 0,
                             body ? body->col : 0, "%s: version %d is newer than the declared version %d",
                             K->key, version, K->version);
    keel_node *empty = NULL;
    if (!body || keel_node_is_null(body))
        body = empty = keel_node_new_map(); /* `body:` with nothing: all defaults (after migrations) */
    if (body->kind != KEEL_NODE_MAP)
        return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, c.path, file, body->line, body->col,
                             "%s: a body must be a map of fields", K->key);

    keel_node *work = NULL;
    if (version < K->version && K->migrate) {
        work = keel_node_copy(body);
        keel_status st = migrate(K, &work, version, &c);
        if (st) {
            keel_node_free(work);
            keel_node_free(empty);
            return st;
        }
        body = work;
    }

    keel_status first = KEEL_OK;
    for (size_t i = 0; i < body->count; i++) {
        const keel_node *key = &body->items[2 * i], *val = &body->items[2 * i + 1];
        if (key->kind != KEEL_NODE_SCALAR) {
            keel_status st = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, c.path, file, key->line,
                                           key->col, "%s: a field name must be a scalar", K->key);
            if (!first)
                first = st;
            continue;
        }
        if (keel__node_has_nul(key)) {
            char *p = field_path(&c, key->text);
            keel_status st = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, p, file, key->line, key->col,
                                           "%s: a field name holds a NUL byte", K->key);
            free(p);
            if (!first)
                first = st;
            continue;
        }
        int f = keel_kind_field(k, key->text);
        if (f < 0) {
            char *p = field_path(&c, key->text);
            keel_diag_add(d, KEEL_SEV_WARNING, KEEL_NOT_FOUND, p, file, key->line, key->col,
                          "%s: field '%s' is no longer declared; skipped", K->key, key->text);
            free(p);
            continue;
        }
        const keel_field_desc *fd = &K->fields[f];
        keel_value v;
        bool keep;
        keel_status st = read_value(&c, fd, val, strict, &v, &keep);
        if (!st && !keep) {
            keel_diags tmp;
            keel_diags_init(&tmp);
            st = keel_field_check(k, f, &v, &tmp);
            /* Re-home the check's diagnostics at this body's path and position. */
            for (size_t j = 0; j < tmp.count; j++) {
                char *p = field_path(&c, fd->key);
                keel_diag_add(d, tmp.items[j].severity, tmp.items[j].code, p, file, val->line, val->col, "%s",
                              tmp.items[j].message);
                free(p);
            }
            keel_diags_free(&tmp);
            if (!st)
                keel__record_put(k, record, f, &v);
        }
        if (st && !first)
            first = st;
    }
    keel_node_free(work);
    keel_node_free(empty);
    return first;
}

keel_node *keel__body_encode(keel_kind_id k, const void *record, bool with_transient)
{
    const keel_kind_desc *K = keel_kind_describe(k);
    keel_node *map = keel_node_new_map();
    if (!K)
        return map;
    map->style = KEEL_STYLE_BLOCK;
    for (size_t i = 0; i < K->field_count; i++) {
        const keel_field_desc *f = &K->fields[i];
        if ((f->flags & KEEL_FIELD_TRANSIENT) && !with_transient)
            continue;
        keel_value v;
        keel__record_get(k, record, (int)i, &v);
        keel_node *n = keel__value_node(f->type, &v, f->type == KEEL_T_ENUM ? keel__value_choice(f, v.as.i) : NULL, false);
        keel_node_put(map, f->key, n);
    }
    return map;
}

size_t keel__body_size(const keel_node *n)
{
    if (n->kind == KEEL_NODE_SCALAR) return n->len + 1;
    size_t total = 2, items = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
    for (size_t i = 0; i < items; i++) total += keel__body_size(&n->items[i]);
    return total;
}

bool keel__record_body_bounded(keel_kind_id k)
{
    const keel__layout *L = keel__kind_layout(k);
    return !L || (!L->has_strings && L->body_most <= keel_limits_default().body_size);
}

keel_status keel__record_body_check(keel_kind_id k, const void *record, keel_diags *d)
{
    const keel__layout *L = keel__kind_layout(k);
    size_t limit = keel_limits_default().body_size;
    if (keel__record_body_bounded(k)) return KEEL_OK;
    const keel_kind_desc *K = keel_kind_describe(k);
    size_t most = L->body_most;
    for (size_t i = 0; i < K->field_count; i++) {
        if (K->fields[i].type != KEEL_T_STRING || (K->fields[i].flags & KEEL_FIELD_TRANSIENT)) continue;
        keel_value v;
        keel__record_get(k, record, (int)i, &v);
        most += v.as.s ? strlen(v.as.s) : 0;
    }
    if (most <= limit) return KEEL_OK;
    keel_node *body = keel__body_encode(k, record, false); /* near the limit: the exact size */
    size_t size = keel__body_size(body);
    keel_node_free(body);
    if (size <= limit) return KEEL_OK;
    return keel_error(d, KEEL_LIMIT_EXCEEDED, "", "%s: a body of %zu bytes is larger than the limit (%zu bytes)",
                      K->key, size, limit);
}

/* Depth counts the body map as 1. */
static const char *node_over(const keel_node *n, const keel_limits *lim, size_t depth, size_t max_depth)
{
    if (n->kind != KEEL_NODE_SCALAR && depth > max_depth) return "a body is nested deeper than the limit";
    if (n->kind == KEEL_NODE_SCALAR) return n->len > lim->string_length ? "a string is longer than the limit" : NULL;
    if (n->count > lim->collection_length) return "a collection is longer than the limit";
    size_t items = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
    for (size_t i = 0; i < items; i++) {
        const char *why = node_over(&n->items[i], lim, depth + 1, max_depth);
        if (why) return why;
    }
    return NULL;
}

const char *keel__body_over_limits(const keel_node *body)
{
    keel_limits lim = keel_limits_default();
    /* document, entities, an entity, its components, a component: the body is the 6th level */
    const char *why = node_over(body, &lim, 1, lim.nesting_depth - 5);
    if (!why && keel__body_size(body) > lim.body_size) why = "a body is larger than the limit";
    return why;
}

keel_status keel__unknown_body_check(const keel_node *body, keel_diags *d)
{
    const char *why = body ? keel__body_over_limits(body) : NULL;
    if (why) return keel_error(d, KEEL_LIMIT_EXCEEDED, "", "an unknown component: %s", why);
    return KEEL_OK;
}
