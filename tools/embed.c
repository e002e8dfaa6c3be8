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
#include "lua_host.h" /* luaopen_keel_core: bindings/lua_module.c, linked into the program */

#ifndef KEEL_SOURCE_DIR
#define KEEL_SOURCE_DIR "."
#endif
#ifndef KEEL_BUILD_BINDIR
#define KEEL_BUILD_BINDIR "" /* none: every keel counts as installed */
#endif
#ifndef KEEL_INSTALL_LUADIR
#define KEEL_INSTALL_LUADIR "/usr/local/share/lua/5.4"
#endif
#ifndef KEEL_INSTALL_DATADIR
#define KEEL_INSTALL_DATADIR "/usr/local/share/keel"
#endif
/* The same two directories relative to the installed program's own (a moved prefix, a DESTDIR
 * staging copy, a LuaRocks tree whose bin/ holds a copy of the program). */
#ifndef KEEL_LUADIR_FROM_BINDIR
#define KEEL_LUADIR_FROM_BINDIR "../share/lua/5.4"
#endif
#ifndef KEEL_DATADIR_FROM_BINDIR
#define KEEL_DATADIR_FROM_BINDIR "../share/keel"
#endif
/* Where a LuaRocks tree keeps Lua files, relative to its bin/ (the rock's own lua/ is moved there). */
#define KEEL_ROCKS_LUADIR_FROM_BINDIR "../share/lua/5.4"

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* The directory of the running program, resolved ("" when unknown). */
static const char *self_dir(void)
{
    static char dir[PATH_MAX];
    static bool known;
    if (!known) {
        known = true;
        if (realpath("/proc/self/exe", dir)) {
            char *slash = strrchr(dir, '/');
            if (slash) *slash = '\0';
        } else dir[0] = '\0';
    }
    return dir;
}

/* Only the program in the build tree reads the source tree (so edits there take effect at
 * once); any other copy (installed, in a LuaRocks tree) uses its installed files even while the
 * clone it was built from is still there. */
static bool in_build_tree(void)
{
    static int known = -1;
    if (known < 0) {
        char build[PATH_MAX];
        known = KEEL_BUILD_BINDIR[0] && self_dir()[0] && realpath(KEEL_BUILD_BINDIR, build) &&
            strcmp(self_dir(), build) == 0;
    }
    return known;
}

/* "<program's dir>/<rel>/<leaf>" (leaf may be ""), malloc'd; NULL when the program's directory is unknown. */
static char *from_self(const char *rel, const char *leaf)
{
    if (!self_dir()[0]) return NULL;
    size_t n = strlen(self_dir()) + strlen(rel) + strlen(leaf) + 3;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s%s%s", self_dir(), rel, leaf[0] ? "/" : "", leaf);
    return p;
}

static char *join(const char *root, const char *rel)
{
    size_t n = strlen(root) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", root, rel);
    return p;
}

char *keel_embed_data_path(const char *src_rel, const char *inst_rel)
{
    char *tries[3] = { NULL, NULL, NULL };
    if (in_build_tree()) tries[0] = join(KEEL_SOURCE_DIR, src_rel);
    else {
        tries[0] = from_self(KEEL_DATADIR_FROM_BINDIR, inst_rel);
        tries[1] = join(KEEL_INSTALL_DATADIR, inst_rel);
    }
    char *found = NULL;
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        if (!found && tries[i]) found = realpath(tries[i], NULL); /* NULL when absent; "bin/.." resolved */
        free(tries[i]);
    }
    return found;
}

/* Adds "DIR/?.lua;DIR/?/init.lua;" when DIR holds keel's Lua files and is not `added` yet. */
static void add_lua_dir(luaL_Buffer *b, char *dir, char **added, size_t *nadded)
{
    if (!dir) return;
    char *real = realpath(dir, NULL); /* NULL when absent; "bin/.." resolved, so copies compare equal */
    free(dir);
    dir = real;
    if (!dir) return;
    char *init = join(dir, "keel/init.lua");
    bool fresh = init && exists(init);
    free(init);
    for (size_t i = 0; fresh && i < *nadded; i++) fresh = strcmp(added[i], dir) != 0;
    if (!fresh) {
        free(dir);
        return;
    }
    luaL_addstring(b, dir), luaL_addstring(b, "/?.lua;");
    luaL_addstring(b, dir), luaL_addstring(b, "/?/init.lua;");
    added[(*nadded)++] = dir;
}

static void set_package_path(lua_State *L)
{
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    const char *old = lua_tostring(L, -1);
    luaL_Buffer b; /* may keep a box on the stack until pushed: nothing else touches the stack meanwhile */
    luaL_buffinit(L, &b);
    char *added[3];
    size_t nadded = 0;
    if (in_build_tree()) add_lua_dir(&b, join(KEEL_SOURCE_DIR, "lua"), added, &nadded);
    else {
        add_lua_dir(&b, from_self(KEEL_LUADIR_FROM_BINDIR, ""), added, &nadded);
        add_lua_dir(&b, from_self(KEEL_ROCKS_LUADIR_FROM_BINDIR, ""), added, &nadded);
        char *inst = malloc(sizeof KEEL_INSTALL_LUADIR);
        if (inst) memcpy(inst, KEEL_INSTALL_LUADIR, sizeof KEEL_INSTALL_LUADIR);
        add_lua_dir(&b, inst, added, &nadded);
    }
    for (size_t i = 0; i < nadded; i++) free(added[i]);
    if (old) luaL_addstring(&b, old);
    luaL_pushresult(&b);
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);
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
