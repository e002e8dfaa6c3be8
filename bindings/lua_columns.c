/* lua_columns.c — a system's `columns` (the fast path beside `each`): one Lua call per batch of up
 * to COLS_BATCH entities, each queried kind given as a table of field arrays (`a.x[i]`), the
 * arrays kept in the system's cache table and reused from batch to batch and frame to frame.
 * After the call only the `writes` kinds are read back; a field whose array value differs from
 * the stored one is written through core/field.c (checks, versions, change counters), so the
 * batch is one callback transaction: a raise, or a refused write-back, rolls the whole batch
 * back and faults the system, as a failing `each` call does.
 *
 * The write-back runs in two rounds so a refusal can still roll everything back: first every
 * changed field that needs the general path (keel__field_set, journaled), with plain floats only
 * checked; then the plain floats (unbounded, not readonly, kind without validate, finite), which
 * can no longer be refused, stored by keel__field_copy_floats without a journal entry. */
#include <math.h>
#include <string.h>

#include "lua_internal.h"
#include "lua_pass.h"
#include "bind.h"

#define COLS_BATCH 256

typedef struct col_field {
    const keel_field_desc *fd;
    int field;
    unsigned kind; /* its kind's number in the query */
    size_t off;
    int arr;       /* stack index of its array */
    bool plain;    /* the second round's fast path applies */
} col_field;

typedef struct cols_run {
    keel_lua_world *lw;
    size_t nk;
    keel_kind_id kinds[KEEL_LUA_MAX_DEPTH];
    bool writes[KEEL_LUA_MAX_DEPTH];
    bool entities;
    bool in_call;   /* a batch's transaction is open: a raise is its failure */
    bool owns_list; /* the pass took ctx->each_list */
    lua_Integer visited; /* entities handed to the function (the profiler's count) */
    keel__hook_txn txn;
} cols_run;

/* The batch's components, by entity then kind: [b * nk + i]. */
typedef struct cols_buf {
    keel_entity e[COLS_BATCH];
    keel_comp *c;
    void **rec;
    uint32_t *row;
} cols_buf;

/* A userdata of `size` bytes kept in cache[key] (grown when smaller), on top of the stack. */
static void *cached_block(lua_State *L, int cache, const char *key, size_t size)
{
    if (lua_getfield(L, cache, key) == LUA_TUSERDATA && lua_rawlen(L, -1) >= size) return lua_touserdata(L, -1);
    lua_pop(L, 1);
    void *p = lua_newuserdatauv(L, size, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, cache, key);
    return p;
}

/* The batch's component records, fetched again after the core moved storage; NULL for one whose
 * entity or component went away during the call (nothing to write back there). */
static void refetch(const keel_world *w, const cols_run *r, cols_buf *buf, size_t nb)
{
    size_t nk = r->nk;
    for (size_t b = 0; b < nb; b++)
        for (size_t i = 0; i < nk; i++) {
            if (!r->writes[i]) continue;
            keel__comp_info info;
            keel_comp c = buf->c[b * nk + i];
            bool ok = keel__comp_info_get(w, c.entity, c.kind, c.slot, &info);
            buf->rec[b * nk + i] = ok ? info.record : NULL;
            buf->row[b * nk + i] = ok ? info.row : 0;
        }
}

/* Stores checked plain floats: straight into the record, or (a nested transaction wants a journal
 * entry) one keel__field_set each, which cannot refuse them either. */
static void store_floats(keel_world *w, keel_comp c, char *rec, uint32_t row, size_t n, const int *fields,
                         const double *vals)
{
    if (keel__field_copy_floats(w, c, rec, row, n, fields, vals)) return;
    for (size_t j = 0; j < n; j++) {
        keel_value v = { .type = KEEL_T_FLOAT, .as.f = vals[j] };
        keel__field_set(w, c, fields[j], &v, false, NULL, NULL);
    }
}

