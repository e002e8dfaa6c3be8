/* lua_kind.c — Lua-declared kinds: keel.kind{} (read, checked, declared), keel.kinds(), keel.kind_info().
 * Their hooks run in lua_hook.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"

/* ---- keel.kind{} ---- */

static void *scratch(lua_State *L, size_t n)
{
    void *p = lua_newuserdatauv(L, n ? n : 1, 0); /* left on the stack: collected after the call */
    memset(p, 0, n ? n : 1);
    return p;
}

static const char *opt_str(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
    const char *s = NULL;
    if (lua_type(L, -1) == LUA_TSTRING && !keel__lua_has_nul(L, -1)) s = lua_tostring(L, -1);
    else if (lua_type(L, -1) == LUA_TSTRING) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s holds a NUL byte", k);
    else if (!lua_isnil(L, -1)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s must be a string", k);
    lua_pop(L, 1); /* the string stays in the spec table */
    return s;
}

static bool opt_bool(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
    bool b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
}

static const char *const *str_array(lua_State *L, int t, const char *k, size_t *n)
{
    lua_getfield(L, t, k);
    *n = 0;
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return NULL; }
    if (lua_type(L, -1) != LUA_TTABLE) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s must be an array of strings", k);
    int a = lua_gettop(L);
    size_t len = lua_rawlen(L, a);
    const char **out = scratch(L, len * sizeof *out);
    lua_replace(L, a); /* the scratch replaces the array... */
    lua_getfield(L, t, k); /* ...which is fetched again above it */
    for (size_t i = 0; i < len; i++) {
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s[%d] must be a string", k, (int)i + 1);
        if (keel__lua_has_nul(L, -1)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s[%d] holds a NUL byte", k, (int)i + 1);
        out[i] = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1); /* the scratch stays */
    *n = len;
    return out;
}

static double num_field(lua_State *L, int idx, const char *what, const char *name)
{
    if (lua_type(L, idx) != LUA_TNUMBER) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': %s must be a number", name, what);
    return (double)lua_tonumber(L, idx);
}

/* The keys a declaration may hold: a typo (`multiplicty`, `defualt`) must not declare a
 * different kind silently. NULL-terminated. */
static const char *const kind_keys[] = {
    "key", "display", "category", "version", "multiplicity", "max", "requires", "rejects",
    "nosave", "editor_only", "root_only", "not_on_root", "fields", "awake", "start", "fixed_update", "update", "late_update",
    "on_destroy", "on_transfer", "on_message", "validate", "migrate", "sync", "client_update",
    "tooltip", "summon", "renames", NULL
};
static const char *const field_keys[] = {
    "default", "min", "max", "choices", "transient", "readonly", "hidden", "runtime", "sync",
    "tooltip", "get", "set", NULL
};

/* Raises InvalidArgument naming the first key of table t not in `allowed` (integer keys
 * 1..npos are the positional entries). `field` names the field declaration, or NULL. */
static void check_keys(lua_State *L, int t, const char *const *allowed, lua_Integer npos, const char *field)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        bool ok = false;
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -1);
            for (size_t i = 0; allowed[i] && !ok; i++) ok = strcmp(k, allowed[i]) == 0;
        } else if (lua_isinteger(L, -1)) {
            lua_Integer i = lua_tointeger(L, -1);
            ok = i >= 1 && i <= npos;
        }
        if (ok) continue;
        /* luaL_tolstring on a copy: converting the key itself in place would break lua_next */
        lua_pushvalue(L, -1);
        const char *shown = luaL_tolstring(L, -1, NULL);
        if (field) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': unknown key '%s'", field, shown);
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: unknown key '%s'", shown);
    }
}

/* Stack slots one field's reading needs at most (read_field, check_keys, a conversion). */
#define FIELD_STACK 12

/* fields[i] = { "name", "type", default=, min=, max=, choices=, transient=, readonly=, hidden= }
 * Leaves above f what fd's strings are borrowed from (the choices and their scratch array). */
