/* verb_kinds.c — `keel kinds`: the registered kinds and their fields, as text or JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The listing is built whole, then written at once: a failed write is one
 * exit code rather than half a listing. */
typedef struct listing {
    char *p;
    size_t len, cap;
} listing;

/* Returns where the n new bytes go; keel treats OOM as fatal. */
static char *grow(listing *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) abort();
        b->p = p;
        b->cap = cap;
    }
    char *at = b->p + b->len;
    b->len += n;
    return at;
}

static void puts_(listing *b, const char *s)
{
    size_t n = strlen(s);
    if (n) memcpy(grow(b, n), s, n);
}

static void putf(listing *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(listing *b, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0) { /* written whole (a long kind key or display name is not cut at a fixed size) */
        vsnprintf(grow(b, (size_t)n + 1), (size_t)n + 1, fmt, aq);
        b->len--; /* not the NUL */
    }
    va_end(aq);
}

/* Shortest text that reads back to the same double; "null" when not finite (JSON has no NaN). */
static void put_number(listing *b, double v)
{
    char tmp[64];
    if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
        puts_(b, "null");
        return;
    }
    keel_format_double(v, tmp, sizeof tmp);
    puts_(b, tmp);
}

static void put_json_string(listing *b, const char *s)
{
    puts_(b, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': puts_(b, "\\\""); break;
        case '\\': puts_(b, "\\\\"); break;
        case '\n': puts_(b, "\\n"); break;
        case '\r': puts_(b, "\\r"); break;
        case '\t': puts_(b, "\\t"); break;
        default:
            if (*p < 0x20) putf(b, "\\u%04x", *p);
            else *grow(b, 1) = (char)*p;
        }
    }
    puts_(b, "\"");
}

static void put_key_list(listing *b, const char *const *keys, size_t n, bool json)
{
    if (json) puts_(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) puts_(b, json ? ", " : " ");
        if (json) put_json_string(b, keys[i]);
        else puts_(b, keys[i]);
    }
    if (json) puts_(b, "]");
    else if (n == 0) puts_(b, "-");
}

/* A field's default, in JSON (also readable as text). */
static void put_default(listing *b, const keel_field_desc *f)
{
    if (!f->has_default) {
        puts_(b, "null");
        return;
    }
    const keel_value *v = &f->def;
    switch (f->type) {
    case KEEL_T_BOOL: puts_(b, v->as.b ? "true" : "false"); break;
    case KEEL_T_INT: putf(b, "%lld", (long long)v->as.i); break;
    case KEEL_T_FLOAT: put_number(b, v->as.f); break;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: {
        int w = keel_type_width(f->type);
        puts_(b, "[");
        for (int i = 0; i < w; i++) {
            if (i) puts_(b, ", ");
            put_number(b, v->as.v[i]);
        }
        puts_(b, "]");
        break;
    }
    case KEEL_T_ENUM:
        if (v->as.i >= 0 && (size_t)v->as.i < f->choice_count) put_json_string(b, f->choices[v->as.i]);
        else puts_(b, "null");
        break;
    case KEEL_T_STRING: put_json_string(b, v->as.s); break;
    case KEEL_T_ASSET: case KEEL_T_ENTITY:
        if (v->nil || keel_uuid_is_nil(v->as.u)) {
            puts_(b, "null");
        } else {
            char u[37];
            keel_uuid_format(v->as.u, u);
            put_json_string(b, u);
        }
        break;
    default: puts_(b, "null");
    }
}

static const char *const kind_flag_names[] = { "nosave", "editor_only", "root_only", "not_on_root" };

