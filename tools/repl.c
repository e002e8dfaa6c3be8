/* repl.c — `keel repl` and bare `keel`: line editing, history, completion, results shown readably. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <editline/readline.h>
#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

#define PROMPT "> "
#define PROMPT2 ">> "

enum { LINE_EOF = 0, LINE_OK = 1, LINE_INTERRUPTED = 2 };
enum { CHUNK_EOF = -1, CHUNK_INTERRUPTED = -2 };

static bool poll_server(lua_State *L, double seconds);

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
    poll_server(L, 0); /* piped input: a served world is answered between lines */
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
        if (keel_cli_call(L, n, 1, false) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
            puts(lua_tostring(L, -1));
            lua_pop(L, 1);
            return;
        }
        keel_cli_report(cli, L);
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

/* `world`: SCENE when given, else an empty world "untitled". Returns -1, or
 * the exit code when SCENE did not load. Without keel (a broken install) the
 * REPL still starts, as plain Lua. */
static int bind_world(lua_State *L, keel_cli *cli, const char *scene)
{
    if (!keel_cli_require(cli, L, "keel", "keel")) return -1;
    if (scene) {
        int rc = keel_cli_load_world(L, cli, scene);
        if (rc >= 0) return rc;
        lua_setglobal(L, "world");
        return -1;
    }
    lua_getglobal(L, "keel");
    lua_getfield(L, -1, "world");
    lua_pushliteral(L, "untitled");
    if (keel_cli_call(L, 1, 1, false) == LUA_OK) lua_setglobal(L, "world");
    else keel_cli_report(cli, L);
    lua_pop(L, 1);
    return -1;
}

/* keel.repl's show() and complete() go to the registry for the C side,
 * reload(), help(), play() and stop() to globals for the user. */
static void bind_repl_module(lua_State *L, const keel_cli *cli)
{
    lua_getglobal(L, "require");
    lua_pushliteral(L, "keel.repl");
    if (keel_cli_call(L, 1, 1, false) != LUA_OK || !lua_istable(L, -1)) {
        keel_cli_report(cli, L);
        return;
    }
    lua_getfield(L, -1, "show");
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.repl.show");
    lua_getfield(L, -1, "complete");
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.repl.complete");
    lua_getfield(L, -1, "new_errors");
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.repl.new_errors");
    lua_getfield(L, -1, "reload");
    lua_setglobal(L, "reload");
    lua_getfield(L, -1, "help");
    lua_setglobal(L, "help");
    lua_getfield(L, -1, "play");
    lua_setglobal(L, "play");
    lua_getfield(L, -1, "stop");
    lua_setglobal(L, "stop");
    lua_getfield(L, -1, "serve");
    lua_setglobal(L, "serve");
    lua_getfield(L, -1, "watch");
    lua_setglobal(L, "watch");
    lua_getfield(L, -1, "resolve");
    lua_setglobal(L, "resolve");
    lua_getfield(L, -1, "poll");
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.repl.poll");
    lua_getfield(L, -1, "print");
    lua_setglobal(L, "print");
    lua_pop(L, 1);
}

/* keel.repl.poll(seconds) in protected mode: true while serve() has a server open or watch() watches. */
static bool poll_server(lua_State *L, double seconds)
{
    if (!lua_checkstack(L, 3)) return false;
    int top = lua_gettop(L);
    bool serving = false;
    if (lua_getfield(L, LUA_REGISTRYINDEX, "keel.repl.poll") == LUA_TFUNCTION) {
        lua_pushnumber(L, seconds);
        serving = lua_pcall(L, 1, 1, 0) == LUA_OK && lua_toboolean(L, -1);
    }
    lua_settop(L, top);
    return serving;
}

/* readline's input while serve() serves: the server is answered until a key arrives. */
static int getc_serving(FILE *f)
{
    int fd = fileno(f);
    for (;;) {
        if (completion_state && poll_server(completion_state, 0)) {
            fd_set rs;
            FD_ZERO(&rs);
            FD_SET(fd, &rs);
            struct timeval tv = { 0, 20000 };
            int r = select(fd + 1, &rs, NULL, NULL, &tv);
            if (r == 0) continue;
            if (r < 0 && errno == EINTR) return EOF;
        }
        /* one character: libedit takes what this returns as a wide character, so UTF-8 is decoded here */
        unsigned char c;
        if (read(fd, &c, 1) != 1) return EOF; /* EINTR too: push_line sees the ctrl-c */
        int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
        int cp = extra == 3 ? c & 0x07 : extra == 2 ? c & 0x0F : extra == 1 ? c & 0x1F : c;
        for (int i = 0; i < extra; i++) {
            if (read(fd, &c, 1) != 1) return EOF;
            cp = (cp << 6) | (c & 0x3F);
        }
        return cp;
    }
}

