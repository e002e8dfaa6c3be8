/* keel.c — the `keel` program: common options, kinds setup, diagnostics, verb dispatch, protected main. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "cli.h"

static const char *const usage_text =
    "usage: keel                                  a REPL with an empty world bound to `world`\n"
    "       keel SCRIPT.lua [ARGS...]             run a Lua script (`arg` set, `require \"keel\"` available)\n"
    "       keel repl [SCENE]                     REPL with SCENE loaded as `world`\n"
    "       keel run [SCENE] [--frames N] [--dt S] [--save OUT] [--play] [--profile] [--record FILE]\n"
    "       keel replay FILE [--to FRAME] [--verify] [--serve [PORT]]\n"
    "                                             run gameplay headless (default: the bundled demo)\n"
    "       keel run SCENE --serve [PORT] [--bind ADDR]   run it and serve the live channel (default port 27760)\n"
    "       keel run [SCENE] --host [PORT] [--bind ADDR]  host its world to keel.net clients (default port 27761)\n"
    "       keel run --connect ADDR:PORT [--name NAME]  mirror a host's world, print it once a second\n"
    "       keel serve SCENE [--port N] [--bind ADDR]     serve a paused world (the inspector at its URL)\n"
    "       keel check FILE... [--strict]         validate; FILE:LINE:COL: error: CODE: message\n"
    "       keel fmt FILE... [--check]            rewrite in canonical form; --check only reports\n"
    "       keel cook SCENE -o OUT.keelc          build the cooked binary\n"
    "       keel dump FILE.keelc [-o OUT]         print it back as canonical YAML\n"
    "       keel kinds [--json|--meta]            list registered kinds and their fields\n"
    "       keel merge BASE OURS THEIRS [-o OUT]  3-way merge of scenes as data (a git merge driver)\n"
    "       keel merge --install [PATTERN...]     set this git repository up to use it\n"
    "       keel merge --take ours|theirs FILE [PATH...]   resolve a merged scene's conflicts\n"
    "       keel mcp SCENE                        the live channel as MCP tools on stdin/stdout\n"
    "       keel uuid [N]                         print N (default 1) fresh v4 UUIDs\n"
    "       keel new NAME                         a project scaffold in NAME/\n"
    "       keel VERB --help                      what the verb does\n";

static const char *const common_text =
    "common: --kinds DIR (repeatable; default: the bundled lua/kinds, ./kinds and the nearest\n"
    "          kinds/ from the scene's folder upward, each when present)\n"
    "        --assets FILE (default: assets.yaml beside the scene)\n"
    "exit codes: 0 ok, 1 the input has errors, 2 usage or environment\n";

/* `keel VERB --help`, and what a usage error in that verb prints: the verb's
 * own lines rather than the whole list. */
