/* verb_replay.c — `keel replay FILE [--to FRAME] [--verify] [--serve [PORT]]`: a recording
 * re-simulated (design/replay.md); the loop and its report are lua/keel/cli/replay.lua. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

static const char replay_chunk[] = "return require 'keel.cli.replay'.run(...)\n";

int keel_cli_replay(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    const char *to_s = NULL, *serve_port = NULL, *bind = NULL;
    bool verify = false, serve = false;
    int kept = 0;
    for (int i = 0; i < argc; i++) { /* --serve takes an optional PORT, as in keel run */
        if (strcmp(argv[i], "--serve") == 0) {
            serve = true;
            if (i + 1 < argc && argv[i + 1][0] && strspn(argv[i + 1], "0123456789") == strlen(argv[i + 1]))
                serve_port = argv[++i];
            continue;
        }
        argv[kept++] = argv[i];
    }
    argc = kept;
    const keel_cli_opt opts[] = { { "--to", &to_s, NULL }, { "--verify", NULL, &verify }, { "--bind", &bind, NULL } };
    int n = keel_cli_parse(cli, argc, argv, opts, 3);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1) {
        keel_cli_usage_error(cli, "replay: expected one FILE (a recording: keel run --record FILE)");
        return KEEL_EXIT_USAGE;
    }
    lua_Integer to = -1;
    if (to_s) {
        char *end;
        long long v = strtoll(to_s, &end, 10);
        if (*to_s == '\0' || *end != '\0' || v < 0) {
            keel_cli_usage_error(cli, "replay: --to needs a frame number >= 0, not '%s'", to_s);
            return KEEL_EXIT_USAGE;
        }
        to = (lua_Integer)v;
    }
    lua_Integer port = 27760;
    if (serve_port && !keel_cli_parse_port(cli, serve_port, &port)) return KEEL_EXIT_USAGE;
    if (bind && !serve) {
        keel_cli_usage_error(cli, "replay: --bind goes with --serve");
        return KEEL_EXIT_USAGE;
    }
    int rc = keel_cli_setup(L, cli, false);
    if (rc >= 0) return rc;
    if (!keel_cli_require(cli, L, "keel", "keel")) return KEEL_EXIT_USAGE;
    if (luaL_loadbuffer(L, replay_chunk, sizeof replay_chunk - 1, "=keel replay") != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pushstring(L, argv[0]);
    lua_pushinteger(L, to);
    lua_pushboolean(L, verify);
    lua_pushboolean(L, serve);
    lua_pushinteger(L, port);
    lua_pushstring(L, bind ? bind : "127.0.0.1");
    lua_pushcfunction(L, keel_cli_l_loop_stopped);
    keel_cli_loop_signals(L, true, serve);
    int status = keel_cli_call(L, 7, 1, false);
    keel_cli_loop_signals(L, false, serve);
    if (status != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_INPUT;
    }
    return (int)lua_tointeger(L, -1);
}
