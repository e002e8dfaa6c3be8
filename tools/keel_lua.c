/* keel_lua.c — the verbs that run Lua: scripts, the REPL and `keel run`. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <editline/readline.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "keel_lua.h"

#include "cli.h"

/* ---- running Lua code (as lua.c does) ---- */

static lua_State *interrupted_state;
static volatile sig_atomic_t stepping_interrupted;

static void stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    luaL_error(L, "interrupted!");
}

/* SIGINT while Lua runs: stop at the next hook point rather than kill the REPL.
 * Inside w:step/w:run the first Ctrl-C stops after the current frame instead
 * (a hook raising inside a callback would be recorded as that callback's
 * fault); a second one stops at once, as outside. */
static void on_sigint(int sig)
{
    if (keel_lua_stepping() && !stepping_interrupted) {
        stepping_interrupted = 1;
        keel_lua_interrupt();
        return;
    }
    signal(sig, SIG_DFL);
    lua_sethook(interrupted_state, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Pushes "FILE:LINE: " of the innermost Lua code that is the user's (not
 * keel's own Lua modules, not the program's built-in chunks), or "". */
static void push_user_where(lua_State *L)
{
    static const char *const own[] = { "/keel/init.lua", "/keel/history.lua", "/keel/repl.lua" };
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        bool skip = strncmp(ar.source, "=keel", 5) == 0;
        for (size_t i = 0; !skip && i < sizeof own / sizeof own[0]; i++) skip = ends_with(ar.source, own[i]);
        if (skip) continue;
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
        return;
    }
    lua_pushliteral(L, "");
}

static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        /* Error objects (keel's carry a __tostring: "Code: message") print as
         * themselves, after the line of the user's code that raised them. */
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
            push_user_where(L);
            lua_insert(L, -2);
            lua_concat(L, 2);
            return 1;
        }
        if (lua_type(L, 1) == LUA_TTABLE && lua_getfield(L, 1, "code") == LUA_TSTRING &&
            lua_getfield(L, 1, "message") == LUA_TSTRING) {
            push_user_where(L);
            lua_pushfstring(L, "%s%s: %s", lua_tostring(L, -1), lua_tostring(L, -3), lua_tostring(L, -2));
            return 1;
        }
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* Calls the function under its `narg` arguments with a traceback handler. */
static int docall(lua_State *L, int narg, int nres, bool interruptible)
{
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    if (interruptible) {
        interrupted_state = L;
        stepping_interrupted = 0;
        signal(SIGINT, on_sigint);
    }
    int status = lua_pcall(L, narg, nres, base);
    if (interruptible) signal(SIGINT, SIG_DFL);
    lua_remove(L, base);
    return status;
}

static void report(const keel_cli *cli, lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s: %s\n", cli->progname, msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int l_now(lua_State *L)
{
    lua_pushnumber(L, now_seconds());
    return 1;
}

/* require(name) into a global; false (after reporting) when it fails. */
static bool require_global(const keel_cli *cli, lua_State *L, const char *name, const char *global)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, name);
    if (docall(L, 1, 1, false) != LUA_OK) {
        report(cli, L);
        return false;
    }
    lua_setglobal(L, global);
    return true;
}

/* ---- keel SCRIPT.lua [ARGS...] ---- */

