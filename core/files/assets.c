/* assets.c — the asset manifest (assets.yaml): uuid -> path and type. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "files/yaml_read.h"

typedef struct asset {
    keel_uuid uuid;
    char *path;
    char *type;
    int line, col; /* of the entry, for duplicate reports */
} asset;

struct keel_assets {
    asset *items; /* sorted by uuid */
    size_t count;
};

static int asset_cmp(const void *a, const void *b)
{
    return memcmp(((const asset *)a)->uuid.bytes, ((const asset *)b)->uuid.bytes, 16);
}

void keel_assets_free(keel_assets *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->count; i++) {
        free(a->items[i].path);
        free(a->items[i].type);
    }
    free(a->items);
    free(a);
}

/* A ParseError at node `n` of the manifest. */
static keel_status bad(keel_diags *d, const char *path, const char *file, const keel_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static keel_status bad(keel_diags *d, const char *path, const char *file, const keel_node *n, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, path, file, n ? n->line : 0, n ? n->col : 0, "%s", msg);
}

/* A required string entry of an asset record. */
static const char *str_key(const keel_node *rec, const char *key, const char *path, const char *file,
                           keel_diags *d, keel_status *st)
{
    const keel_node *v = keel_node_get(rec, key);
    if (!v || v->kind != KEEL_NODE_SCALAR || keel_node_is_null(v)) {
        char p[64];
        snprintf(p, sizeof p, "%s.%s", path, key);
        keel_status s = bad(d, p, file, v ? v : rec, "missing or non-string '%s'", key);
        if (!*st) *st = s;
        return NULL;
    }
    return v->text;
}

keel_status keel_assets_parse(const char *text, size_t len, const char *file, keel_assets **out, keel_diags *d)
{
    keel_node *doc = NULL;
    keel_status st = keel__yaml_parse(text, len, NULL, file, &doc, d);
    if (st) return st;
    const keel_node *list = doc->kind == KEEL_NODE_MAP ? keel_node_get(doc, "assets") : NULL;
    if (!list || list->kind != KEEL_NODE_SEQ) {
        st = bad(d, "assets", file, list ? list : doc,
                 "an asset manifest is a map with an 'assets' list");
        keel_node_free(doc);
        return st;
    }
    keel_assets *a = keel__xrealloc(NULL, sizeof *a);
    a->count = 0;
    a->items = list->count ? keel__xrealloc(NULL, list->count * sizeof *a->items) : NULL;
    for (size_t i = 0; i < list->count; i++) {
        const keel_node *rec = &list->items[i];
        char path[48];
        snprintf(path, sizeof path, "assets[%zu]", i);
        if (rec->kind != KEEL_NODE_MAP) {
            keel_status s = bad(d, path, file, rec, "an asset entry is a map of uuid, path, type");
            if (!st) st = s;
            continue;
        }
        const char *u = str_key(rec, "uuid", path, file, d, &st);
        const char *p = str_key(rec, "path", path, file, d, &st);
        const char *t = str_key(rec, "type", path, file, d, &st);
        if (!u || !p || !t) continue;
        keel_uuid uuid;
        if (!keel_uuid_parse(u, &uuid) || keel_uuid_is_nil(uuid)) {
            char pp[64];
            snprintf(pp, sizeof pp, "%s.uuid", path);
            keel_status s = bad(d, pp, file, keel_node_get(rec, "uuid"), "malformed asset uuid '%.64s'", u);
            if (!st) st = s;
            continue;
        }
        asset *it = &a->items[a->count++];
        it->uuid = uuid;
        it->path = keel__strdup(p);
        it->type = keel__strdup(t);
        it->line = rec->line;
        it->col = rec->col;
    }
    if (a->count > 1) qsort(a->items, a->count, sizeof *a->items, asset_cmp);
    for (size_t i = 1; i < a->count; i++) {
        if (asset_cmp(&a->items[i - 1], &a->items[i]) == 0) {
            char u[37];
            const asset *x = &a->items[i - 1], *y = &a->items[i];
            if (x->line > y->line) {
                const asset *t = x;
                x = y;
                y = t;
            }
            keel_uuid_format(y->uuid, u);
            keel_status s = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "assets", file, y->line, y->col,
                                          "duplicate asset uuid %s (first at line %d)", u, x->line);
            if (!st) st = s;
        }
    }
    keel_node_free(doc);
    if (st) {
        keel_assets_free(a);
        return st;
    }
    *out = a;
    return KEEL_OK;
}

keel_status keel_assets_load(const char *path, keel_assets **out, keel_diags *d)
{
    char *text = NULL;
    size_t len = 0;
    keel_limits lim = keel_limits_default();
    keel_status st = keel_read_file(path, lim.document_size, &text, &len, d);
    if (st) return st;
    st = keel_assets_parse(text, len, path, out, d);
    free(text);
    return st;
}

static const asset *find(const keel_assets *a, keel_uuid u)
{
    if (!a || !a->count) return NULL;
    asset key;
    key.uuid = u;
    return bsearch(&key, a->items, a->count, sizeof *a->items, asset_cmp);
}

bool keel_assets_has(const keel_assets *a, keel_uuid u) { return find(a, u) != NULL; }

const char *keel_assets_path(const keel_assets *a, keel_uuid u)
{
    const asset *it = find(a, u);
    return it ? it->path : NULL;
}

char *keel_assets_beside(const char *scene_path)
{
    if (!scene_path) return NULL;
    const char *slash = strrchr(scene_path, '/');
    size_t dirlen = slash ? (size_t)(slash - scene_path) + 1 : 0;
    char *beside = keel__xrealloc(NULL, dirlen + sizeof "assets.yaml");
    memcpy(beside, scene_path, dirlen);
    strcpy(beside + dirlen, "assets.yaml");
    struct stat st;
    if (strcmp(beside, scene_path) != 0 && stat(beside, &st) == 0 && S_ISREG(st.st_mode)) return beside;
    free(beside); /* a manifest is not its own manifest */
    return NULL;
}