/* Reads the `writes` kinds' arrays back into the batch's components; raises on a refusal (the
 * caller's transaction then rolls the batch back). `vals` has room for nb values of every plain
 * field: round one reads each plain array once into it (all of a batch's values pushed, then
 * read, then dropped in one settop), round two stores from it. */
static void write_back(lua_State *L, const cols_run *r, cols_buf *buf, size_t nb, const col_field *cf, size_t ncf,
                       bool moved, double *vals)
{
    keel_world *w = r->lw->w;
    size_t nk = r->nk;
    keel_diags d = { 0 };
    if (moved) refetch(w, r, buf, nb);
    bool any_plain = false;
    int top = lua_gettop(L);
    /* round one: the general path; plain floats read into vals and checked */
    for (size_t k = 0; k < ncf; k++) {
        const col_field *f = &cf[k];
        if (!r->writes[f->kind]) continue;
        if (f->plain) {
            any_plain = true;
            double *v = vals + k * COLS_BATCH;
            for (size_t b = 0; b < nb; b++) lua_rawgeti(L, f->arr, (lua_Integer)b + 1);
            bool odd = false; /* a value that is not a finite number: the general path decides */
            for (size_t b = 0; b < nb; b++) {
                int isnum;
                v[b] = (double)lua_tonumberx(L, top + 1 + (int)b, &isnum);
                if (!isnum || !isfinite(v[b])) odd = true;
            }
            lua_settop(L, top);
            if (!odd) continue;
        }
        for (size_t b = 0; b < nb; b++) {
            size_t at = b * nk + f->kind;
            const char *rec = buf->rec[at];
            if (!rec) continue;
            if (f->plain && isfinite(vals[k * COLS_BATCH + b])) continue; /* round two's */
            lua_rawgeti(L, f->arr, (lua_Integer)b + 1);
            const void *p = rec + f->off;
            if (keel__lua_same(L, -1, f->fd, p, w)) {
                lua_pop(L, 1);
                continue;
            }
            keel_value v;
            char err[256];
            unsigned long entries = keel__lua_entries;
            keel_status st;
            if (!keel__lua_to_value(L, -1, f->fd, w, &v, err, sizeof err))
                st = KEEL_ERROR(&d, keel__lua_value_code(err), f->fd->key, "%s[%zu]: %s", f->fd->key, b + 1, err);
            else
                st = keel__field_set(w, buf->c[at], f->field, &v, false, NULL, &d);
            lua_pop(L, 1);
            if (st != KEEL_OK) keel__lua_raise(L, st, &d);
            if (f->plain) vals[k * COLS_BATCH + b] = NAN; /* written here: nothing for round two */
            if (entries != keel__lua_entries) refetch(w, r, buf, nb); /* a validate hook entered the core */
        }
    }
    if (d.items) keel_diags_free(&d);
    if (!any_plain) return;
    /* round two: the plain floats, which nothing can refuse any more */
    int fields[64];
    double out[64];
    for (size_t b = 0; b < nb; b++)
        for (size_t i = 0; i < nk; i++) {
            size_t at = b * nk + i;
            char *rec = buf->rec[at];
            if (!r->writes[i] || !rec) continue;
            size_t n = 0;
            for (size_t k = 0; k < ncf; k++) {
                const col_field *f = &cf[k];
                if (f->kind != i || !f->plain) continue;
                double x = vals[k * COLS_BATCH + b];
                if (x == *(const double *)(rec + f->off) || !isfinite(x)) continue;
                if (n == 64) { /* a kind of many float fields: flush */
                    store_floats(w, buf->c[at], rec, buf->row[at], n, fields, out);
                    n = 0;
                }
                fields[n] = f->field;
                out[n++] = x;
            }
            if (n) store_floats(w, buf->c[at], rec, buf->row[at], n, fields, out);
        }
}

