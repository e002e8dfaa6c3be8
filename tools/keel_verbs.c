/* keel_verbs.c — the verbs written against the C API: check, fmt, cook, dump, kinds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h" /* keel__buf */
#include "cli.h"

/* A load that failed: a file that cannot be read is the environment's problem, not the input's. */
static int status_exit(keel_status s)
{
    return s == KEEL_IO_ERROR ? KEEL_EXIT_USAGE : KEEL_EXIT_INPUT;
}

/* Validates a manifest; returns an exit code. */
static int check_manifest(const char *path)
{
    keel_diags d;
    keel_diags_init(&d);
    keel_assets *a = NULL;
    keel_status s = keel_assets_load(path, &a, &d);
    keel_cli_print_diags(&d, path);
    keel_diags_free(&d);
    keel_assets_free(a);
    return s == KEEL_OK ? KEEL_EXIT_OK : status_exit(s);
}

static int worse(int code, int next)
{
    if (next == KEEL_EXIT_OK) return code;
    /* "the input has errors" outranks "could not read one file" */
    if (code == KEEL_EXIT_INPUT || next == KEEL_EXIT_INPUT) return KEEL_EXIT_INPUT;
    return next;
}

/* The start of check and fmt: the verb's one flag parsed, at least one FILE,
 * the kinds loaded. Returns the FILE count, or 0 with *code the exit code. */
static int files_verb_start(lua_State *L, keel_cli *cli, int argc, char **argv,
                            const keel_cli_opt *flag, const char *verb, int *code)
{
    *code = KEEL_EXIT_USAGE;
    int n = keel_cli_parse(cli, argc, argv, flag, 1);
    if (n < 0) return 0;
    if (n == 0) {
        keel_cli_usage_error(cli, "%s: no FILE given", verb);
        return 0;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) {
        *code = rc;
        return 0;
    }
    *code = KEEL_EXIT_OK;
    return n;
}

/* ---- check ---- */

int keel_cli_check(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    bool strict = false;
    const keel_cli_opt opt = { "--strict", NULL, &strict };
    int code;
    int n = files_verb_start(L, cli, argc, argv, &opt, "check", &code);
    keel_cli_assets manifest = { 0 };
    for (int i = 0; i < n; i++) {
        if (keel_cli_is_manifest(cli, argv[i])) {
            code = worse(code, check_manifest(argv[i]));
            continue;
        }
        keel_load_opts o;
        if (!keel_cli_load_opts(cli, argv[i], &o, &manifest, strict)) {
            code = KEEL_EXIT_INPUT;
            continue;
        }
        keel_diags d;
        keel_diags_init(&d);
        keel_world *w = NULL;
        keel_status s = keel_scene_load(argv[i], &o, &w, &d);
        size_t errors = keel_cli_print_diags(&d, argv[i]);
        if (s != KEEL_OK || errors > 0) code = worse(code, status_exit(s));
        keel_world_free(w);
        keel_diags_free(&d);
    }
    keel_cli_assets_free(&manifest);
    return code;
}

/* ---- fmt ---- */

int keel_cli_fmt(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    bool check = false;
    const keel_cli_opt opt = { "--check", NULL, &check };
    int code;
    int n = files_verb_start(L, cli, argc, argv, &opt, "fmt", &code);
    for (int i = 0; i < n; i++) {
        /* A manifest has no canonical writer: it is checked and left as written. */
        if (keel_cli_is_manifest(cli, argv[i])) {
            code = worse(code, check_manifest(argv[i]));
            continue;
        }
        /* Read once: the cooked check, the parse and the comparison all use these bytes. */
        keel_load_opts o = keel_load_opts_default();
        o.file = argv[i];
        keel_diags d;
        keel_diags_init(&d);
        char *old = NULL, *text = NULL;
        size_t oldlen = 0, len = 0;
        keel_status s = keel_read_file(argv[i], o.limits.document_size, &old, &oldlen, &d);
        if (s == KEEL_OK && oldlen >= 8 && memcmp(old, "KEELCOOK", 8) == 0) {
            /* fmt must not turn a cooked scene into YAML in place */
            fprintf(stderr, "%s: error: InvalidArgument: a cooked scene is not formatted in place "
                    "(keel dump %s -o OUT.yaml writes its YAML)\n", argv[i], argv[i]);
            code = worse(code, KEEL_EXIT_INPUT);
        } else {
            keel_world *w = NULL;
            if (s == KEEL_OK) s = keel_scene_parse(old, oldlen, &o, &w, &d);
            if (s == KEEL_OK) s = keel_scene_dump(w, &text, &len, &d);
            keel_world_free(w);
            if (s != KEEL_OK) {
                code = worse(code, status_exit(s));
            } else if (oldlen != len || memcmp(old, text, len) != 0) {
                if (check) {
                    printf("%s\n", argv[i]);
                    code = KEEL_EXIT_INPUT;
                } else if (keel_write_atomic(argv[i], text, len, &d) != KEEL_OK) {
                    code = worse(code, KEEL_EXIT_USAGE);
                }
            }
        }
        keel_cli_print_diags(&d, argv[i]);
        keel_diags_free(&d);
        free(old);
        free(text);
    }
    return code;
}

/* ---- cook and dump ---- */