static void json_kind(listing *b, const keel_kind_desc *k)
{
    puts_(b, "  {\"key\": ");
    put_json_string(b, k->key);
    puts_(b, ", \"display\": ");
    put_json_string(b, k->display);
    puts_(b, ", \"category\": ");
    put_json_string(b, k->category);
    putf(b, ", \"version\": %d, \"multiplicity\": \"%s\", \"max\": ", k->version < 1 ? 1 : k->version,
         k->multiplicity == KEEL_MANY ? "many" : "one");
    if (k->multiplicity == KEEL_MANY && k->max > 0) putf(b, "%u", (unsigned)k->max);
    else puts_(b, "null");
    puts_(b, ", \"requires\": ");
    put_key_list(b, k->requires, k->requires_count, true);
    puts_(b, ", \"rejects\": ");
    put_key_list(b, k->rejects, k->rejects_count, true);
    putf(b, ", \"builtin\": %s, \"flags\": [", k->builtin ? "true" : "false");
    bool first = true;
    for (size_t i = 0; i < sizeof kind_flag_names / sizeof kind_flag_names[0]; i++) {
        if (!(k->flags & (1u << i))) continue;
        if (!first) puts_(b, ", ");
        put_json_string(b, kind_flag_names[i]);
        first = false;
    }
    puts_(b, "]");
    uint32_t sync = k->sync_interval;
    for (size_t i = 0; i < k->field_count && !sync; i++)
        if (k->fields[i].flags & KEEL_FIELD_SYNC) sync = 1;
    if (sync || k->sync_radius > 0) { /* only when synced */
        putf(b, ", \"sync\": {\"interval\": %u", (unsigned)(sync ? sync : 1));
        if (k->sync_radius > 0) {
            puts_(b, ", \"radius\": ");
            put_number(b, k->sync_radius);
        }
        puts_(b, "}");
    }
    puts_(b, ", \"tooltip\": ");
    if (k->tooltip) put_json_string(b, k->tooltip);
    else puts_(b, "null");
    if (k->no_summon) puts_(b, ", \"summon\": false");
    puts_(b, ",\n   \"fields\": [");
    for (size_t i = 0; i < k->field_count; i++) {
        const keel_field_desc *f = &k->fields[i];
        puts_(b, i ? ",\n     {" : "\n     {");
        puts_(b, "\"key\": ");
        put_json_string(b, f->key);
        puts_(b, ", \"type\": ");
        put_json_string(b, keel_type_name(f->type));
        puts_(b, ", \"default\": ");
        put_default(b, f);
        puts_(b, ", \"min\": ");
        if (f->has_min) put_number(b, f->min);
        else puts_(b, "null");
        puts_(b, ", \"max\": ");
        if (f->has_max) put_number(b, f->max);
        else puts_(b, "null");
        if (f->min_exclusive) puts_(b, ", \"min_exclusive\": true");
        if (f->max_exclusive) puts_(b, ", \"max_exclusive\": true");
        puts_(b, ", \"choices\": ");
        if (f->type == KEEL_T_ENUM) put_key_list(b, f->choices, f->choice_count, true);
        else puts_(b, "null");
        puts_(b, ", \"tooltip\": ");
        if (f->tooltip) put_json_string(b, f->tooltip);
        else puts_(b, "null");
        if (f->get) puts_(b, ", \"derived\": true");
        putf(b, ", \"transient\": %s, \"readonly\": %s, \"hidden\": %s%s%s}",
             f->flags & KEEL_FIELD_TRANSIENT ? "true" : "false",
             f->flags & KEEL_FIELD_READONLY ? "true" : "false",
             f->flags & KEEL_FIELD_HIDDEN ? "true" : "false",
             f->flags & KEEL_FIELD_RUNTIME ? ", \"runtime\": true" : "", /* only when set, as min_exclusive */
             f->flags & KEEL_FIELD_SYNC ? ", \"sync\": true" : "");
    }
    puts_(b, k->field_count ? "\n   ]}" : "]}");
}

static void text_kind(listing *b, const keel_kind_desc *k)
{
    putf(b, "%s  %s (%s)  v%d  %s", k->key, k->display ? k->display : "", k->category ? k->category : "",
         k->version < 1 ? 1 : k->version, k->multiplicity == KEEL_MANY ? "many" : "one");
    if (k->multiplicity == KEEL_MANY && k->max > 0) putf(b, " (max %u)", (unsigned)k->max);
    puts_(b, k->builtin ? "  builtin" : "  lua");
    for (size_t i = 0; i < sizeof kind_flag_names / sizeof kind_flag_names[0]; i++)
        if (k->flags & (1u << i)) putf(b, "  %s", kind_flag_names[i]);
    puts_(b, "\n");
    if (k->tooltip) putf(b, "  -- %s\n", k->tooltip);
    if (k->requires_count) {
        puts_(b, "  requires: ");
        put_key_list(b, k->requires, k->requires_count, false);
        puts_(b, "\n");
    }
    if (k->rejects_count) {
        puts_(b, "  rejects: ");
        put_key_list(b, k->rejects, k->rejects_count, false);
        puts_(b, "\n");
    }
    for (size_t i = 0; i < k->field_count; i++) {
        const keel_field_desc *f = &k->fields[i];
        putf(b, "  %-16s %-7s = ", f->key, keel_type_name(f->type));
        put_default(b, f);
        if (f->has_min) {
            puts_(b, f->min_exclusive ? "  > " : "  >= ");
            put_number(b, f->min);
        }
        if (f->has_max) {
            puts_(b, f->max_exclusive ? "  < " : "  <= ");
            put_number(b, f->max);
        }
        if (f->type == KEEL_T_ENUM) {
            puts_(b, "  {");
            put_key_list(b, f->choices, f->choice_count, false);
            puts_(b, "}");
        }
        if (f->flags & KEEL_FIELD_TRANSIENT) puts_(b, "  transient");
        if (f->flags & KEEL_FIELD_READONLY) puts_(b, "  readonly");
        if (f->flags & KEEL_FIELD_HIDDEN) puts_(b, "  hidden");
        if (f->flags & KEEL_FIELD_RUNTIME) puts_(b, "  runtime");
        if (f->flags & KEEL_FIELD_SYNC) puts_(b, "  sync");
        if (f->get) puts_(b, "  derived");
        if (f->tooltip) putf(b, "  -- %s", f->tooltip);
        puts_(b, "\n");
    }
}

