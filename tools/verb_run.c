/* verb_run.c — Lua run headless to its end: `keel SCRIPT.lua` and `keel run`. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

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
        keel_cli_report(cli, L);
        return status == LUA_ERRFILE ? KEEL_EXIT_USAGE : KEEL_EXIT_INPUT;
    }
    luaL_checkstack(L, argc - si, "too many arguments to script");
    for (int i = si + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    if (keel_cli_call(L, argc - si - 1, 0, true) != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (keel_cli_interrupted() && msg && strstr(msg, "interrupted!")) {
            /* ctrl-c: where it stopped (and the frame, from w:run/w:step), no traceback; 130 as a shell's */
            const char *tb = strstr(msg, "\nstack traceback:");
            fprintf(stderr, "%s: %.*s\n", cli->progname, tb ? (int)(tb - msg) : (int)strlen(msg), msg);
            return 130;
        }
        keel_cli_report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    return KEEL_EXIT_OK;
}

/* ---- keel run ---- */

/* The frame loop and its report are Lua: lua/keel/cli/run.lua. */
static const char run_chunk[] = "return require 'keel.cli.run'.run(...)\n";

const char *keel_cli_push_demo(lua_State *L, keel_cli *cli)
{
    char *demo = keel_embed_data_path("scenes/demo.yaml", "scenes/demo.yaml");
    if (!demo) {
        fprintf(stderr, "%s: run: the bundled demo scene (scenes/demo.yaml) is not installed\n", cli->progname);
        return NULL;
    }
    lua_pushstring(L, demo);
    free(demo);
    return lua_tostring(L, -1);
}

/* ctrl-c in `keel run` stops after the current frame (the summary is still printed): a Lua
 * error raised by a hook would be caught by the callback that happened to be running and
 * recorded as its failure. */
