/* verb_serve.c — the live channel from the program: `keel serve SCENE` and `keel run SCENE --serve`. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

/* Serves the world (paused or running) until ctrl-c, or `frames` frames when >= 0: lua/keel/cli/serve.lua. */
static const char serve_chunk[] = "return require 'keel.cli.serve'.serve(...)\n";

bool keel_cli_parse_port(keel_cli *cli, const char *s, lua_Integer *port)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0 || v > 65535) {
        keel_cli_usage_error(cli, "a port is a number 0..65535, not '%s'", s);
        return false;
    }
    *port = v;
    return true;
}

int keel_cli_serve_world(lua_State *L, keel_cli *cli, int world, const char *scene, lua_Integer port,
                         const char *bind, bool paused, lua_Integer frames, double dt)
{
    if (luaL_loadbuffer(L, serve_chunk, sizeof serve_chunk - 1, "=keel serve") != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pushvalue(L, world);
    lua_pushstring(L, scene);
    lua_pushinteger(L, port);
    lua_pushstring(L, bind ? bind : "127.0.0.1");
    lua_pushboolean(L, paused);
    lua_pushinteger(L, frames);
    lua_pushnumber(L, dt);
    lua_pushcfunction(L, keel_cli_l_loop_stopped);
    lua_pushboolean(L, cli->watch);
    keel_cli_loop_signals(L, true, true);
    int status = keel_cli_call(L, 9, 2, false);
    keel_cli_loop_signals(L, false, true);
    if (status != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    if (lua_isnil(L, -2)) {
        fprintf(stderr, "%s: serve: %s\n", cli->progname, lua_tostring(L, -1));
        return KEEL_EXIT_USAGE;
    }
    return KEEL_EXIT_OK;
}

/* ---- keel serve SCENE [--port N] [--bind ADDR] [--watch] ---- */
int keel_cli_serve(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    const char *port_s = NULL, *bind = NULL;
    const keel_cli_opt opts[] = { { "--port", &port_s, NULL }, { "--bind", &bind, NULL }, { "--watch", NULL, &cli->watch } };
    int n = keel_cli_parse(cli, argc, argv, opts, 3);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1) {
        keel_cli_usage_error(cli, "serve: expected one SCENE");
        return KEEL_EXIT_USAGE;
    }
    lua_Integer port = 27760;
    if (port_s && !keel_cli_parse_port(cli, port_s, &port)) return KEEL_EXIT_USAGE;
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    if (!keel_cli_require(cli, L, "keel", "keel")) return KEEL_EXIT_USAGE;
    rc = keel_cli_load_world(L, cli, argv[0]);
    if (rc >= 0) return rc;
    return keel_cli_serve_world(L, cli, lua_gettop(L), argv[0], port, bind, true, -1, 1.0 / 60.0);
}
