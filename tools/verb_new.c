/* verb_new.c — `keel new NAME`: a project scaffold (kinds, a scene, a spec, .busted, .gitattributes, README). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

/* The scaffold's texts are Lua's: lua/keel/cli/new.lua fills the templates in lua/keel/cli/new/
 * and returns { dirs, files, ns } (or nil, why); this side checks NAME and writes (keel_write_atomic). */
static const char new_chunk[] = "return require 'keel.cli.new'.scaffold(...)\n";

static bool make_dir(const keel_cli *cli, const char *path)
{
    if (mkdir(path, 0777) == 0) return true;
    fprintf(stderr, "%s: new: cannot create %s: %s\n", cli->progname, path, strerror(errno));
    return false;
}

int keel_cli_new(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    int n = keel_cli_parse(cli, argc, argv, NULL, 0);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1 || argv[0][0] == '\0') {
        keel_cli_usage_error(cli, "new: expected one NAME");
        return KEEL_EXIT_USAGE;
    }
    const char *dir = argv[0];
    struct stat st;
    if (stat(dir, &st) == 0) {
        fprintf(stderr, "%s: new: %s already exists: nothing written\n", cli->progname, dir);
        return KEEL_EXIT_USAGE;
    }
    lua_createtable(L, 3, 0); /* @U1@.. in the templates */
    for (int i = 0; i < 3; i++) {
        char uuid[37];
        keel_uuid_format(keel_uuid_v4(), uuid);
        lua_pushstring(L, uuid);
        lua_rawseti(L, -2, i + 1);
    }
    int uuids = lua_gettop(L);
    if (luaL_loadbuffer(L, new_chunk, sizeof new_chunk - 1, "=keel new") != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pushstring(L, dir);
    lua_pushvalue(L, uuids);
    if (keel_cli_call(L, 2, 2, false) != LUA_OK) {
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    if (lua_isnil(L, -2)) { /* a template could not be read: an install without them */
        keel_cli_report(cli, L);
        return KEEL_EXIT_USAGE;
    }
    lua_pop(L, 1);
    int t = lua_gettop(L);

    if (!make_dir(cli, dir)) return KEEL_EXIT_USAGE;
    lua_getfield(L, t, "dirs");
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TSTRING; i++) {
        lua_pushfstring(L, "%s/%s", dir, lua_tostring(L, -1));
        bool ok = make_dir(cli, lua_tostring(L, -1));
        lua_pop(L, 2);
        if (!ok) return KEEL_EXIT_USAGE;
    }
    lua_pop(L, 2);
    lua_getfield(L, t, "files");
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        const char *path = lua_pushfstring(L, "%s/%s", dir, lua_tostring(L, -2));
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = keel_write_atomic(path, text, len, &d);
        keel_cli_print_diags(&d, path);
        keel_diags_free(&d);
        lua_pop(L, 4);
        if (s != KEEL_OK) return KEEL_EXIT_USAGE;
    }
    lua_pop(L, 2);
    lua_getfield(L, t, "ns");
    const char *ns = lua_tostring(L, -1);
    printf("created %s/: kinds/ (%s:spinner, the %s:spin system), scenes/main.yaml, spec/, .busted, "
           ".gitattributes, README.md\n"
           "  cd %s\n"
           "  keel run scenes/main.yaml     # run it\n"
           "  busted                        # its specs, under keel\n"
           "  keel repl scenes/main.yaml    # the REPL\n",
           dir, ns, ns, dir);
    return KEEL_EXIT_OK;
}