int keel_cli_run(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    int net = keel_cli_run_net(L, cli, argc, argv); /* --host / --connect: verb_net.c */
    if (net >= 0) return net;
    const char *frames_s = NULL, *dt_s = NULL, *save = NULL, *bind = NULL, *serve_port = NULL, *record = NULL,
               *every_s = NULL;
    const char *autosave_s = NULL, *autosave_path = NULL;
    bool play = false, serve = false, profile = false;
    /* --serve takes an optional PORT: only a following all-digit argument is one */
    int kept = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--serve") == 0) {
            serve = true;
            if (i + 1 < argc && argv[i + 1][0] && strspn(argv[i + 1], "0123456789") == strlen(argv[i + 1]))
                serve_port = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--autosave") == 0) { /* two arguments: SECONDS PATH */
            if (i + 2 >= argc) {
                keel_cli_usage_error(cli, "run: --autosave needs SECONDS and PATH");
                return KEEL_EXIT_USAGE;
            }
            autosave_s = argv[++i];
            autosave_path = argv[++i];
            continue;
        }
        argv[kept++] = argv[i];
    }
    argc = kept;
    const keel_cli_opt opts[] = {
        { "--frames", &frames_s, NULL }, { "--dt", &dt_s, NULL },   { "--save", &save, NULL },
        { "--play", NULL, &play },       { "--bind", &bind, NULL },   { "--watch", NULL, &cli->watch },
        { "--profile", NULL, &profile }, { "--record", &record, NULL }, { "--keyframe-every", &every_s, NULL },
    };
    int n = keel_cli_parse(cli, argc, argv, opts, 9);
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
    double autosave = 0;
    if (autosave_s) {
        autosave = strtod(autosave_s, &end);
        if (*autosave_s == '\0' || *end != '\0' || !(autosave > 0 && autosave < 1e9)) {
            keel_cli_usage_error(cli, "run: --autosave needs a number of seconds > 0, not '%s'", autosave_s);
            return KEEL_EXIT_USAGE;
        }
    }
    lua_Integer every = 300;
    if (every_s) {
        long long v = strtoll(every_s, &end, 10);
        if (*every_s == '\0' || *end != '\0' || v < 1 || v > 1000000000) {
            keel_cli_usage_error(cli, "run: --keyframe-every needs a whole number >= 1, not '%s'", every_s);
            return KEEL_EXIT_USAGE;
        }
        every = (lua_Integer)v;
    }
    if (every_s && !record) {
        keel_cli_usage_error(cli, "run: --keyframe-every goes with --record");
        return KEEL_EXIT_USAGE;
    }
    if (record && (serve || play)) {
        keel_cli_usage_error(cli, "run: --record does not combine with --serve or --play");
        return KEEL_EXIT_USAGE;
    }
    lua_Integer port = 27760;
    if (serve_port && !keel_cli_parse_port(cli, serve_port, &port)) return KEEL_EXIT_USAGE;
    if (!serve && bind) {
        keel_cli_usage_error(cli, "run: --bind goes with --serve");
        return KEEL_EXIT_USAGE;
    }
    if (cli->watch && play) {
        keel_cli_usage_error(cli, "run: --watch does not combine with --play");
        return KEEL_EXIT_USAGE;
    }
    if (serve && (save || play || autosave_s)) {
        keel_cli_usage_error(cli, "run: --serve does not combine with --save, --play or --autosave");
        return KEEL_EXIT_USAGE;
    }
    if (serve && profile) { /* a served world's figures are the inspector's Profiler tab's */
        keel_cli_usage_error(cli, "run: --profile does not combine with --serve (the inspector has a Profiler tab)");
        return KEEL_EXIT_USAGE;
    }
    const char *scene = n == 1 ? argv[0] : NULL;
    if (!scene) {
        scene = keel_cli_push_demo(L, cli);
        if (!scene) return KEEL_EXIT_USAGE;
    }
    cli->scene = scene;
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    if (!keel_cli_require(cli, L, "keel", "keel")) return KEEL_EXIT_USAGE;
    rc = keel_cli_load_world(L, cli, scene);
    if (rc >= 0) return rc;

    int w = lua_gettop(L);
    if (serve) { return keel_cli_serve_world(L, cli, w, scene, port, bind, false, frames_s ? frames : -1, dt); }
    if (luaL_loadbuffer(L, run_chunk, sizeof run_chunk - 1, "=keel run") != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pushvalue(L, w);
    lua_pushstring(L, scene);
    lua_pushinteger(L, frames);
    lua_pushnumber(L, dt);
    if (save) lua_pushstring(L, save);
    else lua_pushnil(L);
    lua_pushboolean(L, isatty(STDOUT_FILENO));
    lua_pushcfunction(L, keel_cli_l_now);
    lua_pushcfunction(L, keel_cli_l_loop_stopped);
    lua_pushboolean(L, play);
    lua_pushboolean(L, cli->watch);
    lua_pushboolean(L, profile);
    if (autosave_s) lua_pushnumber(L, autosave);
    else lua_pushnil(L);
    if (autosave_path) lua_pushstring(L, autosave_path);
    else lua_pushnil(L);
    if (record) lua_pushstring(L, record);
    else lua_pushnil(L);
    lua_pushinteger(L, every);
    keel_cli_loop_signals(L, true, false);
    int status = keel_cli_call(L, 15, 2, false);
    keel_cli_loop_signals(L, false, false);
    if (keel_cli_loop_stopped()) {
        /* Ended by ctrl-c: die of it, so a calling shell or make stops too. */
        if (status != LUA_OK) keel_cli_report(cli, L);
        fflush(stdout);
        fflush(stderr);
        raise(SIGINT);
    }
    if (status != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    if (lua_isstring(L, -1)) {
        fprintf(stderr, "%s: run: cannot save %s: %s\n", cli->progname, save, lua_tostring(L, -1));
        return KEEL_EXIT_USAGE;
    }
    /* Callback failures are errors in the input (its kinds' scripts). */
    return lua_tointeger(L, -2) > 0 ? KEEL_EXIT_INPUT : KEEL_EXIT_OK;
}
