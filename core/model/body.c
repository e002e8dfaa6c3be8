/* body.c — component bodies (keel_node MAPs of field values by name) <-> records. */
#include "base/util.h"
#include "model/body.h"
#include "model/value.h"
#include "model/kind.h"
#include "model/record.h"

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
            KEEL_ERROR(&tmp, st, "", "%s: migration to version %d failed", k->key, v);
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
        keel__value_problem pb;
        keel_status st = keel__value_from_node(fd, val, strict, &v, &keep, &pb);
        if (pb.set) fail(&c, pb.sev, pb.code, fd->key, pb.at, pb.fmt, pb.a, pb.b);
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
            if (!st && fd->get) { /* loading runs set with the file's value, after the range check */
                st = keel__record_derived_set(k, NULL, (keel_comp){ 0, k, 0 }, record, f, &v, &tmp);
                keel__record_derive(k, record);
                for (size_t j = 0; st && j < tmp.count; j++) {
                    char *p = field_path(&c, fd->key);
                    keel_diag_add(d, tmp.items[j].severity, tmp.items[j].code, p, file, val->line, val->col, "%s",
                                  tmp.items[j].message);
                    free(p);
                }
            } else if (!st) {
                keel__record_put(k, record, f, &v);
            }
            keel_diags_free(&tmp);
        }
        if (st && !first)
            first = st;
    }
    keel_node_free(work);
    keel_node_free(empty);
    return first;
}

keel_node *keel__body_encode(keel_kind_id k, const void *record, unsigned skip)
{
    const keel_kind_desc *K = keel_kind_describe(k);
    keel_node *map = keel_node_new_map();
    if (!K)
        return map;
    map->style = KEEL_STYLE_BLOCK;
    for (size_t i = 0; i < K->field_count; i++) {
        const keel_field_desc *f = &K->fields[i];
        if (f->flags & skip)
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
    return !L || L->body_bounded;
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
    keel_node *body = keel__body_encode(k, record, KEEL_FIELD_TRANSIENT); /* near the limit: the exact size */
    size_t size = keel__body_size(body);
    keel_node_free(body);
    if (size <= limit) return KEEL_OK;
    return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "%s: a body of %zu bytes is larger than the limit (%zu bytes)",
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
    if (why) return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "an unknown component: %s", why);
    return KEEL_OK;
}