/* Runs inside lua_pcall: 1 the cols_run, 2 the World, 3 the function, 4 dt, 5 the cache. */
static int columns_loop(lua_State *L)
{
    cols_run *r = lua_touserdata(L, 1);
    keel_world *w = r->lw->w;
    keel_lua_ctx *ctx = r->lw->ctx;
    size_t nk = r->nk;
    double dt = lua_tonumber(L, 4);
    lua_getiuservalue(L, 2, 1); /* 6: the World's entity handle cache */
    uint64_t stamp = keel__kind_declarations();
    lua_getfield(L, 5, "stamp");
    bool fresh = !lua_isinteger(L, -1) || (uint64_t)lua_tointeger(L, -1) != stamp;
    lua_pop(L, 1);
    if (fresh) { /* a kind was (re)declared since: arrays made again, none of an old field left */
        for (size_t i = 0; i < nk; i++) {
            lua_newtable(L);
            lua_rawseti(L, 5, (lua_Integer)i + 1);
        }
        lua_pushnil(L);
        lua_setfield(L, 5, "entity");
        lua_pushinteger(L, 0);
        lua_setfield(L, 5, "n");
        lua_pushinteger(L, (lua_Integer)stamp);
        lua_setfield(L, 5, "stamp");
    }
    size_t total = 0;
    for (size_t i = 0; i < nk; i++) total += keel_kind_describe(r->kinds[i])->field_count;
    luaL_checkstack(L, (int)(total + nk) + COLS_BATCH + 24, "a columns system's arrays");
    int kt = lua_gettop(L) + 1; /* the kind tables, kt .. kt + nk - 1 */
    for (size_t i = 0; i < nk; i++) lua_rawgeti(L, 5, (lua_Integer)i + 1);
    int ent = 0;
    if (r->entities) {
        if (lua_getfield(L, 5, "entity") != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushvalue(L, -1);
            lua_setfield(L, 5, "entity");
        }
        ent = lua_gettop(L);
    }
    col_field *cf = cached_block(L, 5, "fields", (total ? total : 1) * sizeof *cf);
    size_t ncf = 0;
    for (size_t i = 0; i < nk; i++) {
        const keel_kind_desc *kd = keel_kind_describe(r->kinds[i]);
        for (size_t f = 0; f < kd->field_count; f++) {
            const keel_field_desc *fd = &kd->fields[f];
            if (ent && strcmp(fd->key, "entity") == 0)
                luaL_error(L, "kind %s has a field named entity: its column hides the entity handles "
                              "(entities = true)", kd->key);
            if (lua_getfield(L, kt + (int)i, fd->key) != LUA_TTABLE) {
                lua_pop(L, 1);
                lua_createtable(L, COLS_BATCH, 0);
                lua_pushvalue(L, -1);
                lua_setfield(L, kt + (int)i, fd->key);
            }
            cf[ncf++] = (col_field){
                .fd = fd, .field = (int)f, .kind = (unsigned)i, .off = keel_kind_field_offset(r->kinds[i], (int)f),
                .arr = lua_gettop(L),
                .plain = fd->type == KEEL_T_FLOAT && !fd->has_min && !fd->has_max &&
                         !(fd->flags & KEEL_FIELD_READONLY) && !kd->validate,
            };
        }
        if (ent) {
            lua_pushvalue(L, ent);
            lua_setfield(L, kt + (int)i, "entity");
        }
    }
    cols_buf buf;
    char *block = cached_block(L, 5, "batch", COLS_BATCH * nk * (sizeof *buf.c + sizeof *buf.rec + sizeof *buf.row));
    buf.c = (keel_comp *)block;
    buf.rec = (void **)(block + COLS_BATCH * nk * sizeof *buf.c);
    buf.row = (uint32_t *)(block + COLS_BATCH * nk * (sizeof *buf.c + sizeof *buf.rec));
    double *vals = cached_block(L, 5, "vals", (total ? total : 1) * COLS_BATCH * sizeof *vals);
    lua_getfield(L, 5, "n");
    size_t prev = (size_t)lua_tointeger(L, -1);
    lua_pop(L, 1);

    size_t count;
    const keel_entity *list = keel__lua_visit_list(L, ctx, w, &count, &r->owns_list);
    /* the last pass's verdicts while they hold (lua_pass.c); from the first batch that moves the
     * world's pass stamp on, the rest of the list is judged entity by entity */
    keel__lua_kept *kept = keel__lua_kept_begin(L, ctx, 5, 2, w, nk, count);
    bool fast = kept->valid;
    int top = lua_gettop(L); /* above the list (a nested pass's userdata) and the verdicts */
    size_t v = 0, j = 0;     /* the next list position (judged one by one), the next kept item */
    for (;;) {
        size_t nb = 0;
        if (fast && j && !keel__lua_kept_holds(ctx, kept, w)) {
            fast = false;
            v = kept->at[j - 1] + 1;
        }
        if (fast) {
            nb = kept->count - j < COLS_BATCH ? kept->count - j : COLS_BATCH;
            for (size_t b = 0; b < nb; b++) {
                keel_entity e = buf.e[b] = kept->e[j + b];
                for (size_t i = 0; i < nk; i++)
                    buf.c[b * nk + i] = (keel_comp){ e, r->kinds[i], kept->slot[(j + b) * nk + i] };
            }
            if (nb) {
                memcpy(buf.rec, kept->rec + j * nk, nb * nk * sizeof *buf.rec);
                memcpy(buf.row, kept->row + j * nk, nb * nk * sizeof *buf.row);
            }
            j += nb;
        } else {
            if (kept->recording && !keel__lua_kept_holds(ctx, kept, w)) kept->recording = false;
            for (; v < count && nb < COLS_BATCH; v++)
                if (keel__each_visit(w, list[v], nk, r->kinds, buf.c + nb * nk, buf.rec + nb * nk,
                                     buf.row + nb * nk)) {
                    if (kept->recording)
                        keel__lua_kept_push(kept, list[v], v, buf.c + nb * nk, buf.rec + nb * nk,
                                            buf.row + nb * nk, count);
                    buf.e[nb++] = list[v];
                }
        }
        if (!nb) break;
        if (keel__kind_declarations() != stamp) return 0; /* redeclared by the last call: the pass ends */
        for (size_t k = 0; k < ncf; k++) {
            const col_field *f = &cf[k];
            const keel_field_desc *fd = f->fd;
            if (fd->type == KEEL_T_FLOAT)
                for (size_t b = 0; b < nb; b++) {
                    lua_pushnumber(L, *(const double *)((const char *)buf.rec[b * nk + f->kind] + f->off));
                    lua_rawseti(L, f->arr, (lua_Integer)b + 1);
                }
            else
                for (size_t b = 0; b < nb; b++) {
                    keel__lua_push_stored(L, fd, (const char *)buf.rec[b * nk + f->kind] + f->off, w, 2);
                    lua_rawseti(L, f->arr, (lua_Integer)b + 1);
                }
            for (size_t b = nb; b < prev; b++) { /* a shorter batch than the last: #a.x is nb */
                lua_pushnil(L);
                lua_rawseti(L, f->arr, (lua_Integer)b + 1);
            }
        }
        if (ent) {
            for (size_t b = 0; b < nb; b++) {
                keel__lua_push_entity_lw(L, r->lw, 2, 6, buf.e[b]);
                lua_rawseti(L, ent, (lua_Integer)b + 1);
            }
            for (size_t b = nb; b < prev; b++) {
                lua_pushnil(L);
                lua_rawseti(L, ent, (lua_Integer)b + 1);
            }
        }
        prev = nb;
        r->visited += (lua_Integer)nb;
        lua_pushinteger(L, (lua_Integer)nb);
        lua_setfield(L, 5, "n");
        keel__callback_open(w, &r->txn);
        r->in_call = true;
        unsigned long entries = keel__lua_entries;
        lua_pushvalue(L, 3);
        lua_pushinteger(L, (lua_Integer)nb);
        for (size_t i = 0; i < nk; i++) lua_pushvalue(L, kt + (int)i);
        lua_pushnumber(L, dt);
        lua_call(L, (int)nk + 2, 0);
        write_back(L, r, &buf, nb, cf, ncf, entries != keel__lua_entries, vals);
        lua_settop(L, top);
        r->in_call = false;
        keel__callback_close(w, &r->txn, KEEL_OK);
    }
    keel__lua_kept_end(kept);
    return 0;
}