static const char *tooltip_str(lua_State *L, int t, const char *field)
{
    lua_getfield(L, t, "tooltip");
    const char *s = NULL;
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t n;
        s = lua_tolstring(L, -1, &n);
        if (strlen(s) != n || n > KEEL_TOOLTIP_MAX)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT,
                             "kind: %s%s%stooltip must be text of at most %d bytes without NUL",
                             field ? "field '" : "", field ? field : "", field ? "': " : "", KEEL_TOOLTIP_MAX);
    } else if (!lua_isnil(L, -1)) {
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s%s%stooltip must be a string", field ? "field '" : "",
                         field ? field : "", field ? "': " : "");
    }
    lua_pop(L, 1); /* the string stays in the spec table */
    return s;
}

static void read_field(lua_State *L, int f, keel_field_desc *fd)
{
    lua_rawgeti(L, f, 1);
    lua_rawgeti(L, f, 2);
    if (lua_type(L, -2) != LUA_TSTRING) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: a field needs a name string first");
    if (keel__lua_has_nul(L, -2)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: a field name holds a NUL byte");
    fd->key = lua_tostring(L, -2);
    if (lua_type(L, -1) != LUA_TSTRING || !keel_type_parse(lua_tostring(L, -1), &fd->type))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': unknown type '%s'", fd->key, luaL_optstring(L, -1, "nil"));
    lua_pop(L, 2);
    check_keys(L, f, field_keys, 2, fd->key);
    lua_getfield(L, f, "choices");
    if (lua_type(L, -1) == LUA_TTABLE) {
        size_t n = lua_rawlen(L, -1);
        const char **ch = scratch(L, n * sizeof *ch);
        lua_insert(L, -2); /* scratch below the choices table, both kept on the stack */
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            if (lua_type(L, -1) != LUA_TSTRING) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': choices must be strings", fd->key);
            if (keel__lua_has_nul(L, -1)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': a choice holds a NUL byte", fd->key);
            ch[i] = lua_tostring(L, -1);
            lua_pop(L, 1);
        }
        fd->choices = ch;
        fd->choice_count = n;
    } else if (!lua_isnil(L, -1)) {
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': choices must be an array", fd->key);
    }
    if (fd->type == KEEL_T_ENUM && fd->choice_count == 0)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: enum field '%s' needs choices", fd->key);
    lua_getfield(L, f, "min");
    if (!lua_isnil(L, -1)) { fd->has_min = true; fd->min = num_field(L, -1, "min", fd->key); }
    lua_getfield(L, f, "max");
    if (!lua_isnil(L, -1)) { fd->has_max = true; fd->max = num_field(L, -1, "max", fd->key); }
    lua_pop(L, 2);
    lua_getfield(L, f, "default");
    if (!lua_isnil(L, -1)) {
        char err[256];
        if (fd->type == KEEL_T_ENTITY)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: entity field '%s' cannot have a default", fd->key);
        if (!keel__lua_to_value(L, -1, fd, NULL, &fd->def, err, sizeof err))
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: default of %s", err);
        fd->has_default = true; /* strings: borrowed from the spec table, copied by the registry */
    }
    lua_pop(L, 1);
    fd->flags = (opt_bool(L, f, "transient") ? KEEL_FIELD_TRANSIENT : 0) |
                (opt_bool(L, f, "readonly") ? KEEL_FIELD_READONLY : 0) |
                (opt_bool(L, f, "hidden") ? KEEL_FIELD_HIDDEN : 0) |
                (opt_bool(L, f, "runtime") ? KEEL_FIELD_RUNTIME : 0) |
                (opt_bool(L, f, "sync") ? KEEL_FIELD_SYNC : 0);
    fd->tooltip = tooltip_str(L, f, fd->key);
}

/* sync = { interval = N } (or true: every tick): N an integer in 1..KEEL_SYNC_INTERVAL_MAX. */
static uint32_t read_sync(lua_State *L, double *radius)
{
    lua_getfield(L, 1, "sync");
    uint32_t n = 0;
    if (lua_isboolean(L, -1)) n = lua_toboolean(L, -1) ? 1 : 0;
    else if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "interval");
        if (lua_isnil(L, -1)) n = 1;
        else if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > KEEL_SYNC_INTERVAL_MAX)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: sync.interval must be an integer in 1..%d, got %s",
                            KEEL_SYNC_INTERVAL_MAX, luaL_tolstring(L, -1, NULL));
        else n = (uint32_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, -1, "radius");
        if (!lua_isnil(L, -1)) {
            double r = lua_type(L, -1) == LUA_TNUMBER ? (double)lua_tonumber(L, -1) : -1;
            if (!(r > 0 && r <= KEEL_SYNC_RADIUS_MAX)) /* NaN and inf fail too */
                keel__lua_raisef(L, KEEL_INVALID_ARGUMENT,
                                 "kind: sync.radius must be a finite number > 0 and at most %g, got %s",
                                 (double)KEEL_SYNC_RADIUS_MAX, luaL_tolstring(L, -1, NULL));
            *radius = r;
        }
        lua_pop(L, 1);
    } else if (!lua_isnil(L, -1))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: sync must be a table { interval = N }, got %s",
                        luaL_typename(L, -1));
    lua_pop(L, 1);
    return n;
}

