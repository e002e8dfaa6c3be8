/* lua_command.c — keel.Command: an inverse command as a userdata, and w:_apply(cmd) (keel.history's undo). */
#include <string.h>

#include "lua_internal.h"

typedef struct lcmd { keel_cmd cmd; } lcmd;

void keel__lua_push_cmd(lua_State *L, keel_cmd *cmd)
{
    lcmd *c = lua_newuserdatauv(L, sizeof *c, 0);
    memset(c, 0, sizeof *c);
    keel__lua_setmt(L, &keel__lua_mt_cmd);
    c->cmd = *cmd;
    memset(cmd, 0, sizeof *cmd);
}

static int cmd_gc(lua_State *L)
{
    lcmd *c = keel__lua_checkudata(L, 1, &keel__lua_mt_cmd);
    keel_cmd_free(&c->cmd);
    return 0;
}

static const char *const cmd_names[] = { "none", "spawn", "destroy", "add", "remove", "set", "reparent",
                                         "rename", "enable", "enable_component", "batch", "settings" };

static int cmd_tostring(lua_State *L)
{
    lcmd *c = keel__lua_checkudata(L, 1, &keel__lua_mt_cmd);
    int t = (int)c->cmd.type;
    lua_pushfstring(L, "keel.Command (%s)", t >= 0 && t <= KEEL_CMD_SETTINGS ? cmd_names[t] : "?");
    return 1;
}

static int cmd_index(lua_State *L)
{
    lcmd *c = keel__lua_checkudata(L, 1, &keel__lua_mt_cmd);
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : ""; /* other keys read nil */
    if (strcmp(k, "type") == 0) {
        int t = (int)c->cmd.type;
        lua_pushstring(L, t >= 0 && t <= KEEL_CMD_SETTINGS ? cmd_names[t] : "?");
    } else if (strcmp(k, "entity") == 0) {
        char u[37];
        keel_uuid_format(c->cmd.entity, u);
        lua_pushstring(L, u);
    } else lua_pushnil(L);
    return 1;
}

/* w:_apply(cmd) -> the inverse command */
static int w_apply(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    lcmd *c = keel__lua_testudata(L, 2, &keel__lua_mt_cmd);
    if (!c) return keel__lua_argerror(L, 2, "keel.Command expected");
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel_cmd_apply(lw->w, &c->cmd, &inv, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    keel__lua_push_cmd(L, &inv);
    return 1;
}

const luaL_Reg keel__lua_command_methods[] = { { "_apply", w_apply }, { NULL, NULL } };

void keel__lua_open_command(lua_State *L)
{
    static const luaL_Reg cmd_mt[] = {
        { "__gc", cmd_gc }, { "__close", cmd_gc }, { "__tostring", cmd_tostring }, { "__index", cmd_index }, { NULL, NULL }
    };
    keel__lua_newmt(L, &keel__lua_mt_cmd);
    luaL_setfuncs(L, cmd_mt, 0);
    lua_pop(L, 1);
}