/* w:_columns(kinds, writes, fn, dt, entities, cache) -> true, entities visited | false, err */
static int w_columns(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TTABLE || lua_type(L, 3) != LUA_TTABLE)
        return keel__lua_argerror(L, 2, "lists of kind keys expected");
    if (lua_type(L, 4) != LUA_TFUNCTION) return keel__lua_argerror(L, 4, "a function expected");
    if (lua_type(L, 5) != LUA_TNUMBER) return keel__lua_argerror(L, 5, "a number expected");
    if (lua_type(L, 7) != LUA_TTABLE) return keel__lua_argerror(L, 7, "a cache table expected");
    keel_lua_ctx *ctx = lw->ctx;
    size_t nk = lua_rawlen(L, 2);
    if (nk == 0) return keel__lua_argerror(L, 2, "a list of at least one kind key expected");
    if (nk > KEEL_LUA_MAX_DEPTH)
        return keel__lua_raisef(L, KEEL_LIMIT_EXCEEDED, "a columns system's query of %d kinds is over %d",
                                (int)nk, KEEL_LUA_MAX_DEPTH);
    /* a queried kind nobody holds: nothing to visit, and nothing allocated (steps of a world the
     * system does not concern stay free of garbage) */
    keel_kind_id kinds[KEEL_LUA_MAX_DEPTH];
    for (size_t i = 0; i < nk; i++) {
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        const char *key = lua_tostring(L, -1);
        keel_kind_id k = key ? keel_kind_find(key) : KEEL_NO_KIND;
        lua_pop(L, 1);
        if (!k || keel_storage_count(lw->w, k) == 0) {
            lua_pushboolean(L, 1);
            return 1;
        }
        kinds[i] = k;
    }
    lua_settop(L, 7);
    cols_run *r = lua_newuserdatauv(L, sizeof *r, 0); /* 8 */
    memset(r, 0, sizeof *r);
    r->lw = lw;
    r->nk = nk;
    r->entities = lua_toboolean(L, 6);
    memcpy(r->kinds, kinds, nk * sizeof *kinds);
    for (size_t j = 1, nw = lua_rawlen(L, 3); j <= nw; j++) {
        lua_rawgeti(L, 3, (lua_Integer)j);
        const char *key = lua_tostring(L, -1);
        for (size_t i = 0; key && i < nk; i++) {
            lua_rawgeti(L, 2, (lua_Integer)i + 1);
            if (strcmp(lua_tostring(L, -1), key) == 0) r->writes[i] = true;
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    KEEL_LUA_ENTER(L, ctx);
    lua_pushcfunction(L, columns_loop);
    lua_pushvalue(L, 8);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 5);
    lua_pushvalue(L, 7);
    int st = lua_pcall(L, 5, 0, 0);
    if (r->owns_list) ctx->each_busy = false;
    if (r->in_call && lw->w) keel__callback_close(lw->w, &r->txn, KEEL_INVALID_OPERATION);
    KEEL_LUA_LEAVE();
    if (st == LUA_OK) { /* true, and the entities visited (the profiler's count) */
        lua_pushboolean(L, 1);
        lua_pushinteger(L, r->visited);
        return 2;
    }
    return keel__lua_pcall_result(L, st);
}

const luaL_Reg keel__lua_columns_world_methods[] = { { "_columns", w_columns }, { NULL, NULL } };