/* The declaration's own options (argument 1): everything but fields and hooks. Strings are
 * borrowed from the spec table; the requires/rejects arrays are scratch left on the stack. */
static void read_options(lua_State *L, keel_kind_desc *desc)
{
    desc->key = opt_str(L, 1, "key");
    if (!desc->key) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: key is required");
    check_keys(L, 1, kind_keys, 0, NULL);
    desc->display = opt_str(L, 1, "display");
    desc->category = opt_str(L, 1, "category");
    lua_getfield(L, 1, "version");
    if (!lua_isnil(L, -1) && (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > INT_MAX))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: version must be an integer >= 1, got %s", luaL_tolstring(L, -1, NULL));
    desc->version = lua_isnil(L, -1) ? 1 : (int)lua_tointeger(L, -1);
    lua_getfield(L, 1, "max");
    if (!lua_isnil(L, -1) && (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: max must be a non-negative integer");
    desc->max = (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
    const char *mult = opt_str(L, 1, "multiplicity");
    if (!mult || strcmp(mult, "one") == 0) desc->multiplicity = KEEL_ONE;
    else if (strcmp(mult, "many") == 0) desc->multiplicity = KEEL_MANY;
    else keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: multiplicity must be \"one\" or \"many\", got \"%s\"", mult);
    desc->requires = str_array(L, 1, "requires", &desc->requires_count);
    desc->rejects = str_array(L, 1, "rejects", &desc->rejects_count);
    desc->flags = (opt_bool(L, 1, "nosave") ? KEEL_KIND_NOSAVE : 0) | (opt_bool(L, 1, "editor_only") ? KEEL_KIND_EDITOR_ONLY : 0) |
                  (opt_bool(L, 1, "root_only") ? KEEL_KIND_ROOT_ONLY : 0) |
                  (opt_bool(L, 1, "not_on_root") ? KEEL_KIND_NOT_ON_ROOT : 0);
    desc->sync_interval = read_sync(L, &desc->sync_radius);
    desc->tooltip = tooltip_str(L, 1, NULL);
    lua_getfield(L, 1, "summon");
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: summon must be a boolean, got %s", luaL_typename(L, -1));
    desc->no_summon = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
    lua_pop(L, 1);
}

/* The spec's fields array into desc->fields (scratch). Pushes the scratch, then the keys table
 * (field names by index, for the hooks) and an anchors table: each field's table and what
 * read_field left above it move there, so the stack stays the same height whatever the count.
 * Returns the index of the keys table; *has_entity tells whether a field is an entity. */
static int read_fields(lua_State *L, keel_kind_desc *desc, bool *has_entity)
{
    lua_getfield(L, 1, "fields");
    int ft = lua_gettop(L);
    size_t nf = 0;
    if (lua_type(L, ft) == LUA_TTABLE) nf = lua_rawlen(L, ft);
    else if (!lua_isnil(L, ft)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: fields must be an array");
    if (nf > KEEL_LUA_MAX_FIELDS)
        keel__lua_raisef(L, KEEL_LIMIT_EXCEEDED, "kind: at most %d fields, got %zu", KEEL_LUA_MAX_FIELDS, nf);
    keel_field_desc *fields = scratch(L, nf * sizeof *fields);
    lua_createtable(L, (int)nf, 0); /* keys */
    int keys = lua_gettop(L);
    lua_newtable(L); /* anchors: what each field's strings are borrowed from */
    int anchors = lua_gettop(L);
    lua_newtable(L); /* derived fields' get and set (keys + 2) */
    int funcs = lua_gettop(L);
    lua_Integer nanchors = 0;
    *has_entity = false;
    for (size_t i = 0; i < nf; i++) {
        int base = lua_gettop(L);
        if (!lua_checkstack(L, FIELD_STACK))
            keel__lua_raisef(L, KEEL_LIMIT_EXCEEDED, "kind: Lua stack overflow");
        lua_rawgeti(L, ft, (lua_Integer)i + 1);
        if (lua_type(L, -1) != LUA_TTABLE) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: fields[%d] must be a table", (int)i + 1);
        read_field(L, lua_gettop(L), &fields[i]);
        keel__lua_read_derived(L, base + 1, funcs, i, &fields[i]);
        *has_entity |= fields[i].type == KEEL_T_ENTITY;
        lua_pushstring(L, fields[i].key);
        lua_rawseti(L, keys, (lua_Integer)i + 1);
        while (lua_gettop(L) > base) lua_rawseti(L, anchors, ++nanchors);
    }
    desc->fields = fields;
    desc->field_count = nf;
    return keys; /* the anchors stay above it until the call returns */
}

/* The hooks, validate, migrate and client_update of the spec: of the right type when present. */
static void check_hooks(lua_State *L)
{
    for (int p = 0; p <= KEEL_PHASE_COUNT_; p++) {
        const char *hk = p < KEEL_PHASE_COUNT_ ? keel_phase_name((keel_phase)p) : "validate";
        lua_getfield(L, 1, hk);
        if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: %s must be a function, got %s", hk, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    lua_getfield(L, 1, "migrate");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TTABLE)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: migrate must be a table { [version] = function }");
    lua_pop(L, 1);
    /* a replication client's hook: checked alike in a build without replication (KEEL_NET=OFF),
     * so one kinds file loads in either */
    lua_getfield(L, 1, "client_update");
    if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: client_update must be a function, got %s",
                         luaL_typename(L, -1));
    lua_pop(L, 1);
}

/* renames = { [v] = { old = "new", ... } }: v an integer in 2..version, names strings. */
static void check_renames(lua_State *L, int version)
{
    lua_getfield(L, 1, "renames");
    int t = lua_gettop(L);
    if (lua_isnil(L, t)) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_istable(L, t))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT,
                         "kind: renames must be a table { [version] = { old = \"new\" } }");
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 2 || lua_tointeger(L, -2) > version)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: renames: a key must be a version in 2..%d", version);
        if (!lua_istable(L, -1))
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: renames[%d] must be a table { old = \"new\" }",
                             (int)lua_tointeger(L, -2));
        int r = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, r)) {
            if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING || keel__lua_has_nul(L, -1) ||
                keel__lua_has_nul(L, -2))
                keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: renames[%d]: names must be strings",
                                 (int)lua_tointeger(L, r - 1));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Hands desc to the registry. A declaration refused because live components broke the new
 * rules is judged again after a full collection: worlds nobody can reach any more (not yet
 * collected) do not count. On failure the hooks are freed (the registry did not take them). */
