/* embed.c — embedding keel's Lua side in a program: libraries, package paths, keel.core, kinds dirs. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "../tools/keel_cli.h"

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

/* The registry key of the table of kind files: { dirs = {...}, files = { {path, mtime, size}, ... },
 * keys = { [kind key] = path of the file that declared it, or true } } */
#define KINDFILES "keel.kindfiles"

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
    lua_newtable(L);
    lua_newtable(L);
    lua_setfield(L, -2, "dirs");
    lua_newtable(L);
    lua_setfield(L, -2, "files");
    lua_newtable(L);
    lua_setfield(L, -2, "keys");
    lua_setfield(L, LUA_REGISTRYINDEX, KINDFILES);
}

/* The error handler of a kind file (its path is upvalue 1). An error object
 * (keel.kind's InvalidArgument, ...) carries no position, so it is prefixed
 * with the file's line that made the failing call: "FILE:LINE: Code: message". */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
            const char *path = lua_tostring(L, lua_upvalueindex(1));
            lua_Debug ar;
            for (int level = 1; path && lua_getstack(L, level, &ar); level++) {
                if (lua_getinfo(L, "Sl", &ar) && ar.source[0] == '@' && strcmp(ar.source + 1, path) == 0
                    && ar.currentline > 0) {
                    lua_pushfstring(L, "%s:%d: %s", path, ar.currentline, lua_tostring(L, -1));
                    return 1;
                }
            }
            lua_pushfstring(L, "%s: %s", path ? path : "?", lua_tostring(L, -1));
            return 1;
        }
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with_lua(const char *s)
{
    size_t n = strlen(s);
    return n > 4 && strcmp(s + n - 4, ".lua") == 0;
}

/* KINDFILES.keys[key] = `path` (a string), or true, for every registered kind
 * key not there yet (stack: KINDFILES at top). Called before and after a
 * file runs, it tells which file declared a key (for the freeze's diagnostics). */
static void note_keys(lua_State *L, const char *path)
{
    lua_getfield(L, -1, "keys");
    for (size_t i = 0, n = keel_kind_count(); i < n; i++) {
        const keel_kind_desc *desc = keel_kind_describe(keel_kind_at(i));
        if (!desc || !desc->key) continue;
        if (lua_getfield(L, -1, desc->key) == LUA_TNIL) {
            if (path) lua_pushstring(L, path);
            else lua_pushboolean(L, 1);
            lua_setfield(L, -3, desc->key);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

const char *keel_embed_kind_file(lua_State *L, const char *key)
{
    lua_getfield(L, LUA_REGISTRYINDEX, KINDFILES);
    lua_getfield(L, -1, "keys");
    lua_getfield(L, -1, key);
    /* the string stays referenced by the registry table */
    const char *path = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 3);
    return path;
}

/* keel.kind while a kind file runs at start-up (upvalues: the real keel.kind,
 * the file's path, KINDFILES.keys). Two files declaring one key is legal (the
 * later replaces the earlier) but almost never meant: say so. */
static int kind_from_file(lua_State *L)
{
    const char *path = lua_tostring(L, lua_upvalueindex(2));
    if (lua_type(L, 1) == LUA_TTABLE && lua_getfield(L, 1, "key") == LUA_TSTRING) {
        const char *key = lua_tostring(L, -1);
        if (lua_getfield(L, lua_upvalueindex(3), key) == LUA_TSTRING && strcmp(lua_tostring(L, -1), path) != 0)
            fprintf(stderr, "keel: %s: warning: %s was already declared by %s; this declaration replaces it\n",
                    path, key, lua_tostring(L, -1));
        lua_pop(L, 2);
    } else if (lua_type(L, 1) == LUA_TTABLE) {
        lua_pop(L, 1);
    }
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* Swaps keel.kind for kind_from_file (on = true) or puts the real one back. */
static void watch_declarations(lua_State *L, const char *path, bool on)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "keel") != LUA_TTABLE) {
        lua_pop(L, 2);
        return;
    }
    if (on) {
        lua_getfield(L, -1, "kind");
        lua_pushstring(L, path);
        lua_getfield(L, LUA_REGISTRYINDEX, KINDFILES);
        lua_getfield(L, -1, "keys");
        lua_remove(L, -2);
        lua_pushcclosure(L, kind_from_file, 3);
    } else {
        lua_getfield(L, -1, "kind");
        if (lua_tocfunction(L, -1) == kind_from_file) lua_getupvalue(L, -1, 1);
        else lua_pushvalue(L, -1);
        lua_remove(L, -2);
    }
    lua_setfield(L, -2, "kind");
    lua_pop(L, 2);
}

/* Runs one kind file and records it in the KINDFILES table (stack: the table at top). */
static int run_kind_file(lua_State *L, const char *path)
{
    struct stat st;
    int failed = 0;
    note_keys(L, NULL);
    watch_declarations(L, path, true);
    lua_pushstring(L, path);
    lua_pushcclosure(L, msghandler, 1);
    int base = lua_gettop(L);
    if (luaL_loadfile(L, path) != LUA_OK || lua_pcall(L, 0, 0, base) != LUA_OK) {
        fprintf(stderr, "keel: %s\n", lua_tostring(L, -1));
        lua_pop(L, 1);
        failed = 1;
    }
    lua_pop(L, 1); /* msghandler */
    watch_declarations(L, path, false);
    note_keys(L, path);
    /* Recorded even when it failed, so reload() retries it once it changes. */
    lua_getfield(L, -1, "files");
    lua_createtable(L, 0, 3);
    lua_pushstring(L, path);
    lua_setfield(L, -2, "path");
    if (stat(path, &st) == 0) {
        lua_pushinteger(L, (lua_Integer)st.st_mtime);
        lua_setfield(L, -2, "mtime");
        lua_pushinteger(L, (lua_Integer)st.st_size);
        lua_setfield(L, -2, "size");
    }
    lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
    lua_pop(L, 1);
    return failed;
}

int keel_embed_load_kinds_dir(lua_State *L, const char *dir)
{
    lua_getfield(L, LUA_REGISTRYINDEX, KINDFILES);
    lua_getfield(L, -1, "dirs");
    lua_pushstring(L, dir);
    lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
    lua_pop(L, 1);

    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "keel: kinds directory %s: %s\n", dir, strerror(errno));
        lua_pop(L, 1);
        return 1;
    }
    /* Names are collected in a Lua table so an error cannot leak them. */
    lua_newtable(L);
    size_t n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.' || !ends_with_lua(ent->d_name)) continue;
        lua_pushfstring(L, "%s/%s", dir, ent->d_name);
        lua_rawseti(L, -2, (lua_Integer)++n);
    }
    closedir(d);
    const char **names = lua_newuserdatauv(L, (n ? n : 1) * sizeof *names, 0);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, -2, (lua_Integer)i + 1);
        names[i] = lua_tostring(L, -1);
        lua_pop(L, 1); /* still referenced by the table */
    }
    qsort(names, n, sizeof *names, cmp_names);
    int failed = 0;
    lua_pushvalue(L, -3); /* KINDFILES */
    for (size_t i = 0; i < n; i++)
        failed += run_kind_file(L, names[i]);
    lua_pop(L, 4);
    return failed;
}