/* Line editing on a terminal: history from `hist` (may be NULL), tab completion. */
static void editing_start(lua_State *L, const char *hist)
{
    rl_getc_function = getc_serving;
    using_history();
    stifle_history(1000);
    completion_state = L;
    /* '.' and ':' stay inside a word, so "world:sp" completes as a whole. */
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^#~";
    rl_completer_word_break_characters = (char *)rl_basic_word_break_characters;
    rl_completion_append_character = '\0';
    rl_attempted_completion_function = complete;
    if (hist) read_history(hist);
}

static void editing_stop(const char *hist)
{
    fputs("\n", stdout); /* ctrl-d left the cursor after the prompt */
    if (hist) write_history(hist);
    candidates_free();
    completion_state = NULL;
}

static void print_banner(lua_State *L)
{
    int top = lua_gettop(L);
    lua_getglobal(L, "world");
    const char *wname = NULL;
    if (lua_type(L, -1) == LUA_TUSERDATA || lua_type(L, -1) == LUA_TTABLE) {
        lua_getfield(L, -1, "name");
        wname = lua_tostring(L, -1);
    }
    printf("keel %s (%s)  world: %s  -- help() to start; reload() re-runs changed kinds; ctrl-d quits\n",
           KEEL_VERSION_STRING, LUA_RELEASE, wname ? wname : "(none)");
    lua_settop(L, top);
}

/* The callback errors the line's steps recorded (keel.repl's new_errors), grouped:
 * a world:run that failed 25 times must not print nothing. */
static void print_new_errors(lua_State *L)
{
    int top = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.repl.new_errors");
    if (lua_isfunction(L, -1) && lua_pcall(L, 0, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING)
        puts(lua_tostring(L, -1));
    lua_settop(L, top);
}

/* Runs what read_chunk left above `base` (its source, then its function or
 * the load error) and prints the results or the error; false when it failed. */
static bool eval_chunk(lua_State *L, const keel_cli *cli, bool tty, int base, int status)
{
    if (tty) {
        const char *src = lua_tostring(L, base + 1);
        if (src && *src) add_history(src);
    }
    lua_remove(L, base + 1);
    if (status == LUA_OK) status = keel_cli_call(L, 0, LUA_MULTRET, true);
    if (status == LUA_OK) print_results(L, cli, base + 1);
    else keel_cli_report(cli, L);
    lua_settop(L, base);
    print_new_errors(L);
    fflush(stdout);
    return status == LUA_OK;
}

/* Reads, runs and prints chunks until EOF. Returns whether any failed: piped
 * input goes on after an error, as a session does, but the exit code tells a
 * calling script (`keel <<EOF` under `set -e`) that a line failed. */
static bool read_eval_print(lua_State *L, const keel_cli *cli, bool tty)
{
    int base = lua_gettop(L);
    int status;
    bool failed = false;
    while ((status = read_chunk(L, tty)) != CHUNK_EOF) {
        if (status == CHUNK_INTERRUPTED) {
            fputs("\n", stdout);
            lua_settop(L, base);
            continue;
        }
        if (!eval_chunk(L, cli, tty, base, status)) failed = true;
    }
    return failed;
}

int keel_cli_repl(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    int n = keel_cli_parse(cli, argc, argv, NULL, 0);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n > 1) {
        keel_cli_usage_error(cli, "repl: expected at most one SCENE");
        return KEEL_EXIT_USAGE;
    }
    cli->scene = n == 1 ? argv[0] : NULL;
    keel_cli_setup(L, cli, true); /* a broken kind file can be fixed and reload()ed */
    int rc = bind_world(L, cli, n == 1 ? argv[0] : NULL);
    if (rc >= 0) return rc;
    bind_repl_module(L, cli);

    bool tty = isatty(STDIN_FILENO);
    int top = lua_gettop(L);
    const char *hist = tty ? history_path(L) : NULL; /* kept on the stack until the end */
    if (tty) {
        editing_start(L, hist);
        print_banner(L);
    }
    bool failed = read_eval_print(L, cli, tty);
    if (tty) editing_stop(hist);
    lua_settop(L, top);
    return failed && !tty ? KEEL_EXIT_INPUT : KEEL_EXIT_OK;
}