static keel_status declare(lua_State *L, keel_lua_ctx *ctx, const keel_kind_desc *desc, keel_lua_kind *lk, keel_diags *d)
{
    keel_kind_id id = KEEL_NO_KIND;
    KEEL_LUA_ENTER(L, ctx);
    keel_status s = keel_kind_declare(desc, &id, d);
    if (s == KEEL_INVALID_OPERATION) {
        keel_diags_free(d);
        lua_gc(L, LUA_GCCOLLECT);
        s = keel_kind_declare(desc, &id, d);
    }
    if (s != KEEL_OK) keel__lua_hooks_free(lk);
    else keel__lua_kind_declared(id);
    KEEL_LUA_LEAVE();
    return s;
}

/* The hash of the source a kind was declared from (its caller's file, read now, or the chunk's
 * text), kept in the registry by key for recordings (design/replay.md: a Lua kind whose file
 * changed is a changed kind). 0: unknown (a chunk named with '='). */
static void note_source(lua_State *L, const char *key)
{
    lua_Debug ar;
    uint64_t h = 0;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && ar.source) {
        const char *src = ar.source;
        size_t n = 0;
        char *text = NULL;
        if (src[0] == '@') {
            FILE *f = fopen(src + 1, "rb");
            if (f) {
                size_t cap = 0;
                for (size_t got = 1; got > 0;) {
                    if (n == cap) {
                        char *nt = realloc(text, cap = cap ? cap * 2 : 4096);
                        if (!nt) break;
                        text = nt;
                    }
                    got = fread(text + n, 1, cap - n, f);
                    n += got;
                }
                fclose(f);
            }
            src = text;
        } else if (src[0] == '=') {
            src = NULL;
        } else {
            n = strlen(src);
        }
        if (src) {
            h = 0xcbf29ce484222325ull; /* FNV-1a */
            for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)src[i]) * 0x100000001b3ull;
            h |= 1;
        }
        free(text);
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.kind.sources");
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, "keel.kind.sources");
    }
    lua_pushinteger(L, (lua_Integer)h);
    lua_setfield(L, -2, key);
    lua_pop(L, 1);
}