static const struct { const char *verb, *text; } verb_help[] = {
    { "repl",
      "usage: keel repl [SCENE]\n"
      "  A Lua REPL with SCENE (else an empty world \"untitled\") bound to `world`.\n"
      "  Line editing, history (~/.keel_history), tab completion, =expr; results print\n"
      "  readably; help() lists where to start. reload() re-runs the kind files that\n"
      "  changed. ctrl-c drops the line or stops a Lua loop, ctrl-d quits. Piped input\n"
      "  runs without prompts; keel exits 1 at its end if a line failed.\n" },
    { "run",
      "usage: keel run [SCENE] [--frames N] [--dt S] [--save OUT] [--play] [--profile]\n"
      "       keel run [SCENE] --record FILE [--keyframe-every N] [--frames N] [--dt S]\n"
      "       keel run [SCENE] --serve [PORT] [--bind ADDR] [--frames N] [--dt S]\n"
      "       keel run [SCENE] --host [PORT] [--bind ADDR] [--frames N] [--dt S]\n"
      "       keel run --connect ADDR:PORT [--name NAME] [--frames N] [--dt S]\n"
      "  Runs gameplay headless: SCENE (default: the bundled demo) for N frames\n"
      "  (default 600) of S seconds (default 1/60), then prints frames, entities,\n"
      "  ms per frame and callback errors; --save writes the world to OUT after.\n"
      "  --play runs in play mode and says whether stop put the world back\n"
      "  identical to the scene as loaded.\n"
      "  --profile prints, at the end, the ten costliest systems and kind hooks (mean\n"
      "  and max ms per frame, calls) and the frame time's mean, p50, p95 and max.\n"
      "  --autosave SECONDS PATH writes a save-game slot to PATH every SECONDS of world\n"
      "  time (keel.persist.save_async against the scene as loaded); a failed one is\n"
      "  printed and the run goes on.\n"
      "  Exits 1 when a callback failed. --serve runs in real time (until ctrl-c,\n"
      "  or N frames) and serves the live channel as `keel serve` does.\n"
      "  --host serves the world to keel.net clients over UDP (default port 27761)\n"
      "  on every address, or on ADDR only with --bind (the first line says which);\n"
      "  --connect mirrors a host's world as client NAME and prints it once a second.\n"
      "  --watch (with or without --serve) polls SCENE between frames: an edit on disk\n"
      "  is applied in place, merged with live edits, or printed as conflicts.\n" },
    { "replay",
      "usage: keel replay FILE [--to FRAME] [--verify] [--serve [PORT]] [--bind ADDR]\n"
      "  Re-simulates a recording (keel run --record FILE) to FRAME (default: its end),\n"
      "  printing a line per 1,000 frames and the final state's hash. --verify compares\n"
      "  every frame's state hash with the recorded one: the first that differs is\n"
      "  reported as Diverged (frame, components, values) and exits 1. --serve opens\n"
      "  the replay in the inspector (its timeline: replay.* channel methods).\n" },
    { "serve",
      "usage: keel serve SCENE [--port N] [--bind ADDR] [--watch]\n"
      "  Loads SCENE paused and serves the live channel on 127.0.0.1:N (default 27760;\n"
      "  0 picks a free port): the inspector page at the printed URL (its #token=\n"
      "  fragment is the access token), JSON-RPC at /rpc, events at /events.\n"
      "  Nothing steps until a client asks (world.step, world.resume). --bind ADDR\n"
      "  listens on another address (said on stderr). ctrl-c stops. --watch applies\n"
      "  edits of SCENE on disk (conflicts with live edits: SSE `conflict`, world.resolve).\n" },
    { "check",
      "usage: keel check FILE... [--strict]\n"
      "  Validates scenes and assets.yaml manifests; one line per diagnostic:\n"
      "  FILE:LINE:COL: error: CODE: message (at PATH). --strict makes the warnings\n"
      "  about enum choices and assets errors. Exits 1 when any file has an error.\n" },
    { "fmt",
      "usage: keel fmt FILE... [--check]\n"
      "  Rewrites each scene in canonical form (atomically, only when the bytes\n"
      "  differ); manifests are checked, not rewritten. --check writes nothing,\n"
      "  prints a unified diff of what fmt would change (`diff -u`, diffutils) and\n"
      "  exits 1 when a file is not canonical. A save game's text (keel_save:) is\n"
      "  kept canonical the same way.\n" },
    { "cook",
      "usage: keel cook SCENE -o OUT.keelc\n"
      "  Builds the cooked binary scene and prints `wrote OUT: N entities, B bytes`.\n"
      "  Refuses unknown kinds, unresolved entity references and assets missing\n"
      "  from the manifest. A save game's text (keel_save:, from `keel dump SLOT`)\n"
      "  cooks back to its slot file, byte for byte: keel cook SLOT.yaml -o SLOT.save\n" },
    { "dump",
      "usage: keel dump FILE.keelc [-o OUT]\n"
      "  Prints a cooked scene back as canonical YAML (to OUT with -o). A save-game\n"
      "  slot (keel.persist.save's file) prints as its text: details, spawned,\n"
      "  destroyed and changed entities.\n" },
    { "kinds",
      "usage: keel kinds [--json|--meta]\n"
      "  Lists the registered kinds (built-in, the kinds directories') with their\n"
      "  fields, defaults and bounds; --json prints them for tools, --meta as LuaLS\n"
      "  stubs (a class per kind, tooltips as comments).\n" },
    { "merge",
      "usage: keel merge BASE OURS THEIRS [-o OUT]\n"
      "       keel merge --install [PATTERN...]\n"
      "       keel merge --take ours|theirs FILE [PATH...]\n"
      "  Merges three versions of a scene as data (git's %O %A %B; OUT defaults to OURS):\n"
      "  entities by UUID, components by (kind, slot), fields by name. On conflict OUT\n"
      "  holds ours' value at each plus a `conflicts:` list, and keel exits 1. Files\n"
      "  without a scene header (keel:, scene:) are merged as text by git merge-file.\n"
      "  --install sets merge.keel.* in the git config and PATTERN merge=keel\n"
      "  (default *.yaml) in .gitattributes. --take resolves the listed conflicts at\n"
      "  PATH (all by default).\n"
      "  Exits 2 when a side does not parse (OURS untouched).\n" },
    { "mcp",
      "usage: keel mcp SCENE\n"
      "  Serves SCENE, paused, to an AI agent over the Model Context Protocol: JSON-RPC\n"
      "  lines on stdin/stdout (initialize, tools/list, tools/call). One tool per live\n"
      "  channel method, named with _ for . (object_list, component_set...), each with a\n"
      "  JSON Schema of its params; component_set's is built from the kinds' fields.\n"
      "  A recording (FILE.keelrec) is served as its replay: replay_info, replay_seek,\n"
      "  replay_step, replay_branch reach any frame and take control there.\n" },
    { "uuid",
      "usage: keel uuid [N]\n"
      "  Prints N (default 1) fresh version-4 UUIDs, one a line, for entities\n"
      "  written by hand.\n" },
    { "new",
      "usage: keel new NAME\n"
      "  Makes the project NAME/: kinds/ (an example kind and system),\n"
      "  scenes/main.yaml, spec/ (a passing spec), .busted (busted runs under keel),\n"
      "  .gitattributes (*.yaml merge=keel) and a README with the commands.\n" },
};

