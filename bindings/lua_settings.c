/* lua_settings.c — the scene's settings from Lua (registry.md, "Grid and scene settings"):
 * `w.settings` and `w.settings.grid` are live views (a read goes to the world, a write is
 * checked and applied at once), `w:_settings()` is the tree as plain tables (channel
 * `settings.get`) and `w:_set_setting(path, value)` the write that returns its inverse
 * (keel.history's set_setting). Every write goes through keel_world_set_settings: the same
 * checks as a scene file's, and one revision bump. */
#include <math.h>
#include <string.h>

#include "lua_internal.h"

static const keel_lua_type mt_settings = { "keel.Settings" };

/* A view: its user value 1 is the World; `grid` says which table it shows. */
typedef struct view { bool grid; } view;

static const char *const display_names[] = { "lines", "dots", "none" };
static const char *const color_keys[] = { "minor_color", "major_color", "u_color", "v_color" };

static double *color_of(keel_grid *g, int c)
{
    double *slots[] = { g->minor_color, g->major_color, g->u_color, g->v_color };
    return slots[c];
}

static int color_index(const char *k)
{
    for (int c = 0; c < 4; c++)
        if (strcmp(k, color_keys[c]) == 0) return c;
    return -1;
}

static void push_array(lua_State *L, const double *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* Pushes grid key `k`; false (nothing pushed) when the grid has no such key. */
static bool push_grid_key(lua_State *L, const keel_grid *g, const char *k)
{
    int c = color_index(k);
    if (c >= 0) push_array(L, color_of((keel_grid *)g, c), 4);
    else if (strcmp(k, "enabled") == 0) lua_pushboolean(L, g->enabled);
    else if (strcmp(k, "origin") == 0) push_array(L, g->origin, 3);
    else if (strcmp(k, "orientation") == 0) push_array(L, g->orientation, 4);
    else if (strcmp(k, "base_spacing") == 0) lua_pushnumber(L, g->base_spacing);
    else if (strcmp(k, "major_line_every") == 0) lua_pushinteger(L, (lua_Integer)g->major_line_every);
    else if (strcmp(k, "fade") == 0) lua_pushnumber(L, g->fade);
    else if (strcmp(k, "display") == 0) lua_pushstring(L, display_names[g->display]);
    else return false;
    return true;
}

static const char *const grid_keys[] = { "enabled", "origin", "orientation", "base_spacing", "major_line_every",
                                         "minor_color", "major_color", "u_color", "v_color", "fade", "display",
                                         NULL };

static void push_grid(lua_State *L, const keel_grid *g)
{
    lua_createtable(L, 0, 11);
    for (int i = 0; grid_keys[i]; i++) {
        push_grid_key(L, g, grid_keys[i]);
        lua_setfield(L, -2, grid_keys[i]);
    }
}

/* An array of n finite numbers at idx into out; false with an error in d. */
static bool read_array(lua_State *L, int idx, int n, double *out, const char *path, keel_diags *d)
{
    if (lua_type(L, idx) != LUA_TTABLE || lua_rawlen(L, idx) != (size_t)n) {
        KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s must be an array of %d numbers", path, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        int isnum = 0;
        lua_rawgeti(L, idx, i + 1);
        out[i] = lua_tonumberx(L, -1, &isnum);
        lua_pop(L, 1);
        if (!isnum || !isfinite(out[i])) {
            KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s[%d] must be a finite number", path, i + 1);
            return false;
        }
    }
    return true;
}

/* Grid key `k` of g from the Lua value at idx (keel_world_set_settings checks the ranges). */
static bool read_grid_key(lua_State *L, keel_grid *g, const char *k, int idx, keel_diags *d)
{
    char path[64];
    snprintf(path, sizeof path, "settings.grid.%.40s", k);
    int c = color_index(k);
    if (c >= 0) return read_array(L, idx, 4, color_of(g, c), path, d);
    if (strcmp(k, "origin") == 0) return read_array(L, idx, 3, g->origin, path, d);
    if (strcmp(k, "orientation") == 0) return read_array(L, idx, 4, g->orientation, path, d);
    if (strcmp(k, "enabled") == 0) {
        if (lua_type(L, idx) != LUA_TBOOLEAN)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s must be a boolean", path), false;
        g->enabled = lua_toboolean(L, idx);
        return true;
    }
    if (strcmp(k, "base_spacing") == 0 || strcmp(k, "fade") == 0) {
        if (lua_type(L, idx) != LUA_TNUMBER)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s must be a number", path), false;
        *(k[0] == 'f' ? &g->fade : &g->base_spacing) = lua_tonumber(L, idx);
        return true;
    }
    if (strcmp(k, "major_line_every") == 0) {
        if (!lua_isinteger(L, idx))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s must be an integer", path), false;
        g->major_line_every = (int64_t)lua_tointeger(L, idx);
        return true;
    }
    if (strcmp(k, "display") == 0) {
        const char *s = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : "";
        for (int i = 0; i < 3; i++)
            if (strcmp(s, display_names[i]) == 0) {
                g->display = (keel_grid_display)i;
                return true;
            }
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "%s must be lines, dots or none", path), false;
    }
    KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "the grid has no setting '%s'", k);
    return false;
}

