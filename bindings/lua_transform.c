/* lua_transform.c — what the renderer's snapshot knows, read from Lua: e:world_transform() and
 * w:snapshot(), a read-only view of keel_snapshot_extract's answer. Both compose through the
 * core's keel_world_matrix, so Lua pays what the C snapshot pays per entity. */
#include "lua_internal.h"

/* A read-only view: its data is a plain table (user value 1) that only this file writes. The
 * top view also owns the keel_snapshot while the tables are built from it, so a memory error
 * part way leaves it to the collector instead of leaking it. */
typedef struct view {
    keel_snapshot *owned;
} view;

static const keel_lua_type view_type = { "keel.Snapshot" };

static int view_index(lua_State *L)
{
    lua_getiuservalue(L, 1, 1);
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int view_newindex(lua_State *L)
{
    return keel__lua_raisef(L, KEEL_UNSUPPORTED, "a snapshot is read-only (it was taken at w:snapshot())");
}

static int view_len(lua_State *L)
{
    lua_getiuservalue(L, 1, 1);
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
    return 1;
}

static int view_next(lua_State *L)
{
    lua_getiuservalue(L, 1, 1);
    lua_pushvalue(L, 2);
    if (!lua_next(L, -2)) return 0;
    return 2;
}

static int view_pairs(lua_State *L)
{
    lua_pushcfunction(L, view_next);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int view_gc(lua_State *L)
{
    view *v = lua_touserdata(L, 1);
    keel_snapshot_free(v->owned); /* NULL once the tables are built */
    v->owned = NULL;
    return 0;
}

static int view_tostring(lua_State *L)
{
    lua_pushliteral(L, "keel.Snapshot (read-only)");
    return 1;
}

/* Wraps the table on top in a read-only view (which replaces it on top). */
static view *freeze(lua_State *L)
{
    view *v = lua_newuserdatauv(L, sizeof *v, 1);
    v->owned = NULL;
    lua_rotate(L, -2, 1);
    lua_setiuservalue(L, -2, 1);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &view_type) != LUA_TTABLE) {
        lua_pop(L, 1);
        static const luaL_Reg mt[] = { { "__index", view_index }, { "__newindex", view_newindex },
                                       { "__len", view_len },     { "__pairs", view_pairs },
                                       { "__gc", view_gc },       { "__tostring", view_tostring },
                                       { NULL, NULL } };
        keel__lua_newmt(L, &view_type);
        luaL_setfuncs(L, mt, 0);
    }
    lua_setmetatable(L, -2);
    return v;
}

/* n numbers, frozen, as field `key` of the table on top. */
static void put_numbers(lua_State *L, const char *key, const double *p, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, p[i]);
        lua_rawseti(L, -2, i + 1);
    }
    freeze(L);
    lua_setfield(L, -2, key);
}

static void put_number(lua_State *L, const char *key, double x)
{
    lua_pushnumber(L, x);
    lua_setfield(L, -2, key);
}

/* The entity's handle (world udata at wi) as field `entity`; an asset's UUID string (nil when none). */
static void put_entity(lua_State *L, int wi, keel_world *w, keel_uuid u)
{
    keel_entity e = keel_find(w, u);
    if (e) keel__lua_push_entity(L, wi, e);
    else lua_pushnil(L);
    lua_setfield(L, -2, "entity");
}

static void put_uuid(lua_State *L, const char *key, keel_uuid u)
{
    if (keel_uuid_is_nil(u)) return;
    char s[37];
    keel_uuid_format(u, s);
    lua_pushstring(L, s);
    lua_setfield(L, -2, key);
}

static const char *choice(const char *kind, const char *field, int i)
{
    keel_kind_id k = keel_kind_find(kind);
    const keel_kind_desc *kd = k ? keel_kind_describe(k) : NULL;
    int f = keel_kind_field(k, field);
    if (!kd || f < 0 || i < 0 || (size_t)i >= kd->fields[f].choice_count) return NULL;
    return kd->fields[f].choices[i];
}