int keel_cli_cook(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    const char *out = NULL;
    const keel_cli_opt opts[] = { { "-o", &out, NULL }, { "--output", &out, NULL } };
    int n = keel_cli_parse(cli, argc, argv, opts, 2);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1 || !out) {
        keel_cli_usage_error(cli, "cook: expected SCENE -o OUT.keelc");
        return KEEL_EXIT_USAGE;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;

    keel_load_opts o;
    keel_cli_assets manifest = { 0 };
    if (!keel_cli_load_opts(cli, argv[0], &o, &manifest, true)) {
        keel_cli_assets_free(&manifest);
        return KEEL_EXIT_INPUT;
    }
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    void *data = NULL;
    size_t len = 0;
    int code = KEEL_EXIT_OK;
    keel_status s = keel_scene_load(argv[0], &o, &w, &d);
    if (s == KEEL_OK) s = keel_cook(w, o.assets, &data, &len, &d);
    if (s == KEEL_OK) {
        s = keel_write_atomic(out, data, len, &d);
        if (s != KEEL_OK) code = KEEL_EXIT_USAGE;
    } else {
        code = status_exit(s);
    }
    keel_cli_print_diags(&d, argv[0]);
    free(data);
    keel_world_free(w);
    keel_diags_free(&d);
    keel_cli_assets_free(&manifest);
    return code;
}

int keel_cli_dump(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    const char *out = NULL;
    const keel_cli_opt opts[] = { { "-o", &out, NULL }, { "--output", &out, NULL } };
    int n = keel_cli_parse(cli, argc, argv, opts, 2);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1) {
        keel_cli_usage_error(cli, "dump: expected one FILE.keelc");
        return KEEL_EXIT_USAGE;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;

    keel_load_opts o = keel_load_opts_default();
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    char *text = NULL;
    size_t len = 0;
    int code = KEEL_EXIT_OK;
    keel_status s = keel_scene_load(argv[0], &o, &w, &d);
    if (s == KEEL_OK) s = keel_scene_dump(w, &text, &len, &d);
    if (s != KEEL_OK) {
        code = status_exit(s);
    } else if (out) {
        if (keel_write_atomic(out, text, len, &d) != KEEL_OK) code = KEEL_EXIT_USAGE;
    } else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
        fprintf(stderr, "%s: dump: cannot write to standard output\n", cli->progname);
        code = KEEL_EXIT_USAGE;
    }
    keel_cli_print_diags(&d, argv[0]);
    free(text);
    keel_world_free(w);
    keel_diags_free(&d);
    return code;
}

/* ---- kinds ---- */

/* The JSON and text listings are built in a keel__buf (core/bytes.c). */
static void puts_(keel__buf *b, const char *s) { keel__buf_bytes(b, s, strlen(s)); }

static void putf(keel__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(keel__buf *b, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0) { /* written whole (a long kind key or display name is not cut at a fixed size) */
        vsnprintf((char *)keel__buf_grow(b, (size_t)n + 1), (size_t)n + 1, fmt, aq);
        b->len--; /* not the NUL */
    }
    va_end(aq);
}

/* Shortest text that reads back to the same double; "null" when not finite (JSON has no NaN). */
static void put_number(keel__buf *b, double v)
{
    char tmp[64];
    if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
        puts_(b, "null");
        return;
    }
    keel_format_double(v, tmp, sizeof tmp);
    puts_(b, tmp);
}

static void put_json_string(keel__buf *b, const char *s)
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
            else keel__buf_u8(b, *p);
        }
    }
    puts_(b, "\"");
}

static void put_key_list(keel__buf *b, const char *const *keys, size_t n, bool json)
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
static void put_default(keel__buf *b, const keel_field_desc *f)
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

static void json_kind(keel__buf *b, const keel_kind_desc *k)
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
    puts_(b, "],\n   \"fields\": [");
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
        putf(b, ", \"transient\": %s, \"readonly\": %s, \"hidden\": %s}",
             f->flags & KEEL_FIELD_TRANSIENT ? "true" : "false",
             f->flags & KEEL_FIELD_READONLY ? "true" : "false",
             f->flags & KEEL_FIELD_HIDDEN ? "true" : "false");
    }
    puts_(b, k->field_count ? "\n   ]}" : "]}");
}

static void text_kind(keel__buf *b, const keel_kind_desc *k)
{
    putf(b, "%s  %s (%s)  v%d  %s", k->key, k->display ? k->display : "", k->category ? k->category : "",
         k->version < 1 ? 1 : k->version, k->multiplicity == KEEL_MANY ? "many" : "one");
    if (k->multiplicity == KEEL_MANY && k->max > 0) putf(b, " (max %u)", (unsigned)k->max);
    puts_(b, k->builtin ? "  builtin" : "  lua");
    for (size_t i = 0; i < sizeof kind_flag_names / sizeof kind_flag_names[0]; i++)
        if (k->flags & (1u << i)) putf(b, "  %s", kind_flag_names[i]);
    puts_(b, "\n");
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
        puts_(b, "\n");
    }
}

int keel_cli_kinds(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    bool json = false;
    const keel_cli_opt opts[] = { { "--json", NULL, &json } };
    int n = keel_cli_parse(cli, argc, argv, opts, 1);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n > 0) {
        keel_cli_usage_error(cli, "kinds: unexpected argument %s", argv[0]);
        return KEEL_EXIT_USAGE;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;

    keel__buf b = { 0 };
    size_t count = keel_kind_count();
    if (json) puts_(&b, "[\n");
    for (size_t i = 0; i < count; i++) {
        const keel_kind_desc *k = keel_kind_describe(keel_kind_at(i));
        if (!k) continue;
        if (json) {
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