/* Sets `path` ("grid.KEY", "grid" with a table of keys, or either after "settings.") to the value
 * at idx; pushes the inverse command when `inverse`. Raises on a refusal; nothing changes then. */
static void set_setting(lua_State *L, keel_lua_world *lw, const char *path, int idx, bool inverse)
{
    keel_diags d;
    keel_diags_init(&d);
    const char *p = strncmp(path, "settings.", 9) == 0 ? path + 9 : path;
    keel_grid g = *keel_world_grid(lw->w);
    bool ok;
    if (strcmp(p, "grid") == 0) {
        ok = lua_type(L, idx) == LUA_TTABLE;
        if (!ok) KEEL_ERROR(&d, KEEL_INVALID_ARGUMENT, "settings.grid", "settings.grid must be a table of settings");
        lua_pushnil(L);
        while (ok && lua_next(L, idx)) {
            ok = lua_type(L, -2) == LUA_TSTRING ? read_grid_key(L, &g, lua_tostring(L, -2), lua_gettop(L), &d)
                                                : (KEEL_ERROR(&d, KEEL_INVALID_ARGUMENT, "settings.grid",
                                                              "settings.grid's keys are names"),
                                                   false);
            lua_pop(L, ok ? 1 : 2);
        }
    } else if (strncmp(p, "grid.", 5) == 0) {
        ok = read_grid_key(L, &g, p + 5, idx, &d);
    } else {
        ok = false;
        KEEL_ERROR(&d, KEEL_INVALID_ARGUMENT, path, "no setting '%s' (settings hold grid.*)", path);
    }
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = ok ? keel_world_set_settings(lw->w, NULL, &g, inverse ? &inv : NULL, &d) : KEEL_INVALID_ARGUMENT;
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    if (inverse) keel__lua_push_cmd(L, &inv);
}

/* ---- the views ---- */

static keel_lua_world *view_world(lua_State *L, int idx, view **v)
{
    *v = keel__lua_checkudata(L, idx, &mt_settings);
    lua_getiuservalue(L, idx, 1);
    keel_lua_world *lw = keel__lua_checklw(L, -1);
    lua_pop(L, 1);
    return lw;
}

static void push_view(lua_State *L, int world, bool grid)
{
    view *v = lua_newuserdatauv(L, sizeof *v, 1);
    v->grid = grid;
    lua_pushvalue(L, world);
    lua_setiuservalue(L, -2, 1);
    keel__lua_setmt(L, &mt_settings);
}

static int view_index(lua_State *L)
{
    view *v;
    keel_lua_world *lw = view_world(L, 1, &v);
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
    if (!v->grid) {
        if (strcmp(k, "grid") != 0) return 0;
        lua_getiuservalue(L, 1, 1);
        push_view(L, lua_gettop(L), true);
        return 1;
    }
    return push_grid_key(L, keel_world_grid(lw->w), k) ? 1 : 0;
}

static int view_newindex(lua_State *L)
{
    view *v;
    keel_lua_world *lw = view_world(L, 1, &v);
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";
    char path[80];
    snprintf(path, sizeof path, v->grid ? "grid.%.60s" : "%.60s", k);
    set_setting(L, lw, path, 3, false);
    return 0;
}

static int raw_next(lua_State *L)
{
    lua_settop(L, 2);
    if (lua_next(L, 1)) return 2;
    lua_pushnil(L);
    return 1;
}

/* pairs() walks a copy of the live values. */
static int view_pairs(lua_State *L)
{
    view *v;
    keel_lua_world *lw = view_world(L, 1, &v);
    lua_pushcfunction(L, raw_next);
    if (v->grid) push_grid(L, keel_world_grid(lw->w));
    else {
        lua_createtable(L, 0, 1);
        push_grid(L, keel_world_grid(lw->w));
        lua_setfield(L, -2, "grid");
    }
    lua_pushnil(L);
    return 3;
}

static int view_tostring(lua_State *L)
{
    view *v;
    view_world(L, 1, &v);
    lua_pushstring(L, v->grid ? "keel.Settings (grid)" : "keel.Settings");
    return 1;
}

/* ---- World methods ---- */

/* w:_settings() -> { grid = { ... } }: a copy, for the channel's settings.get. */
static int w_settings(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    lua_createtable(L, 0, 1);
    push_grid(L, keel_world_grid(lw->w));
    lua_setfield(L, -2, "grid");
    return 1;
}

/* w:_set_setting(path, value) -> the inverse command */
static int w_set_setting(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING) return keel__lua_argerror(L, 2, "a settings path expected");
    lua_settop(L, 3);
    set_setting(L, lw, lua_tostring(L, 2), 3, true);
    return 1;
}

const luaL_Reg keel__lua_settings_methods[] = { { "_settings", w_settings },
                                                { "_set_setting", w_set_setting },
                                                { NULL, NULL } };

void keel__lua_push_settings(lua_State *L, int world) { push_view(L, world, false); }

void keel__lua_open_settings(lua_State *L)
{
    static const luaL_Reg mt[] = { { "__index", view_index },
                                   { "__newindex", view_newindex },
                                   { "__pairs", view_pairs },
                                   { "__tostring", view_tostring },
                                   { NULL, NULL } };
    keel__lua_newmt(L, &mt_settings);
    luaL_setfuncs(L, mt, 0);
    lua_pop(L, 1);
}