static void push_drawables(lua_State *L, int wi, keel_world *w, const keel_snapshot *s)
{
    lua_createtable(L, (int)s->drawable_count, 0);
    for (size_t i = 0; i < s->drawable_count; i++) {
        const keel_snap_drawable *d = &s->drawables[i];
        lua_createtable(L, 0, 8);
        put_entity(L, wi, w, d->entity);
        put_numbers(L, "world", d->world, 16);
        put_uuid(L, "mesh", d->mesh);
        put_uuid(L, "material", d->material);
        put_numbers(L, "color", d->color, 4);
        put_number(L, "metallic", d->metallic);
        put_number(L, "roughness", d->roughness);
        lua_pushboolean(L, d->casts_shadow);
        lua_setfield(L, -2, "casts_shadow");
        freeze(L);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    freeze(L);
}

static void push_lights(lua_State *L, int wi, keel_world *w, const keel_snapshot *s)
{
    static const char *const types[] = { "point", "spot", "directional" };
    lua_createtable(L, (int)s->light_count, 0);
    for (size_t i = 0; i < s->light_count; i++) {
        const keel_snap_light *l = &s->lights[i];
        lua_createtable(L, 0, 8);
        put_entity(L, wi, w, l->entity);
        lua_pushstring(L, (unsigned)l->type < 3 ? types[l->type] : "point");
        lua_setfield(L, -2, "type");
        put_numbers(L, "world", l->world, 16);
        put_numbers(L, "color", l->color, 4);
        put_number(L, "intensity", l->intensity);
        put_number(L, "range", l->range);
        put_number(L, "inner_angle", l->inner_angle);
        put_number(L, "outer_angle", l->outer_angle);
        freeze(L);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    freeze(L);
}

static void push_camera(lua_State *L, int wi, keel_world *w, const keel_snapshot *s)
{
    if (!s->has_camera) {
        lua_pushnil(L);
        return;
    }
    lua_createtable(L, 0, 6);
    put_entity(L, wi, w, s->camera_entity);
    put_numbers(L, "world", s->camera_world, 16);
    const char *p = choice("core:camera", "projection", s->camera_projection);
    if (p) lua_pushstring(L, p);
    else lua_pushinteger(L, s->camera_projection);
    lua_setfield(L, -2, "projection");
    put_number(L, "fov", s->fov);
    put_number(L, "near", s->near_plane);
    put_number(L, "far", s->far_plane);
    freeze(L);
}

/* w:snapshot() -> { drawables = {...}, lights = {...}, camera = {...} | nil, ambient = {r,g,b,a} },
 * every table of it read-only. */
static int w_snapshot(lua_State *L)
{
    keel_world *w = keel__lua_checklw(L, 1)->w;
    lua_settop(L, 1);
    lua_createtable(L, 0, 4);
    view *top = freeze(L); /* owns the snapshot from here; the table is filled through its user value */
    top->owned = keel_snapshot_extract(w);
    if (!top->owned) return luaL_error(L, "not enough memory");
    const keel_snapshot *s = top->owned;
    lua_getiuservalue(L, 2, 1);
    push_drawables(L, 1, w, s);
    lua_setfield(L, -2, "drawables");
    push_lights(L, 1, w, s);
    lua_setfield(L, -2, "lights");
    push_camera(L, 1, w, s);
    lua_setfield(L, -2, "camera");
    put_numbers(L, "ambient", s->ambient, 4);
    lua_pop(L, 1);
    keel_snapshot_free(top->owned);
    top->owned = NULL;
    return 1;
}

/* e:world_transform() -> position, rotation, scale: vectors like core:transform's fields, composed
 * through the parents; nil when e has no core:transform of its own. */
static int e_world_transform(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    keel_world *w = h->lw->w;
    keel_comp c;
    keel_kind_id tk = keel_kind_find("core:transform");
    if (!tk || !keel_get_comp(w, h->e, tk, 0, &c)) {
        lua_pushnil(L);
        return 1;
    }
    keel_value v[3];
    memset(v, 0, sizeof v);
    keel_status st = keel_world_transform(w, h->e, v[0].as.v, v[1].as.v, v[2].as.v);
    if (st != KEEL_OK) return keel__lua_raisef(L, st, "the entity was destroyed (stale handle)");
    static const keel_field_desc fd[3] = { { .key = "position", .type = KEEL_T_VEC3 },
                                           { .key = "rotation", .type = KEEL_T_QUAT },
                                           { .key = "scale", .type = KEEL_T_VEC3 } };
    for (int i = 0; i < 3; i++) {
        v[i].type = fd[i].type;
        keel__lua_push_value(L, &fd[i], &v[i], w, 0);
    }
    return 3;
}

const luaL_Reg keel__lua_transform_world_methods[] = { { "snapshot", w_snapshot }, { NULL, NULL } };
const luaL_Reg keel__lua_transform_entity_methods[] = { { "world_transform", e_world_transform }, { NULL, NULL } };
