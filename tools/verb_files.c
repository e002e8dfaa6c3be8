/* verb_files.c — the verbs on scene and manifest files: check, fmt, cook, dump. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lua_host.h"

/* ---- asset manifests ---- */

bool keel_cli_is_manifest(const keel_cli *cli, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strcmp(base, "assets.yaml") == 0 || (cli->assets && strcmp(cli->assets, path) == 0);
}

/* The asset manifest for `scene`: --assets, else assets.yaml beside the scene
 * when present; NULL when none (malloc'd). */
static char *manifest_path(const keel_cli *cli, const char *scene)
{
    if (cli->assets) return strdup(cli->assets);
    return keel_assets_beside(scene);
}

/* The manifest last loaded for a scene: the next scene that uses the same one
 * (`keel check a.yaml b.yaml`) neither reads it again nor reports it twice. */
typedef struct manifest_cache {
    char *path;          /* NULL: none loaded yet */
    keel_assets *assets; /* NULL when it could not be read */
} manifest_cache;

static void manifest_cache_free(manifest_cache *m)
{
    free(m->path);
    keel_assets_free(m->assets);
    *m = (manifest_cache){ 0 };
}

/* Load options from the common options: --assets (or assets.yaml beside
 * `scene` when present), loaded through `m` (which owns it). Returns false
 * (after printing) when the manifest could not be read. */
static bool load_opts_for(const keel_cli *cli, const char *scene, keel_load_opts *o, manifest_cache *m,
                          bool strict)
{
    *o = keel_load_opts_default();
    o->strict = strict;
    char *manifest = manifest_path(cli, scene);
    if (!manifest) {
        o->assets = NULL;
        return true;
    }
    if (!m->path || strcmp(m->path, manifest) != 0) {
        manifest_cache_free(m);
        m->path = manifest;
        keel_diags d;
        keel_diags_init(&d);
        if (keel_assets_load(manifest, &m->assets, &d) != KEEL_OK) keel_cli_print_diags(&d, manifest);
        keel_diags_free(&d);
    } else {
        free(manifest);
    }
    o->assets = m->assets;
    return m->assets != NULL;
}

/* ---- shared by the verbs ---- */

/* A scene load (keel_scene_load of path, or keel_scene_parse of text) run as a call from the
 * program's Lua state, so the game's Lua kinds migrate and validate what is read exactly as
 * keel.load has them do (keel_lua_host_call). */
typedef struct in_lua {
    const char *path, *text;
    size_t len;
    const keel_load_opts *o;
    keel_world **w;
    keel_diags *d;
} in_lua;

static int run_load(void *ud)
{
    in_lua *l = ud;
    return (int)(l->text ? keel_scene_parse(l->text, l->len, l->o, l->w, l->d)
                         : keel_scene_load(l->path, l->o, l->w, l->d));
}

static keel_status load_in_lua(lua_State *L, const char *path, const char *text, size_t len,
                               const keel_load_opts *o, keel_world **w, keel_diags *d)
{
    in_lua l = { path, text, len, o, w, d };
    return (keel_status)keel_lua_host_call(L, run_load, &l);
}

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
    cli->scene = argv[0]; /* its nearest kinds/ */
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
    manifest_cache manifest = { 0 };
    for (int i = 0; i < n; i++) {
        if (keel_cli_is_manifest(cli, argv[i])) {
            code = worse(code, check_manifest(argv[i]));
            continue;
        }
        keel_load_opts o;
        if (!load_opts_for(cli, argv[i], &o, &manifest, strict)) {
            code = KEEL_EXIT_INPUT;
            continue;
        }
        keel_diags d;
        keel_diags_init(&d);
        keel_world *w = NULL;
        keel_status s = load_in_lua(L, argv[i], NULL, 0, &o, &w, &d); /* with keel_cli_progress's line */
        size_t errors = keel_cli_print_diags(&d, argv[i]);
        if (s != KEEL_OK || errors > 0) code = worse(code, status_exit(s));
        keel_world_free(w);
        keel_diags_free(&d);
    }
    manifest_cache_free(&manifest);
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
        if (s == KEEL_OK && keel_cli_is_save_text(old, oldlen)) { /* a save game's text (verb_savetext.c) */
            code = worse(code, keel_cli_fmt_save_text(argv[i], old, oldlen, check, &d));
        } else if (s == KEEL_OK && oldlen >= 8 && memcmp(old, "KEELCOOK", 8) == 0) {
            /* fmt must not turn a cooked scene into YAML in place */
            fprintf(stderr, "%s: error: InvalidArgument: a cooked scene is not formatted in place "
                    "(keel dump %s -o OUT.yaml writes its YAML)\n", argv[i], argv[i]);
            code = worse(code, KEEL_EXIT_INPUT);
        } else {
            keel_world *w = NULL;
            if (s == KEEL_OK) s = load_in_lua(L, argv[i], old, oldlen, &o, &w, &d);
            if (s == KEEL_OK) s = keel_scene_dump(w, &text, &len, &d);
            keel_world_free(w);
            if (s != KEEL_OK) {
                code = worse(code, status_exit(s));
            } else if (oldlen != len || memcmp(old, text, len) != 0) {
                if (check) {
                    /* what fmt would change, as a unified diff; the name alone without diffutils */
                    if (!keel_cli_print_diff(argv[i], old, oldlen, text, len))
                        printf("%s: not in canonical form (install diffutils to see the difference)\n", argv[i]);
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
    if (keel_cli_file_is_save_text(argv[0])) return keel_cli_cook_save_text(cli, argv[0], out);
    cli->scene = argv[0];
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;

    keel_load_opts o;
    manifest_cache manifest = { 0 };
    if (!load_opts_for(cli, argv[0], &o, &manifest, true)) {
        manifest_cache_free(&manifest);
        return KEEL_EXIT_INPUT;
    }
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    void *data = NULL;
    size_t len = 0;
    int code = KEEL_EXIT_OK;
    keel_status s = load_in_lua(L, argv[0], NULL, 0, &o, &w, &d); /* with keel_cli_progress's line */
    if (s == KEEL_OK) s = keel_cook(w, o.assets, &data, &len, &d);
    if (s == KEEL_OK) {
        s = keel_write_atomic(out, data, len, &d);
        if (s != KEEL_OK) code = KEEL_EXIT_USAGE;
        else
            printf("wrote %s: %zu entit%s, %zu bytes\n", out, keel_world_entity_count(w),
                   keel_world_entity_count(w) == 1 ? "y" : "ies", len);
    } else {
        code = status_exit(s);
    }
    keel_cli_print_diags(&d, argv[0]);
    free(data);
    keel_world_free(w);
    keel_diags_free(&d);
    manifest_cache_free(&manifest);
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
    if (keel_cli_file_is_slot(argv[0])) return keel_cli_dump_slot(cli, argv[0], out);
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;

    keel_load_opts o = keel_load_opts_default();
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    char *text = NULL;
    size_t len = 0;
    int code = KEEL_EXIT_OK;
    keel_status s = load_in_lua(L, argv[0], NULL, 0, &o, &w, &d);
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