uint64_t keel__lua_kind_source(const char *key, void *ud)
{
    lua_State *L = ud;
    if (!lua_checkstack(L, 3)) return 0;
    int top = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.kind.sources");
    uint64_t h = 0;
    if (lua_istable(L, -1) && lua_getfield(L, -1, key) == LUA_TNUMBER) h = (uint64_t)lua_tointeger(L, -1);
    lua_settop(L, top);
    return h;
}

static int k_kind(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TTABLE)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: a table expected, got %s", luaL_typename(L, 1));
    /* the call a finalizer interrupts may hold this kind's description, field table or records
     * (a redeclaration frees and relays them out) */
    if (keel__lua_in_finalizer(L))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "keel.kind refuses inside a __gc finalizer");
    lua_settop(L, 1);
    keel_kind_desc desc;
    memset(&desc, 0, sizeof desc);
    read_options(L, &desc);
    bool has_entity;
    int keys = read_fields(L, &desc, &has_entity);
    check_hooks(L);
    check_renames(L, desc.version);

    /* Everything that can raise on bad input is above; now the owned parts. */
    keel_lua_kind *lk = keel__lua_hooks_new(L, ctx, &desc, keys, has_entity);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = declare(L, ctx, &desc, lk, &d);
    if (s == KEEL_OK) keel__lua_net_note_kind(L, desc.key);
    if (s == KEEL_OK) note_source(L, desc.key);
    if (s != KEEL_OK || !d.count) {
        keel__lua_check(L, s, &d, NULL);
        lua_pushstring(L, desc.key);
        return 1;
    }
    /* Warnings (a value reset to its default, an unknown component left unadopted):
     * the key, then the list. The strings are copied before d is freed. */
    lua_pushstring(L, desc.key);
    keel__lua_push_diags(L, &d);
    keel_diags_free(&d);
    return 2;
}

/* ---- keel.kinds(), keel.kind_info() ---- */