/* A tooltip as LuaLS comment text: one line (newlines would end the comment). */
static void put_comment(listing *b, const char *s)
{
    for (; s && *s; s++) {
        char c = *s == '\n' || *s == '\r' ? ' ' : *s;
        grow(b, 1)[0] = c;
    }
}

static const char *lua_type_of(keel_type t)
{
    switch (t) {
    case KEEL_T_BOOL: return "boolean";
    case KEEL_T_INT: return "integer";
    case KEEL_T_FLOAT: return "number";
    case KEEL_T_ENUM:
    case KEEL_T_STRING:
    case KEEL_T_ASSET: return "string";
    case KEEL_T_ENTITY: return "KeelEntity?";
    default: return "number[]";
    }
}

/* LuaLS stubs: a class per kind (the key with ':' as '.'), a field per field, tooltips as comments. */
static void meta_kind(listing *b, const keel_kind_desc *k)
{
    puts_(b, "\n");
    if (k->tooltip) {
        puts_(b, "---");
        put_comment(b, k->tooltip);
        puts_(b, "\n");
    }
    puts_(b, "---@class ");
    for (const char *p = k->key; *p; p++) grow(b, 1)[0] = *p == ':' ? '.' : *p;
    puts_(b, " : KeelComponent\n");
    for (size_t i = 0; i < k->field_count; i++) {
        const keel_field_desc *f = &k->fields[i];
        putf(b, "---@field %s ", f->key);
        if (f->type == KEEL_T_ENUM) {
            for (size_t c = 0; c < f->choice_count; c++) {
                if (c) puts_(b, "|");
                put_json_string(b, f->choices[c]);
            }
        } else {
            puts_(b, lua_type_of(f->type));
        }
        puts_(b, " # ");
        puts_(b, keel_type_name(f->type));
        if (f->tooltip) {
            puts_(b, ": ");
            put_comment(b, f->tooltip);
        }
        puts_(b, "\n");
    }
}

int keel_cli_kinds(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    bool json = false, meta = false;
    const keel_cli_opt opts[] = { { "--json", NULL, &json }, { "--meta", NULL, &meta } };
    int n = keel_cli_parse(cli, argc, argv, opts, 2);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n > 0) {
        keel_cli_usage_error(cli, "kinds: unexpected argument %s", argv[0]);
        return KEEL_EXIT_USAGE;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;

    listing b = { 0 };
    size_t count = keel_kind_count();
    if (json && meta) {
        keel_cli_usage_error(cli, "kinds: --json and --meta are two outputs: give one");
        return KEEL_EXIT_USAGE;
    }
    if (meta) puts_(&b, "---@meta keel_kinds\n-- LuaLS stubs of the registered kinds (keel kinds --meta).\n");
    if (json) puts_(&b, "[\n");
    for (size_t i = 0; i < count; i++) {
        const keel_kind_desc *k = keel_kind_describe(keel_kind_at(i));
        if (!k) continue;
        if (meta) {
            meta_kind(&b, k);
        } else if (json) {
            json_kind(&b, k);
            puts_(&b, i + 1 < count ? ",\n" : "\n");
        } else {
            if (i) puts_(&b, "\n");
            text_kind(&b, k);
        }
    }
    if (json) puts_(&b, "]\n");
    int code = KEEL_EXIT_OK;
    if (b.len && (fwrite(b.p, 1, b.len, stdout) != b.len || fflush(stdout) != 0)) code = KEEL_EXIT_USAGE;
    free(b.p);
    return code;
}