int keel_cli_script(lua_State *L, keel_cli *cli, int argc, char **argv, int si)
{
    /* As for every verb: a script opening a scene finds the kinds of ./kinds declared. */
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    lua_createtable(L, argc - si - 1, si + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - si);
    }
    lua_setglobal(L, "arg");

    const char *fname = strcmp(argv[si], "-") == 0 ? NULL : argv[si];
    int status = luaL_loadfile(L, fname);
    if (status != LUA_OK) {
        report(cli, L);
        return status == LUA_ERRFILE ? KEEL_EXIT_USAGE : KEEL_EXIT_INPUT;
    }
    luaL_checkstack(L, argc - si, "too many arguments to script");
    for (int i = si + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    if (docall(L, argc - si - 1, 0, true) != LUA_OK) {
        report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    return KEEL_EXIT_OK;
}

/* ---- loading a scene through keel.load ---- */

/* The diagnostic tables at idx (an error object's `diagnostics`, w:warnings()) back into
 * keel_diags, printed as the verbs print a load's: one format, keel_diag_format's. */
static size_t print_diag_table(lua_State *L, int idx, const char *file)
{
    keel_diags d;
    keel_diags_init(&d);
    idx = lua_absindex(L, idx);
    for (lua_Integer i = 1; lua_rawgeti(L, idx, i) == LUA_TTABLE; i++) {
        lua_getfield(L, -1, "code");
        lua_getfield(L, -2, "message");
        lua_getfield(L, -3, "path");
        lua_getfield(L, -4, "file");
        lua_getfield(L, -5, "line");
        lua_getfield(L, -6, "col");
        lua_getfield(L, -7, "severity");
        keel_status code = KEEL_INVALID_OPERATION;
        for (keel_status c = KEEL_OK; c <= KEEL_IO_ERROR; c++)
            if (lua_type(L, -7) == LUA_TSTRING && strcmp(lua_tostring(L, -7), keel_status_name(c)) == 0) code = c;
        const char *sev = lua_tostring(L, -1);
        keel_diag_add(&d, sev && strcmp(sev, "warning") == 0 ? KEEL_SEV_WARNING : KEEL_SEV_ERROR, code,
                      lua_tostring(L, -5), lua_tostring(L, -4), (int)lua_tointeger(L, -3), (int)lua_tointeger(L, -2),
                      "%s", luaL_optstring(L, -6, ""));
        lua_pop(L, 8);
    }
    lua_pop(L, 1);
    size_t errors = keel_cli_print_diags(&d, file);
    keel_diags_free(&d); /* nothing above raises once d holds items: the values are read as they are */
    return errors;
}

/* Pushes keel.load(path)'s world and returns -1, its warnings printed as `keel check` prints
 * them; on failure prints why (the error object's own diagnostics) and returns the exit code. */
static int load_world(lua_State *L, keel_cli *cli, const char *path)
{
    /* The bundled scenes/ holds assets.yaml beside the scenes: say what it is
     * rather than list the scene keys it lacks. */
    if (keel_cli_is_manifest(cli, path)) {
        fprintf(stderr, "%s: %s is an asset manifest, not a scene (`keel check` validates it; "
                "it is used by the scenes beside it)\n", cli->progname, path);
        return KEEL_EXIT_INPUT;
    }
    lua_getglobal(L, "keel");
    lua_getfield(L, -1, "load");
    lua_remove(L, -2);
    lua_pushstring(L, path);
    if (cli->assets) { /* else keel.load uses the manifest beside the scene, as the verbs do */
        lua_createtable(L, 0, 1);
        lua_pushstring(L, cli->assets);
        lua_setfield(L, -2, "assets");
    } else {
        lua_pushnil(L);
    }
    if (docall(L, 2, 2, false) != LUA_OK) {
        lua_pushfstring(L, "%s: %s", path, lua_tostring(L, -1));
        lua_remove(L, -2);
        report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    if (lua_isnil(L, -2)) { /* nil, err */
        int code = KEEL_EXIT_INPUT;
        if (lua_istable(L, -1) && lua_getfield(L, -1, "diagnostics") == LUA_TTABLE) {
            print_diag_table(L, -1, path);
            lua_getfield(L, -2, "code");
            if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "IOError") == 0) code = KEEL_EXIT_USAGE;
            lua_pop(L, 2);
        } else {
            lua_pop(L, 1);
            fprintf(stderr, "%s: %s: %s\n", cli->progname, path, luaL_tolstring(L, -1, NULL));
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
        return code;
    }
    lua_pop(L, 1);
    lua_getfield(L, -1, "warnings");
    lua_pushvalue(L, -2);
    if (docall(L, 1, 1, false) == LUA_OK && lua_istable(L, -1)) print_diag_table(L, -1, path);
    lua_pop(L, 1);
    return -1;
}

/* ---- keel run ---- */

static const char run_chunk[] =
    "local w, name, frames, dt, save, tty, now, interrupted = ...\n"
    "local t0 = now()\n"
    "local every = math.max(1, frames // 100)\n"
    "local ran = frames\n"
    "for i = 1, frames do\n"
    "  if interrupted() then ran = i - 1; break end\n"
    "  w:step(dt)\n"
    "  if tty and (i % every == 0 or i == frames) then\n"
    "    io.stdout:write(string.format('\\rframe %d/%d', i, frames)); io.stdout:flush()\n"
    "  end\n"
    "end\n"
    "local elapsed = now() - t0\n"
    "if tty and frames > 0 then io.stdout:write('\\r\\27[K') end\n"
    "local errs = w:errors()\n"
    "local function n(k, one, many) return k .. ' ' .. (k == 1 and one or many) end\n"
    "local done = ran == frames and n(frames, 'frame', 'frames') or\n"
    "  string.format('interrupted after %d of %s', ran, n(frames, 'frame', 'frames'))\n"
    "print(string.format('%s: %s, %s, %.4f ms per frame, %s', name, done,\n"
    "  n(w:count(), 'entity', 'entities'), ran > 0 and elapsed * 1000 / ran or 0, n(#errs, 'error', 'errors')))\n"
    "for _, e in ipairs(errs) do\n"
    "  local msg, phase = tostring(e.message), tostring(e.phase)\n"
    "  if msg:sub(1, #phase + 1) ~= phase .. ':' then msg = phase .. ': ' .. msg end\n"
    "  -- the entity by name too, when it is still there (a UUID alone says little)\n"
    "  local ent = tostring(e.entity)\n"
    "  local ok, found = pcall(w.find, w, ent)\n"
    "  if ok and found then ent = string.format('%q %s', found.name, ent) end\n"
    "  io.stderr:write(string.format('%s: error: %s[%s] on entity %s: %s\\n', name,\n"
    "    tostring(e.kind), tostring(e.slot), ent, msg))\n"
    "end\n"
    "if ran < frames then\n"
    "  if save then io.stderr:write('keel: run: interrupted: ' .. save .. ' not written\\n') end\n"
    "  return #errs\n"
    "end\n"
    "if save then\n"
    "  local ok, err = w:save(save)\n"
    "  if not ok then return #errs, tostring(err) end\n"
    "  print('saved ' .. save)\n"
    "end\n"
    "return #errs\n";

/* ctrl-c in `keel run` stops after the current frame (the summary is still
 * printed): a Lua error raised by a hook would be caught by the callback that
 * happened to be running and recorded as its failure. A second ctrl-c kills. */
static volatile sig_atomic_t run_interrupted;

static void on_run_sigint(int sig)
{
    run_interrupted = 1;
    signal(sig, SIG_DFL);
}

static int l_interrupted(lua_State *L)
{
    lua_pushboolean(L, run_interrupted);
    return 1;
}

int keel_cli_run(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    const char *frames_s = NULL, *dt_s = NULL, *save = NULL;
    const keel_cli_opt opts[] = {
        { "--frames", &frames_s, NULL }, { "--dt", &dt_s, NULL }, { "--save", &save, NULL },
    };
    int n = keel_cli_parse(cli, argc, argv, opts, 3);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n > 1) {
        keel_cli_usage_error(cli, "run: expected at most one SCENE");
        return KEEL_EXIT_USAGE;
    }
    lua_Integer frames = 600;
    double dt = 1.0 / 60.0;
    char *end;
    if (frames_s) {
        long long v = strtoll(frames_s, &end, 10);
        if (*frames_s == '\0' || *end != '\0' || v < 0) {
            keel_cli_usage_error(cli, "run: --frames needs a whole number >= 0, not '%s'", frames_s);
            return KEEL_EXIT_USAGE;
        }
        frames = (lua_Integer)v;
    }
    if (dt_s) {
        dt = strtod(dt_s, &end);
        if (*dt_s == '\0' || *end != '\0' || !(dt > 0 && dt < 1e9)) {
            keel_cli_usage_error(cli, "run: --dt needs a number of seconds > 0, not '%s'", dt_s);
            return KEEL_EXIT_USAGE;
        }
    }
    const char *scene = n == 1 ? argv[0] : NULL;
    if (!scene) {
        char *demo = keel_embed_data_path("scenes/demo.yaml", "scenes/demo.yaml");
        if (!demo) {
            fprintf(stderr, "%s: run: the bundled demo scene (scenes/demo.yaml) is not installed\n", cli->progname);
            return KEEL_EXIT_USAGE;
        }
        lua_pushstring(L, demo);
        free(demo);
        scene = lua_tostring(L, -1); /* kept on the stack for the rest of the verb */
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    if (!require_global(cli, L, "keel", "keel")) return KEEL_EXIT_USAGE;
    rc = load_world(L, cli, scene);
    if (rc >= 0) return rc;

    int w = lua_gettop(L);
    if (luaL_loadbuffer(L, run_chunk, sizeof run_chunk - 1, "=keel run") != LUA_OK) {
        report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pushvalue(L, w);
    lua_pushstring(L, scene);
    lua_pushinteger(L, frames);
    lua_pushnumber(L, dt);
    if (save) lua_pushstring(L, save);
    else lua_pushnil(L);
    lua_pushboolean(L, isatty(STDOUT_FILENO));
    lua_pushcfunction(L, l_now);
    lua_pushcfunction(L, l_interrupted);
    run_interrupted = 0;
    signal(SIGINT, on_run_sigint);
    int status = docall(L, 8, 2, false);
    signal(SIGINT, SIG_DFL);
    if (run_interrupted) {
        /* Ended by ctrl-c: die of it, so a calling shell or make stops too. */
        if (status != LUA_OK) report(cli, L);
        fflush(stdout);
        fflush(stderr);
        raise(SIGINT);
    }
    if (status != LUA_OK) {
        report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    if (lua_isstring(L, -1)) {
        fprintf(stderr, "%s: run: cannot save %s: %s\n", cli->progname, save, lua_tostring(L, -1));
        return KEEL_EXIT_USAGE;
    }
    /* Callback failures are errors in the input (its kinds' scripts). */
    return lua_tointeger(L, -2) > 0 ? KEEL_EXIT_INPUT : KEEL_EXIT_OK;
}

/* ---- the REPL ---- */

#define PROMPT "> "
#define PROMPT2 ">> "

enum { LINE_EOF = 0, LINE_OK = 1, LINE_INTERRUPTED = 2 };
enum { CHUNK_EOF = -1, CHUNK_INTERRUPTED = -2 };

static volatile sig_atomic_t prompt_interrupted;

static void on_prompt_sigint(int sig)
{
    (void)sig;
    prompt_interrupted = 1;
}

/* One line of input without its newline, pushed as a string (LINE_OK); at
 * EOF or after ctrl-c at the prompt nothing is pushed. */
static int push_line(lua_State *L, bool tty, const char *prompt)
{
    if (tty) {
        /* ctrl-c drops the line being typed, as a shell does, rather than
         * killing the REPL (and its unsaved history); no SA_RESTART, so the
         * read inside readline returns. */
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_prompt_sigint;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old);
        prompt_interrupted = 0;
        char *line = readline(prompt);
        sigaction(SIGINT, &old, NULL);
        if (prompt_interrupted) {
            free(line);
            return LINE_INTERRUPTED;
        }
        if (!line) return LINE_EOF;
        lua_pushstring(L, line);
        free(line);
        return LINE_OK;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    int c;
    bool any = false;
    while ((c = getchar()) != EOF) {
        any = true;
        if (c == '\n') break;
        luaL_addchar(&b, (char)c);
    }
    luaL_pushresult(&b);
    if (!any) {
        lua_pop(L, 1);
        return LINE_EOF;
    }
    return LINE_OK;
}

static bool incomplete(lua_State *L, int status)
{
    if (status != LUA_ERRSYNTAX) return false;
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    const size_t mark = sizeof "<eof>" - 1;
    return len >= mark && strcmp(msg + len - mark, "<eof>") == 0;
}

/* Reads one complete chunk and leaves its compiled function on the stack,
 * or an error message. Returns CHUNK_EOF, CHUNK_INTERRUPTED (ctrl-c: the
 * chunk is dropped), else the load status. The source text stays below it
 * (for history). */
static int read_chunk(lua_State *L, bool tty)
{
    int got = push_line(L, tty, PROMPT);
    if (got == LINE_EOF) return CHUNK_EOF;
    if (got == LINE_INTERRUPTED) return CHUNK_INTERRUPTED;
    const char *line = lua_tostring(L, -1);
    /* An expression first, so `1 + 1` or `world` prints its value; `=expr`
     * as Lua 5.1-5.3 had it. */
    bool eq = line[0] == '=';
    lua_pushfstring(L, "return %s;", eq ? line + 1 : line);
    int status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
    lua_remove(L, -2);
    if (status == LUA_OK) return status;
    lua_pop(L, 1);
    if (eq) { /* more lines may follow: go on with the `return` spelled out */
        lua_pushfstring(L, "return %s", line + 1);
        lua_remove(L, -2);
    }
    for (;;) {
        size_t len;
        const char *src = lua_tolstring(L, -1, &len);
        status = luaL_loadbuffer(L, src, len, "=stdin");
        if (!incomplete(L, status)) return status;
        lua_pop(L, 1);
        got = push_line(L, tty, PROMPT2);
        if (got == LINE_INTERRUPTED) return CHUNK_INTERRUPTED;
        if (got == LINE_EOF) {
            /* EOF inside a statement: report it as the syntax error it is
             * (on a line of its own: ctrl-d left the cursor after the prompt). */
            if (tty) fputs("\n", stdout);
            luaL_loadbuffer(L, src, len, "=stdin");
            return LUA_ERRSYNTAX;
        }
        lua_pushliteral(L, "\n");
        lua_insert(L, -2);
        lua_concat(L, 3);
    }
}

/* Prints the results from stack index `first` up via keel.repl's show(). */
static void print_results(lua_State *L, const keel_cli *cli, int first)
{
    int n = lua_gettop(L) - first + 1;
    if (n <= 0) return;
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.repl.show");
    if (lua_isfunction(L, -1)) {
        lua_insert(L, first);
        if (docall(L, n, 1, false) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
            puts(lua_tostring(L, -1));
            lua_pop(L, 1);
            return;
        }
        report(cli, L);
        return;
    }
    lua_pop(L, 1);
    for (int i = first; i < first + n; i++) {
        if (i > first) fputs("\t", stdout);
        fputs(luaL_tolstring(L, i, NULL), stdout);
        lua_pop(L, 1);
    }
    fputs("\n", stdout);
    lua_settop(L, first - 1);
}

/* ---- completion: the tab key asks keel.repl's complete(text) ---- */

static lua_State *completion_state;
static char **candidates;
static size_t candidate_count, candidate_next;

static void candidates_free(void)
{
    for (size_t i = 0; i < candidate_count; i++) free(candidates[i]);
    free(candidates);
    candidates = NULL;
    candidate_count = candidate_next = 0;
}

static char *candidate_generator(const char *text, int state)
{
    (void)text;
    if (state == 0) candidate_next = 0;
    if (candidate_next >= candidate_count) return NULL;
    return strdup(candidates[candidate_next++]);
}

/* Called by readline: a Lua error must not unwind through it, so the call is protected. */
static char **complete(const char *text, int start, int end)
{
    (void)end;
    lua_State *L = completion_state;
    candidates_free();
    rl_attempted_completion_over = 1;
    int top = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.repl.complete");
    lua_pushstring(L, text);
    /* the line before the word: after a quote it is a string (a kind key) */
    lua_pushlstring(L, rl_line_buffer ? rl_line_buffer : "", rl_line_buffer && start > 0 ? (size_t)start : 0);
    if (lua_isfunction(L, -3) && lua_pcall(L, 2, 1, 0) == LUA_OK && lua_istable(L, -1)) {
        size_t n = (size_t)lua_rawlen(L, -1);
        candidates = n ? calloc(n, sizeof *candidates) : NULL;
        for (size_t i = 0; candidates && i < n; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            const char *c = lua_tostring(L, -1);
            if (c && (candidates[candidate_count] = strdup(c)) != NULL) candidate_count++;
            lua_pop(L, 1);
        }
    }
    lua_settop(L, top);
    if (candidate_count == 0) return NULL;
    return rl_completion_matches(text, candidate_generator);
}

static const char *history_path(lua_State *L)
{
    const char *home = getenv("HOME");
    if (!home || !*home) return NULL;
    return lua_pushfstring(L, "%s/.keel_history", home);
}

int keel_cli_repl(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    int n = keel_cli_parse(cli, argc, argv, NULL, 0);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n > 1) {
        keel_cli_usage_error(cli, "repl: expected at most one SCENE");
        return KEEL_EXIT_USAGE;
    }
    const char *scene = n == 1 ? argv[0] : NULL;
    bool tty = isatty(STDIN_FILENO);
    keel_cli_setup(L, cli, true); /* a broken kind file can be fixed and reload()ed */

    bool have_keel = require_global(cli, L, "keel", "keel");
    if (have_keel && scene) {
        int rc = load_world(L, cli, scene);
        if (rc >= 0) return rc;
        lua_setglobal(L, "world");
    } else if (have_keel) {
        lua_getglobal(L, "keel");
        lua_getfield(L, -1, "world");
        lua_pushliteral(L, "untitled");
        if (docall(L, 1, 1, false) == LUA_OK) lua_setglobal(L, "world");
        else report(cli, L);
        lua_pop(L, 1);
    }
    lua_getglobal(L, "require");
    lua_pushliteral(L, "keel.repl");
    if (docall(L, 1, 1, false) == LUA_OK && lua_istable(L, -1)) {
        lua_getfield(L, -1, "show");
        lua_setfield(L, LUA_REGISTRYINDEX, "keel.repl.show");
        lua_getfield(L, -1, "complete");
        lua_setfield(L, LUA_REGISTRYINDEX, "keel.repl.complete");
        lua_getfield(L, -1, "reload");
        lua_setglobal(L, "reload");
        lua_getfield(L, -1, "help");
        lua_setglobal(L, "help");
        lua_pop(L, 1);
    } else {
        report(cli, L);
    }

    int top0 = lua_gettop(L);
    const char *hist = tty ? history_path(L) : NULL;
    if (!hist) lua_pushnil(L);
    if (tty) {
        using_history();
        stifle_history(1000);
        completion_state = L;
        /* '.' and ':' stay inside a word, so "world:sp" completes as a whole. */
        rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^#~";
        rl_completer_word_break_characters = (char *)rl_basic_word_break_characters;
        rl_completion_append_character = '\0';
        rl_attempted_completion_function = complete;
        if (hist) read_history(hist);
        lua_getglobal(L, "world");
        const char *wname = NULL;
        if (lua_type(L, -1) == LUA_TUSERDATA || lua_type(L, -1) == LUA_TTABLE) {
            lua_getfield(L, -1, "name");
            wname = lua_tostring(L, -1);
        }
        printf("keel %s (%s)  world: %s  -- help() to start; reload() re-runs changed kinds; ctrl-d quits\n",
               KEEL_VERSION_STRING, LUA_RELEASE, wname ? wname : "(none)");
        lua_settop(L, top0 + 1);
    }
    int base = lua_gettop(L);
    int status;
    /* Piped input goes on after an error, as a session does, but the exit
     * code tells a calling script (`keel <<EOF` under `set -e`) that a line failed. */
    bool failed = false;
    while ((status = read_chunk(L, tty)) != CHUNK_EOF) {
        if (status == CHUNK_INTERRUPTED) {
            fputs("\n", stdout);
            lua_settop(L, base);
            continue;
        }
        /* stack: base | source | function-or-error */
        if (tty) {
            const char *src = lua_tostring(L, base + 1);
            if (src && *src) add_history(src);
        }
        lua_remove(L, base + 1);
        if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET, true);
        if (status == LUA_OK) {
            print_results(L, cli, base + 1);
        } else {
            report(cli, L);
            failed = true;
        }
        lua_settop(L, base);
        fflush(stdout);
    }
    if (tty) {
        fputs("\n", stdout);
        if (hist) write_history(hist);
        candidates_free();
        completion_state = NULL;
    }
    lua_settop(L, top0);
    return failed && !tty ? KEEL_EXIT_INPUT : KEEL_EXIT_OK;
}
