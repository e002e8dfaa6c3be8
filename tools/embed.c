/* embed.c — embedding keel's Lua side in a program: libraries, package paths, keel.core, bundled data. */
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "cli.h"

/* bindings/lua_module.c, linked into the program. */
int luaopen_keel_core(lua_State *L);

#ifndef KEEL_SOURCE_DIR
#define KEEL_SOURCE_DIR "."
#endif
#ifndef KEEL_INSTALL_LUADIR
#define KEEL_INSTALL_LUADIR "/usr/local/share/lua/5.4"
#endif
#ifndef KEEL_INSTALL_DATADIR
#define KEEL_INSTALL_DATADIR "/usr/local/share/keel"
#endif
#ifndef KEEL_INSTALL_BINDIR
#define KEEL_INSTALL_BINDIR "/usr/local/bin"
#endif

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* An installed keel uses its installed files; a keel in a build directory uses
 * the source tree it was built from (so edits there take effect at once). */
static bool running_installed(void)
{
    static int known = -1;
    if (known < 0) {
        char self[4096], bindir[4096];
        known = realpath("/proc/self/exe", self) && realpath(KEEL_INSTALL_BINDIR, bindir)
                && strncmp(self, bindir, strlen(bindir)) == 0 && self[strlen(bindir)] == '/';
    }
    return known;
}

char *keel_embed_data_path(const char *src_rel, const char *inst_rel)
{
    const char *roots[2] = { KEEL_SOURCE_DIR, KEEL_INSTALL_DATADIR };
    const char *rels[2] = { src_rel, inst_rel };
    if (running_installed()) {
        roots[0] = KEEL_INSTALL_DATADIR, roots[1] = KEEL_SOURCE_DIR;
        rels[0] = inst_rel, rels[1] = src_rel;
    }
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        size_t n = strlen(roots[i]) + strlen(rels[i]) + 2;
        char *p = malloc(n);
        if (!p) return NULL;
        snprintf(p, n, "%s/%s", roots[i], rels[i]);
        if (exists(p)) return p;
        free(p);
    }
    return NULL;
}

static void set_package_path(lua_State *L)
{
    lua_getglobal(L, "package");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (!running_installed() && is_dir(KEEL_SOURCE_DIR "/lua/keel"))
        luaL_addstring(&b, KEEL_SOURCE_DIR "/lua/?.lua;" KEEL_SOURCE_DIR "/lua/?/init.lua;");
    luaL_addstring(&b, KEEL_INSTALL_LUADIR "/?.lua;" KEEL_INSTALL_LUADIR "/?/init.lua;");
    lua_getfield(L, -2, "path");
    luaL_addvalue(&b);
    luaL_pushresult(&b);
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
}

void keel_embed_open(lua_State *L)
{
    luaL_openlibs(L);
    set_package_path(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_keel_core);
    lua_setfield(L, -2, "keel.core");
    lua_pop(L, 1);
}
