/* lua_lift.c — the Lift type (keel.Lift): w:lift(e) takes e's subtree out of play (keel_lift_entity),
 * lift:restore() puts it back and lift:discard() removes it for good. */
#include "lua_internal.h"

static const keel_lua_type lift_type = { "keel.Lift" };

typedef struct llift { keel_lift *l; } llift; /* NULL once restored or discarded; user value 1: the World */

int keel__lua_w_lift(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel_lua_entity *h = keel__lua_check_entity_of(L, 2, lw->w, "the entity");
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "w:lift refuses while a callback transaction is open");
    llift *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->l = NULL;
    keel__lua_setmt(L, &lift_type);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel_lift_entity(lw->w, h->e, &u->l, &d), &d, NULL);
    return 1;
}

/* The open lift at idx, its World's ctx in *ctx: NotFound once its world is closed,
 * InvalidOperation once restored or discarded. */
static keel_lift *check_lift(lua_State *L, int idx, keel_lua_world **lw)
{
    llift *u = keel__lua_checkudata(L, idx, &lift_type);
    lua_getiuservalue(L, idx, 1);
    *lw = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (!*lw || !(*lw)->w) keel__lua_raisef(L, KEEL_NOT_FOUND, "the lift's world is closed");
    if (!u->l) keel__lua_raisef(L, KEEL_INVALID_OPERATION, "the lift was already restored or discarded");
    return u->l;
}

static int lift_end(lua_State *L, bool discard)
{
    keel_lua_world *lw;
    keel_lift *l = check_lift(L, 1, &lw);
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "%s refuses while a callback transaction is open",
                               discard ? "lift:discard" : "lift:restore");
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = discard ? keel_lift_discard(l, &d) : keel_lift_restore(l, &d);
    KEEL_LUA_LEAVE();
    if (s == KEEL_OK) ((llift *)lua_touserdata(L, 1))->l = NULL;
    keel__lua_check(L, s, &d, NULL);
    return 0;
}

static int lift_restore(lua_State *L) { return lift_end(L, false); }
static int lift_discard(lua_State *L) { return lift_end(L, true); }

static int lift_tostring(lua_State *L)
{
    llift *u = keel__lua_checkudata(L, 1, &lift_type);
    lua_pushstring(L, u->l ? "keel.Lift (open)" : "keel.Lift (closed)");
    return 1;
}

/* The keel.Lift metatable. */
void keel__lua_open_lift(lua_State *L)
{
    static const luaL_Reg lift_mt[] = { { "__tostring", lift_tostring }, { NULL, NULL } };
    static const luaL_Reg lift_methods[] = { { "restore", lift_restore }, { "discard", lift_discard }, { NULL, NULL } };
    keel__lua_newmt(L, &lift_type);
    luaL_setfuncs(L, lift_mt, 0);
    luaL_newlib(L, lift_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}
