/* verb_mcp.c — `keel mcp SCENE`: the live channel as Model Context Protocol tools on stdin/stdout. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

/* The world is served paused (as by `keel serve`): nothing steps until world_step asks. The
 * protocol is lua/keel/mcp.lua's, run by lua/keel/cli/mcp.lua; stdout carries only its messages,
 * diagnostics go to stderr. */
static const char mcp_chunk[] = "return require 'keel.cli.mcp'.mcp(...)\n";

int keel_cli_mcp(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    int n = keel_cli_parse(cli, argc, argv, NULL, 0);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1) {
        keel_cli_usage_error(cli, "mcp: expected one SCENE");
        return KEEL_EXIT_USAGE;
    }
    const char *scene = argv[0];
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    if (!keel_cli_require(cli, L, "keel", "keel")) return KEEL_EXIT_USAGE;
    size_t len = strlen(scene);
    bool replay = len > 8 && strcmp(scene + len - 8, ".keelrec") == 0; /* a recording: its replay is served */
    if (replay) {
        lua_pushnil(L); /* the world is the replay's, opened by keel.cli.mcp */
    } else {
        rc = keel_cli_load_world(L, cli, scene);
        if (rc >= 0) return rc;
    }
    int w = lua_gettop(L);
    if (luaL_loadbuffer(L, mcp_chunk, sizeof mcp_chunk - 1, "=keel mcp") != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pushvalue(L, w);
    lua_pushstring(L, scene);
    if (keel_cli_call(L, 2, 0, false) != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    return KEEL_EXIT_OK;
}