static void push_strs(lua_State *L, const char *const *a, size_t n)
{
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, a[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static void push_info(lua_State *L, keel_kind_id k)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    lua_createtable(L, 0, 14);
    lua_pushstring(L, kd->key);
    lua_setfield(L, -2, "key");
    lua_pushstring(L, kd->display ? kd->display : kd->key);
    lua_setfield(L, -2, "display");
    lua_pushstring(L, kd->category ? kd->category : "General");
    lua_setfield(L, -2, "category");
    lua_pushinteger(L, kd->version < 1 ? 1 : kd->version);
    lua_setfield(L, -2, "version");
    lua_pushstring(L, kd->multiplicity == KEEL_MANY ? "many" : "one");
    lua_setfield(L, -2, "multiplicity");
    if (kd->max) {
        lua_pushinteger(L, kd->max);
        lua_setfield(L, -2, "max");
    }
    push_strs(L, kd->requires, kd->requires_count);
    lua_setfield(L, -2, "requires");
    push_strs(L, kd->rejects, kd->rejects_count);
    lua_setfield(L, -2, "rejects");
    lua_pushboolean(L, kd->builtin);
    lua_setfield(L, -2, "builtin");
    lua_pushboolean(L, (kd->flags & KEEL_KIND_NOSAVE) != 0);
    lua_setfield(L, -2, "nosave");
    lua_pushboolean(L, (kd->flags & KEEL_KIND_EDITOR_ONLY) != 0);
    lua_setfield(L, -2, "editor_only");
    lua_pushboolean(L, (kd->flags & KEEL_KIND_ROOT_ONLY) != 0);
    lua_setfield(L, -2, "root_only");
    lua_pushboolean(L, (kd->flags & KEEL_KIND_NOT_ON_ROOT) != 0);
    lua_setfield(L, -2, "not_on_root");
    bool synced = kd->sync_interval > 0;
    for (size_t i = 0; i < kd->field_count; i++) synced |= (kd->fields[i].flags & KEEL_FIELD_SYNC) != 0;
    if (synced || kd->sync_radius > 0) { /* only when synced: older readers see the keys they know */
        lua_createtable(L, 0, 2);
        lua_pushinteger(L, kd->sync_interval ? kd->sync_interval : 1);
        lua_setfield(L, -2, "interval");
        if (kd->sync_radius > 0) {
            lua_pushnumber(L, kd->sync_radius);
            lua_setfield(L, -2, "radius");
        }
        lua_setfield(L, -2, "sync");
    }
    if (kd->tooltip) {
        lua_pushstring(L, kd->tooltip);
        lua_setfield(L, -2, "tooltip");
    }
    if (kd->no_summon) {
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "summon");
    }
    lua_createtable(L, (int)kd->field_count, 0);
    for (size_t i = 0; i < kd->field_count; i++) {
        const keel_field_desc *fd = &kd->fields[i];
        lua_createtable(L, 0, 9);
        lua_pushstring(L, fd->key);
        lua_setfield(L, -2, "key");
        lua_pushstring(L, keel_type_name(fd->type));
        lua_setfield(L, -2, "type");
        if (fd->has_default) {
            keel__lua_push_value(L, fd, &fd->def, NULL, 0);
            lua_setfield(L, -2, "default");
        }
        if (fd->has_min) { lua_pushnumber(L, fd->min); lua_setfield(L, -2, "min"); }
        if (fd->has_max) { lua_pushnumber(L, fd->max); lua_setfield(L, -2, "max"); }
        /* only when set, as `keel kinds --json` does: a bound is inclusive unless said */
        if (fd->has_min && fd->min_exclusive) { lua_pushboolean(L, 1); lua_setfield(L, -2, "min_exclusive"); }
        if (fd->has_max && fd->max_exclusive) { lua_pushboolean(L, 1); lua_setfield(L, -2, "max_exclusive"); }
        if (fd->type == KEEL_T_ENUM) {
            push_strs(L, fd->choices, fd->choice_count);
            lua_setfield(L, -2, "choices");
        }
        lua_pushboolean(L, (fd->flags & KEEL_FIELD_TRANSIENT) != 0);
        lua_setfield(L, -2, "transient");
        lua_pushboolean(L, (fd->flags & KEEL_FIELD_READONLY) != 0);
        lua_setfield(L, -2, "readonly");
        lua_pushboolean(L, (fd->flags & KEEL_FIELD_HIDDEN) != 0);
        lua_setfield(L, -2, "hidden");
        if (fd->flags & KEEL_FIELD_RUNTIME) { /* only when set: older readers see the keys they know */
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "runtime");
        }
        if (fd->flags & KEEL_FIELD_SYNC) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "sync");
        }
        if (fd->tooltip) {
            lua_pushstring(L, fd->tooltip);
            lua_setfield(L, -2, "tooltip");
        }
        if (fd->get) { /* shown and saved through get/set: no storage of its own */
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "derived");
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "fields");
}

static int k_kinds(lua_State *L)
{
    size_t n = keel_kind_count();
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        push_info(L, keel_kind_at(i));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int k_kind_info(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind_info: a kind key expected, got %s", luaL_typename(L, 1));
    keel_kind_id k = keel_kind_find(lua_tostring(L, 1));
    if (!k) lua_pushnil(L);
    else push_info(L, k);
    return 1;
}

static const luaL_Reg kind_funcs[] = {
    { "kind", k_kind }, { "kinds", k_kinds }, { "kind_info", k_kind_info }, { NULL, NULL }
};

void keel__lua_open_kind(lua_State *L)
{
    luaL_setfuncs(L, kind_funcs, 1);
}