/* The verb being run, for its usage errors; NULL before dispatch. */
static const char *current_verb;

static const char *help_of(const char *verb)
{
    for (size_t i = 0; verb && i < sizeof verb_help / sizeof verb_help[0]; i++)
        if (strcmp(verb_help[i].verb, verb) == 0) return verb_help[i].text;
    return NULL;
}

static void print_usage(FILE *f, const char *verb)
{
    const char *text = help_of(verb);
    fputs(text ? text : usage_text, f);
    fputs(common_text, f);
}

void keel_cli_usage_error(const keel_cli *cli, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli->progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    print_usage(stderr, current_verb);
}

/* keel_diag_format's line, under `file` when the diagnostic names none. */
static void print_diag(const keel_diag *g, const char *file)
{
    keel_diag named = *g;
    if (!named.file) named.file = (char *)file;
    /* room for all of it: the texts, plus line, col, severity, code name and separators */
    size_t cap = 128 + strlen(g->message) + (g->path ? strlen(g->path) : 0) + (named.file ? strlen(named.file) : 0);
    char *line = malloc(cap);
    if (!line) abort(); /* keel treats OOM as fatal */
    fprintf(stderr, "%s\n", keel_diag_format(&named, line, cap));
    free(line);
}

size_t keel_cli_print_diags(const keel_diags *d, const char *file)
{
    for (size_t i = 0; d && i < d->count; i++) print_diag(&d->items[i], file);
    return d ? d->errors : 0; /* summarised errors too */
}

/* The freeze's diagnostics ("game:x requires 'core:transfrom', which is not
 * declared") name the kind first: they are printed under the file that declared
 * it, as keel.kindfiles (at stack index `mod`, or nil there) recorded it. */
static void print_freeze_diags(lua_State *L, int mod, const keel_diags *d, const char *progname)
{
    for (size_t i = 0; i < d->count; i++) {
        const keel_diag *g = &d->items[i];
        size_t n = strcspn(g->message, " ");
        if (lua_istable(L, mod) && n > 0) {
            lua_getfield(L, mod, "declared_by");
            lua_pushlstring(L, g->message, n);
            if (lua_pcall(L, 1, 1, 0) != LUA_OK) lua_pushnil(L); /* d is not to leak */
        } else {
            lua_pushnil(L);
        }
        const char *file = lua_tostring(L, -1); /* kept on the stack while printed */
        print_diag(g, file ? file : progname);
        lua_pop(L, 1);
    }
}

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Common options before the verb or the script. Returns the index of the
 * first other argument, or -1 after a usage error. */
