/* kinds_find.c — where the program looks for kinds without --kinds (bundled, ./kinds, the
 * nearest kinds/ from the scene's folder up), and the one line saying a scene's kinds were not found. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The nearest `kinds/` directory from the folder of `scene` upward, as git finds
 * .git; malloc'd absolute path, or NULL. */
static char *nearest_kinds(const char *scene)
{
    char *abs = realpath(scene, NULL);
    if (!abs) return NULL;
    char *slash = strrchr(abs, '/');
    while (slash) {
        *slash = '\0'; /* abs is now the folder */
        size_t n = strlen(abs) + sizeof "/kinds";
        char *p = malloc(n);
        if (!p) abort(); /* keel treats OOM as fatal */
        snprintf(p, n, "%s/kinds", abs);
        if (is_dir(p)) {
            free(abs);
            return p;
        }
        free(p);
        slash = strrchr(abs, '/');
    }
    free(abs);
    return NULL;
}

/* Appends `text` to the list at stack index `list`. */
static void note_searched(lua_State *L, int list, const char *text)
{
    lua_pushstring(L, text);
    lua_rawseti(L, list, (lua_Integer)lua_rawlen(L, list) + 1);
}

int keel_cli_default_kinds(lua_State *L, int mod, const keel_cli *cli)
{
    int failed = 0;
    lua_newtable(L); /* kindfiles.searched: every place looked at, for the unknown-kinds line */
    int list = lua_gettop(L);
    char *dirs[3] = { keel_embed_data_path("lua/kinds", "kinds"), NULL, NULL };
    if (is_dir("kinds")) dirs[1] = strdup("kinds");
    if (cli->scene) dirs[2] = nearest_kinds(cli->scene);
    char *real[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 3; i++) {
        if (!dirs[i]) {
            if (i == 1) note_searched(L, list, "./kinds (none)");
            if (i == 2 && cli->scene) {
                lua_pushfstring(L, "kinds/ above %s (none)", cli->scene);
                note_searched(L, list, lua_tostring(L, -1));
                lua_pop(L, 1);
            }
            continue;
        }
        real[i] = realpath(dirs[i], NULL);
        bool seen = false; /* ./kinds may be the scene's own */
        for (int j = 0; j < i; j++) seen = seen || (real[i] && real[j] && strcmp(real[i], real[j]) == 0);
        if (seen) continue;
        note_searched(L, list, dirs[i]);
        lua_getfield(L, mod, "load");
        lua_pushstring(L, dirs[i]);
        /* raises only on OOM, which aborts: nothing here leaks on a Lua error otherwise */
        if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
            fprintf(stderr, "%s: %s\n", cli->progname, lua_tostring(L, -1));
            failed++;
        } else {
            failed += (int)lua_tointeger(L, -1);
        }
        lua_pop(L, 1);
    }
    for (int i = 0; i < 3; i++) {
        free(dirs[i]);
        free(real[i]);
    }
    lua_setfield(L, mod, "searched");
    return failed;
}

/* The "KIND is not declared: N components kept" warnings at `warnings` as one line with where
 * kinds were looked for: lua/keel/cli/unknown_kinds.lua. */
static const char summary_chunk[] = "require 'keel.cli.unknown_kinds'.summary(...)\n";

void keel_cli_unknown_summary(lua_State *L, const keel_cli *cli, const char *path, int warnings)
{
    warnings = lua_absindex(L, warnings);
    if (luaL_loadbuffer(L, summary_chunk, sizeof summary_chunk - 1, "=keel unknown kinds") != LUA_OK) {
        lua_pop(L, 1);
        return;
    }
    lua_pushvalue(L, warnings);
    lua_pushstring(L, path);
    lua_pushstring(L, cli->progname);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) lua_pop(L, 1); /* a summary line is not worth failing a load */
}
