/* verb_net.c — `keel run [SCENE] --host [PORT]` serves a scene's world to clients, in real time
 * until ctrl-c (or --frames); `keel run --connect ADDR:PORT` mirrors a host's world and prints
 * what it holds once a second. Both use keel.net (bindings/lua_net.c). */
#include "cli.h"

#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static int l_sleep(lua_State *L)
{
    double s = luaL_checknumber(L, 1);
    if (s > 0 && s < 10) {
        struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
        nanosleep(&ts, NULL);
    }
    return 0;
}


/* The frame loops are Lua: lua/keel/cli/net.lua. */
static const char host_chunk[] = "return require 'keel.cli.net'.host(...)\n";
static const char connect_chunk[] = "return require 'keel.cli.net'.connect(...)\n";

int keel_cli_run_net(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    /* --host takes an optional PORT (the next word, when all digits); --connect ADDR:PORT */
    long port = -1;
    const char *connect = NULL;
    bool host = false;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--host")) {
            host = true;
            if (i + 1 < argc && argv[i + 1][0] && strspn(argv[i + 1], "0123456789") == strlen(argv[i + 1]))
                port = strtol(argv[++i], NULL, 10);
        } else if (!strncmp(argv[i], "--host=", 7)) {
            host = true;
            port = strtol(argv[i] + 7, NULL, 10);
        } else if (!strcmp(argv[i], "--connect") && i + 1 < argc) connect = argv[++i];
        else if (!strncmp(argv[i], "--connect=", 10)) connect = argv[i] + 10;
        else argv[n++] = argv[i];
    }
    if (!host && !connect) return -1;
#ifdef KEEL_NO_NET
    fprintf(stderr, "%s: run: %s: this keel was built without replication (KEEL_NET=OFF)\n", cli->progname,
            host ? "--host" : "--connect");
    return KEEL_EXIT_USAGE;
#endif
    argc = n;
    if (host && connect) {
        keel_cli_usage_error(cli, "run: --host and --connect together");
        return KEEL_EXIT_USAGE;
    }
    if (host && (port < 0 || port > 65535)) port = port < 0 ? 27761 : -2;
    if (port == -2) {
        keel_cli_usage_error(cli, "run: --host PORT needs a port in 0..65535");
        return KEEL_EXIT_USAGE;
    }
    const char *frames_s = NULL, *dt_s = NULL, *cname = NULL, *bind = NULL;
    const keel_cli_opt opts[] = { { "--frames", &frames_s, NULL },
                                  { "--dt", &dt_s, NULL },
                                  { "--name", &cname, NULL },
                                  { "--bind", &bind, NULL } };
    int npos = keel_cli_parse(cli, argc, argv, opts, 4);
    if (npos < 0) return KEEL_EXIT_USAGE;
    if (connect && bind) {
        keel_cli_usage_error(cli, "run: --bind goes with --host (or --serve)");
        return KEEL_EXIT_USAGE;
    }
    if (npos > (connect ? 0 : 1)) {
        keel_cli_usage_error(cli, connect ? "run: --connect takes no SCENE" : "run: expected at most one SCENE");
        return KEEL_EXIT_USAGE;
    }
    lua_Integer frames = -1; /* until ctrl-c */
    double dt = 1.0 / 60.0;
    char *end;
    if (frames_s) {
        long long v = strtoll(frames_s, &end, 10);
        if (!*frames_s || *end || v < 0) {
            keel_cli_usage_error(cli, "run: --frames needs a whole number >= 0, not '%s'", frames_s);
            return KEEL_EXIT_USAGE;
        }
        frames = (lua_Integer)v;
    }
    if (dt_s) {
        dt = strtod(dt_s, &end);
        if (!*dt_s || *end || !(dt > 0 && dt < 10)) {
            keel_cli_usage_error(cli, "run: --dt needs a number of seconds in (0, 10), not '%s'", dt_s);
            return KEEL_EXIT_USAGE;
        }
    }
    char addr[256];
    long cport = 0;
    if (connect) {
        const char *colon = strrchr(connect, ':');
        size_t alen = colon ? (size_t)(colon - connect) : 0;
        cport = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || !alen || alen >= sizeof addr || !colon[1] || *end || cport < 1 || cport > 65535) {
            keel_cli_usage_error(cli, "run: --connect needs ADDR:PORT, not '%s'", connect);
            return KEEL_EXIT_USAGE;
        }
        memcpy(addr, connect, alen);
        addr[alen] = 0;
    }
    const char *scene = NULL;
    if (!connect) {
        scene = npos == 1 ? argv[0] : NULL;
        if (!scene && !(scene = keel_cli_push_demo(L, cli))) return KEEL_EXIT_USAGE;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    if (!keel_cli_require(cli, L, "keel", "keel")) return KEEL_EXIT_USAGE;
    int keel_idx = lua_gettop(L);
    int w = 0;
    if (scene) {
        rc = keel_cli_load_world(L, cli, scene);
        if (rc >= 0) return rc;
        w = lua_gettop(L);
    }
    const char *chunk = connect ? connect_chunk : host_chunk;
    if (luaL_loadbuffer(L, chunk, strlen(chunk), connect ? "=keel run --connect" : "=keel run --host") != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_getglobal(L, "keel");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushvalue(L, keel_idx);
    }
    if (connect) {
        lua_pushstring(L, addr);
        lua_pushinteger(L, cport);
        lua_pushstring(L, cname ? cname : "client");
    } else {
        lua_pushvalue(L, w);
        lua_pushstring(L, scene);
        lua_pushinteger(L, port);
    }
    lua_pushinteger(L, frames);
    lua_pushnumber(L, dt);
    lua_pushcfunction(L, keel_cli_l_now);
    lua_pushcfunction(L, l_sleep);
    lua_pushcfunction(L, keel_cli_l_loop_stopped);
    if (connect) lua_pushnil(L);
    else if (bind) lua_pushstring(L, bind);
    else lua_pushnil(L);
    keel_cli_loop_signals(L, true, true);
    int status = keel_cli_call(L, 10, 1, false);
    keel_cli_loop_signals(L, false, true);
    if (status != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    return lua_tointeger(L, -1) ? KEEL_EXIT_INPUT : KEEL_EXIT_OK;
}