static int parse_leading(keel_cli *cli, int argc, char **argv)
{
    int i = 1;
    while (i < argc) {
        if (strcmp(argv[i], "--kinds") == 0 || strcmp(argv[i], "--assets") == 0) i += 2;
        else if (strncmp(argv[i], "--kinds=", 8) == 0 || strncmp(argv[i], "--assets=", 9) == 0) i++;
        else break;
    }
    if (i > argc) i = argc; /* the last one's value is missing: keel_cli_parse says so */
    /* options only, so nothing is moved */
    return keel_cli_parse(cli, i - 1, argv + 1, NULL, 0) < 0 ? -1 : i;
}

int keel_cli_parse(keel_cli *cli, int argc, char **argv, const keel_cli_opt *opts, size_t nopts)
{
    int npos = 0;
    bool only_pos = false;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            argv[npos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = true;
            continue;
        }
        /* --name=value is accepted for every option that takes a value. */
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        const char **dest = NULL;
        bool *flag = NULL;
        bool is_kinds = false;
        if (nlen == 7 && strncmp(a, "--kinds", 7) == 0) {
            is_kinds = true;
        } else if (nlen == 8 && strncmp(a, "--assets", 8) == 0) {
            dest = &cli->assets;
        } else {
            for (size_t o = 0; o < nopts; o++) {
                if (strlen(opts[o].name) == nlen && strncmp(a, opts[o].name, nlen) == 0) {
                    dest = opts[o].arg;
                    flag = opts[o].flag;
                }
            }
            if (!dest && !flag) {
                keel_cli_usage_error(cli, "unknown option %s", a);
                return -1;
            }
        }
        if (flag) {
            if (eq) {
                keel_cli_usage_error(cli, "%.*s takes no value", (int)nlen, a);
                return -1;
            }
            *flag = true;
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc) {
                keel_cli_usage_error(cli, "%s needs an argument", a);
                return -1;
            }
            value = argv[++i];
        }
        if (is_kinds) cli->kinds_dirs[cli->kinds_count++] = value;
        else *dest = value;
    }
    return npos;
}

/* kindfiles.load(dir) (the module at stack index `mod`); returns the number of files that failed. */
static int load_kinds_dir(lua_State *L, int mod, const char *dir)
{
    lua_getfield(L, mod, "load");
    lua_pushstring(L, dir);
    lua_call(L, 1, 1);
    int failed = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    return failed;
}

int keel_cli_setup(lua_State *L, keel_cli *cli, bool lenient)
{
    int failed = 0;
    int mod = lua_gettop(L) + 1;
    lua_getglobal(L, "require");
    lua_pushliteral(L, "keel.kindfiles");
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        /* lfs not installed, say: counted as a failed kind file, so the REPL still starts */
        const char *msg = lua_tostring(L, mod);
        fprintf(stderr, "%s: %s\n", cli->progname, msg ? msg : "(error object is not a string)");
        failed++;
    } else if (cli->kinds_count > 0) {
        for (size_t i = 0; i < cli->kinds_count; i++)
            failed += load_kinds_dir(L, mod, cli->kinds_dirs[i]);
    } else {
        failed += keel_cli_default_kinds(L, mod, cli);
    }
    keel_diags d;
    keel_diags_init(&d);
    if (keel_registry_freeze(&d) != KEEL_OK) failed++;
    print_freeze_diags(L, mod, &d, cli->progname);
    keel_diags_free(&d);
    lua_settop(L, mod - 1); /* keel.kindfiles */
    if (failed && !lenient) {
        fprintf(stderr, "%s: the kinds could not be loaded\n", cli->progname);
        return KEEL_EXIT_USAGE;
    }
    return -1;
}

static bool is_scene_name(const char *p)
{
    static const char *const exts[] = { ".yaml", ".yml", ".keelc" };
    size_t n = strlen(p);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t m = strlen(exts[i]);
        if (n > m && strcmp(p + n - m, exts[i]) == 0) return true;
    }
    return false;
}

typedef int (*verb_fn)(lua_State *L, keel_cli *cli, int argc, char **argv);

