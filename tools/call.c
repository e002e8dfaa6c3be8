/* call.c — calling Lua from the program, as lua.c does: a traceback handler, ctrl-c,
 * error reports, require, and a scene opened through keel.load. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua_host.h"

#include "cli.h"

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
static volatile sig_atomic_t sigint_seen;

bool keel_cli_interrupted(void)
{
    return sigint_seen;
}

static void on_sigint(int sig)
{
    sigint_seen = 1;
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
 * keel's own Lua modules, not the program's built-in chunks nor the verbs' Lua
 * under keel/cli/), or "". */
static void push_user_where(lua_State *L)
{
    static const char *const own[] = { "/keel/init.lua", "/keel/history.lua", "/keel/repl.lua" };
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        bool skip = strncmp(ar.source, "=keel", 5) == 0 || (ar.source[0] == '@' && strstr(ar.source, "/keel/cli/"));
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
         * themselves, after the line of the user's code that raised them (a keel
         * error raised from Lua carries it already: "where: Code: message"). */
        bool placed = false;
        if (lua_type(L, 1) == LUA_TTABLE) {
            lua_pushliteral(L, "where");
            placed = lua_rawget(L, 1) == LUA_TSTRING;
            lua_pop(L, 1);
        }
        if (placed && luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
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

/* A frame loop's stop request (keel run, serve, --host/--connect): ctrl-c or SIGTERM sets a flag
 * the loop reads between frames, so the frame in progress finishes and the summary is still
 * printed; a second signal kills, as usual. */
static volatile sig_atomic_t loop_stop;
static lua_State *loop_state;

/* Raises in the request being answered; set from the signal handler, so it checks again when it
 * fires: a request that ended meanwhile leaves the loop to see the stop flag between frames. */
static void answer_stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    if (keel_lua_answering()) luaL_error(L, "interrupted!");
}

static void on_loop_signal(int sig)
{
    loop_stop = 1;
    signal(sig, SIG_DFL);
    /* a request being answered is interrupted (it answers an error) rather than waited for: a
     * world.step of many frames stops after its current frame, other Lua at its next hook */
    if (keel_lua_answering()) {
        if (keel_lua_stepping()) keel_lua_interrupt();
        else if (loop_state)
            lua_sethook(loop_state, answer_stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
    }
}

void keel_cli_loop_signals(lua_State *L, bool on, bool term)
{
    loop_state = on ? L : NULL;
    if (on) loop_stop = 0;
    signal(SIGINT, on ? on_loop_signal : SIG_DFL);
    if (term) signal(SIGTERM, on ? on_loop_signal : SIG_DFL);
}

bool keel_cli_loop_stopped(void) { return loop_stop; }

int keel_cli_l_loop_stopped(lua_State *L)
{
    lua_pushboolean(L, loop_stop);
    return 1;
}

double keel_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int keel_cli_l_now(lua_State *L)
{
    lua_pushnumber(L, keel_cli_now());
    return 1;
}

int keel_cli_call(lua_State *L, int narg, int nres, bool interruptible)
{
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    if (interruptible) {
        interrupted_state = L;
        stepping_interrupted = 0;
        sigint_seen = 0;
        signal(SIGINT, on_sigint);
    }
    int status = lua_pcall(L, narg, nres, base);
    if (interruptible) signal(SIGINT, SIG_DFL);
    lua_remove(L, base);
    return status;
}

void keel_cli_report(const keel_cli *cli, lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s: %s\n", cli->progname, msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
}

bool keel_cli_require(const keel_cli *cli, lua_State *L, const char *name, const char *global)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, name);
    if (keel_cli_call(L, 1, 1, false) != LUA_OK) {
        keel_cli_report(cli, L);
        return false;
    }
    lua_setglobal(L, global);
    return true;
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
        for (keel_status c = KEEL_OK; c <= KEEL_STATUS_LAST_; c++)
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

int keel_cli_load_world(lua_State *L, keel_cli *cli, const char *path)
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
    int status = keel_cli_call(L, 2, 2, false);
    if (status != LUA_OK) {
        lua_pushfstring(L, "%s: %s", path, lua_tostring(L, -1));
        lua_remove(L, -2);
        keel_cli_report(cli, L);
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
    if (keel_cli_call(L, 1, 1, false) == LUA_OK && lua_istable(L, -1)) {
        print_diag_table(L, -1, path);
        keel_cli_unknown_summary(L, cli, path, -1);
    }
    lua_pop(L, 1);
    return -1;
}