static const struct { const char *name; verb_fn fn; } verbs[] = {
    { "repl", keel_cli_repl },   { "run", keel_cli_run },   { "check", keel_cli_check },
    { "fmt", keel_cli_fmt },     { "cook", keel_cli_cook }, { "dump", keel_cli_dump },
    { "kinds", keel_cli_kinds }, { "serve", keel_cli_serve }, { "merge", keel_cli_merge },
    { "mcp", keel_cli_mcp },     { "uuid", keel_cli_uuid },   { "new", keel_cli_new },
    { "replay", keel_cli_replay },
};

static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = lua_touserdata(L, 2);
    keel_cli cli = { 0 };
    cli.progname = "keel";
    /* At most argc --kinds: kept in a userdata so an error cannot leak it. */
    cli.kinds_dirs = lua_newuserdatauv(L, sizeof(char *) * (size_t)(argc + 1), 0);
    keel_embed_open(L);

    int i = parse_leading(&cli, argc, argv);
    if (i < 0) {
        lua_pushinteger(L, KEEL_EXIT_USAGE);
        return 1;
    }
    int code;
    if (i >= argc) {
        code = keel_cli_repl(L, &cli, 0, argv + i);
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "help") == 0) {
        /* `keel help run` as `keel run --help` */
        print_usage(stdout, i + 1 < argc ? argv[i + 1] : NULL);
        code = KEEL_EXIT_OK;
    } else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "version") == 0) {
        printf("keel %s (%s)\n", KEEL_VERSION_STRING, LUA_RELEASE);
        code = KEEL_EXIT_OK;
    } else {
        verb_fn fn = NULL;
        for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++)
            if (strcmp(argv[i], verbs[v].name) == 0) fn = verbs[v].fn;
        bool help = false;
        for (int j = i + 1; fn && j < argc && strcmp(argv[j], "--") != 0; j++)
            help = help || strcmp(argv[j], "-h") == 0 || strcmp(argv[j], "--help") == 0;
        if (help) {
            print_usage(stdout, argv[i]);
            code = KEEL_EXIT_OK;
        } else if (fn) {
            current_verb = argv[i];
            code = fn(L, &cli, argc - i - 1, argv + i + 1);
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            keel_cli_usage_error(&cli, "unknown option %s", argv[i]);
            code = KEEL_EXIT_USAGE;
        } else if (is_scene_name(argv[i])) {
            /* not run as Lua (a syntax error at line 1 would be all it said) */
            fprintf(stderr, "%s: %s is a scene, not a Lua script: `keel run %s` plays it, `keel repl %s` opens it\n",
                    cli.progname, argv[i], argv[i], argv[i]);
            code = KEEL_EXIT_USAGE;
        } else if (strcmp(argv[i], "-") != 0 && !file_exists(argv[i]) && strpbrk(argv[i], "/.") == NULL) {
            keel_cli_usage_error(&cli, "no verb or script named '%s' (verbs: repl run check fmt cook dump kinds serve mcp merge uuid new)",
                                 argv[i]);
            code = KEEL_EXIT_USAGE;
        } else {
            code = keel_cli_script(L, &cli, argc, argv, i);
        }
    }
    lua_pushinteger(L, code);
    return 1;
}

int main(int argc, char **argv)
{
    if (keel_init() != KEEL_OK) {
        fprintf(stderr, "keel: cannot initialise the kind registry\n");
        return KEEL_EXIT_USAGE;
    }
    keel_load_progress_default(keel_cli_progress, NULL); /* every load shows it, keel.load's too */
    lua_State *L = luaL_newstate();
    if (!L) {
        fprintf(stderr, "keel: cannot create the Lua state: not enough memory\n");
        keel_shutdown();
        return KEEL_EXIT_USAGE;
    }
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    int code;
    if (lua_pcall(L, 2, 1, 0) == LUA_OK) {
        code = (int)lua_tointeger(L, -1);
    } else {
        const char *msg = lua_tostring(L, -1);
        fprintf(stderr, "keel: %s\n", msg ? msg : "(error object is not a string)");
        code = KEEL_EXIT_USAGE;
    }
    fflush(stdout);
    lua_close(L);
    keel_shutdown();
    return code;
}
