/* scene_read.c — a scene document (keel_node tree) to a validated world: transactional, every problem listed.
 *
 * A load builds a fresh world while it reads and returns it only if no error was found; on any
 * error the world is freed, so a caller never sees half a scene. It does not stop at the first
 * problem: every entity, component and field is checked and each problem gets a diagnostic with
 * its path (entities[3].components[1].body.hp) and line, so one pass over a hand-edited file
 * shows all that is wrong with it.
 *
 * The reader streams. A big scene is mostly its `entities` list, and keel__yaml_parse_stream
 * can hand that list's items over one at a time and free each: every entity is validated and
 * spawned as it is read (load_entity), so memory stays at one entity's tree however long the
 * file. When the `root:` components come before the list (the writer always puts them there),
 * stream_begin loads them first; otherwise build() loads them after. A tree given whole is
 * loaded the same way from build(). Either way what later passes need of an entity outlives its node in a
 * small ent_rec (its handle, its parent's UUID, positions as line and column, offsets into the
 * loader's text and position arrays). The loader context (`ld`) holds those arrays, the world
 * being built, the unknown kinds counted, and the component references to check later.
 *
 * Some checks can only run once everything exists, so the passes follow DESIGN.md's order:
 * each entity is spawned at the top level with its components decoded (load_entity); then
 * parents are resolved by UUID, entity and asset references in bodies checked, parent rings
 * found and reported once each (find_rings) before any link is made, the hierarchy linked and
 * its depth checked, and last each entity's kind rules. Streaming means the scene and settings
 * keys may be looked at after the entities, so diagnostics go to one list per stage (B_TOP ...
 * B_TAIL) that are joined at the end and then sorted (by_stage): errors before warnings, the
 * earliest stage first, document order within a stage, so the first diagnostic, the one an
 * error object reports, is the same whatever the order of the file. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/world.h"
#include "model/body.h"
#include "model/kind.h"
#include "files/yaml_read.h"
#include "bind.h" /* keel__scene_parse_fragment */
#include "files/scene_read.h"
#include "files/features.h"
#include "base/vec.h"

typedef struct unknown_count {
    char *key;
    size_t count, root_count; /* root_count: of them, in the root's components */
    int newer; /* 0: not registered; else the registered version the file's is newer than */
} unknown_count;

/* A place in the document, kept once the node it came from is freed (entities are read one
 * at a time and dropped: see keel__yaml_parse_stream). */
typedef struct pos {
    int line, col;
} pos;

/* What the loader keeps about one entity record of the document after reading it. */
typedef struct ent_rec {
    keel_entity e;        /* KEEL_NO_ENTITY when the record was refused */
    keel_entity parent_e; /* the parent found by UUID (KEEL_NO_ENTITY: top level, or not found) */
    keel_uuid parent_u;   /* has_parent: the well-formed parent UUID it names */
    pos at, parent_at, comps_at; /* the record, its parent's value, its components' value */
    size_t parent_text;   /* has_parent: the parent's text, an offset in loader.texts */
    size_t comp_first, comp_n; /* comps_seq: its entries' positions in loader.comp_pos */
    bool has_parent, has_comps, comps_seq, comps_ok;
} ent_rec;

/* A loaded component whose entity and asset fields are checked once every entity exists
 * (the root's components come before the entities they may name). */
typedef struct ref_check {
    keel_comp c;
    pos *field_at; /* per field of the kind: where the body gave it (0: absent) */
    char *bpath;
} ref_check;

/* Diagnostics go to one list per stage of reading, joined in this order at the end: the
 * order a whole-document pass gives, though entities are read before what follows them in
 * the file (the scene, settings) is looked at. */
enum { B_TOP, B_ROOT, B_LIST, B_SPAWN, B_COMPS, B_TAIL, B_COUNT };

typedef struct loader {
    const keel_load_opts *o;
    const char *file;
    keel_diags lists[B_COUNT];
    keel_diags *diags; /* the list being written */
    keel_world *w;
    unknown_count *unk;
    size_t unk_n, unk_cap, unk_root_n; /* unk_root_n: those the root's components named */
    ref_check *refs;
    size_t refs_n, refs_cap, refs_root_n;
    ent_rec *recs;
    size_t recs_n, recs_cap;
    pos *comp_pos;
    size_t comp_pos_n, comp_pos_cap;
    char *texts;
    size_t texts_n, texts_cap;
    bool streamed;  /* the entities were built as they were read */
    bool root_done; /* the root's components are loaded */
    size_t total, bytes; /* the text's size and how much of it is read (for o->progress) */
    struct { char text[48]; size_t len; } valid_kinds[4]; /* kind_key_valid's last valid keys (len 0: none) */
    unsigned valid_kinds_next;
    bool fragment;         /* a pasted fragment (keel__scene_parse_fragment): entity references may
                            * name entities outside it */
} loader;

static keel_node at_pos(pos p)
{
    keel_node n;
    memset(&n, 0, sizeof n);
    n.line = p.line;
    n.col = p.col;
    return n;
}

static pos pos_of(const keel_node *n) { return (pos){ n->line, n->col }; }

static void vreport(loader *ld, keel_severity sev, keel_status code, const char *path, const keel_node *at,
                    const char *fmt, va_list ap)
{
    char msg[640];
    vsnprintf(msg, sizeof msg, fmt, ap);
    keel_diag_add(ld->diags, sev, code, path, ld->file, at ? at->line : 0, at ? at->col : 0, "%s", msg);
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void error(loader *ld, keel_status code, const char *path, const keel_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(ld, KEEL_SEV_ERROR, code, path, at, fmt, ap);
    va_end(ap);
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void warning(loader *ld, keel_status code, const char *path, const keel_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(ld, KEEL_SEV_WARNING, code, path, at, fmt, ap);
    va_end(ap);
}

/* Moves diagnostics from a world call into the loader's list, filling in the
 * path and position of the document node they concern when the call had none. */
static bool forward(loader *ld, keel_diags *tmp, const char *path, const keel_node *at)
{
    bool had_error = tmp->errors > 0;
    for (size_t i = 0; i < tmp->count; i++) {
        keel_diag *g = &tmp->items[i];
        if (!g->path || !*g->path) {
            free(g->path);
            g->path = keel__strdup(path);
        }
        if (!g->file && ld->file) g->file = keel__strdup(ld->file);
        if (g->line == 0 && at) {
            g->line = at->line;
            g->col = at->col;
        }
    }
    keel_diags_append(ld->diags, tmp, "");
    return !had_error;
}

/* v in decimal at buf + n (the caller leaves room for 20 digits); returns the new length. */
static size_t put_number(char *buf, size_t n, unsigned long long v)
{
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k) buf[n++] = digits[--k];
    return n;
}

/* Paths are built for every record, so this knows only %s, %zu and %d and
 * skips printf's machinery. */
static char *pathf(const char *fmt, ...)
{
    char buf[512];
    size_t n = 0;
    va_list ap;
    va_start(ap, fmt);
    for (const char *f = fmt; *f && n < sizeof buf - 24; f++) {
        if (*f != '%') {
            buf[n++] = *f;
            continue;
        }
        f++;
        if (*f == 's') {
            for (const char *a = va_arg(ap, const char *); *a && n < sizeof buf - 24; a++) buf[n++] = *a;
            continue;
        }
        unsigned long long v;
        if (*f == 'z') {
            f++;
            v = va_arg(ap, size_t);
        } else {
            int i = va_arg(ap, int);
            if (i < 0) {
                buf[n++] = '-';
                i = -i;
            }
            v = (unsigned)i;
        }
        n = put_number(buf, n, v);
    }
    va_end(ap);
    buf[n] = '\0';
    return keel__strdup(buf);
}

/* The paths every record and entry gets, written into the caller's buffer of PATH_CAP bytes
 * (no allocation per record), cut where pathf cuts them. */
enum { PATH_CAP = 512, PATH_END = PATH_CAP - 24 };

static size_t put_text(char *buf, size_t n, const char *s)
{
    if (n >= PATH_END) return n;
    size_t len = strlen(s);
    if (len > PATH_END - n) len = PATH_END - n;
    memcpy(buf + n, s, len);
    return n + len;
}

/* pathf("%s%s", a, b) */
static const char *path_join(char *buf, const char *a, const char *b)
{
    buf[put_text(buf, put_text(buf, 0, a), b)] = '\0';
    return buf;
}

/* pathf("%s[%zu]%s", a, i, b) */
static const char *path_index(char *buf, const char *a, size_t i, const char *b)
{
    size_t n = put_text(buf, 0, a);
    if (n < PATH_END) buf[n++] = '[';
    n = put_number(buf, n, i);
    if (n < PATH_END) buf[n++] = ']';
    buf[put_text(buf, n, b)] = '\0';
    return buf;
}

/* ---- scalars ---- */

static const char *show(const keel_node *n)
{
    if (n->kind == KEEL_NODE_SEQ) return "a list";
    if (n->kind == KEEL_NODE_MAP) return "a map";
    return n->text;
}

/* libyaml decodes "\0"; read as a C string, such a scalar would be cut short. */
static bool refuse_nul(loader *ld, const keel_node *n, const char *path)
{
    error(ld, KEEL_INVALID_ARGUMENT, path, n, "'%.64s...' holds a NUL byte", n->text);
    return false;
}

static bool want_bool(loader *ld, const keel_node *n, const char *path, bool *out)
{
    if (keel__node_has_nul(n)) return refuse_nul(ld, n, path);
    if (n->kind == KEEL_NODE_SCALAR && keel_node_as_bool(n, out)) return true;
    error(ld, KEEL_INVALID_ARGUMENT, path, n, "expected a boolean, got '%.64s'", show(n));
    return false;
}

static bool want_int(loader *ld, const keel_node *n, const char *path, int64_t *out)
{
    if (keel__node_has_nul(n)) return refuse_nul(ld, n, path);
    if (n->kind == KEEL_NODE_SCALAR && keel_node_as_int(n, out)) return true;
    error(ld, KEEL_INVALID_ARGUMENT, path, n, "expected an integer, got '%.64s'", show(n));
    return false;
}

static bool want_float(loader *ld, const keel_node *n, const char *path, double *out)
{
    if (keel__node_has_nul(n)) return refuse_nul(ld, n, path);
    if (n->kind != KEEL_NODE_SCALAR || !keel_node_as_float(n, out)) {
        error(ld, KEEL_INVALID_ARGUMENT, path, n, "expected a number, got '%.64s'", show(n));
        return false;
    }
    if (!isfinite(*out)) {
        error(ld, KEEL_INVALID_ARGUMENT, path, n, "%s is not finite", n->text);
        return false;
    }
    return true;
}

static bool want_vec(loader *ld, const keel_node *n, const char *path, int width, double *out)
{
    if (n->kind != KEEL_NODE_SEQ || n->count != (size_t)width) {
        error(ld, KEEL_INVALID_ARGUMENT, path, n, "expected a list of %d numbers", width);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < width; i++) {
        char *p = pathf("%s[%d]", path, i);
        ok = want_float(ld, &n->items[i], p, &out[i]) && ok;
        free(p);
    }
    return ok;
}

/* Strings: any scalar's text (null reads as ""); a collection is the wrong type. */
static const char *want_string(loader *ld, const keel_node *n, const char *path)
{
    if (n->kind != KEEL_NODE_SCALAR) {
        error(ld, KEEL_INVALID_ARGUMENT, path, n, "expected a string, got %s", show(n));
        return NULL;
    }
    if (keel__node_has_nul(n)) {
        refuse_nul(ld, n, path);
        return NULL;
    }
    return keel_node_is_null(n) ? "" : n->text;
}

static bool want_uuid(loader *ld, const keel_node *n, const char *path, keel_uuid *out)
{
    if (n->kind != KEEL_NODE_SCALAR || keel__node_has_nul(n) || !keel_uuid_parse(n->text, out)) {
        error(ld, KEEL_PARSE_ERROR, path, n, "malformed uuid '%.64s'", show(n));
        return false;
    }
    if (keel_uuid_is_nil(*out)) {
        error(ld, KEEL_PARSE_ERROR, path, n, "the nil uuid is not allowed here");
        return false;
    }
    return true;
}

static bool is_null(const keel_node *n) { return n->kind == KEEL_NODE_SCALAR && keel_node_is_null(n); }

static void unknown_key(loader *ld, const keel_node *k, const char *path, const char *what)
{
    char *p = path[0] ? pathf("%s.%s", path, k->text) : pathf("%s", k->text);
    error(ld, KEEL_PARSE_ERROR, p, k, "unknown key '%.64s'%s in %s", k->text,
          keel__node_has_nul(k) ? " (holding a NUL byte)" : "", what);
    free(p);
}

/* A MAP whose keys must all be among `allowed` (others are ParseError), and a keel_node_get of
 * each allowed key in the same pass over the keys (records and entries are many): vals[a] is what keel_node_get(n, allowed[a]) gives, the first key equal
 * to it as a C string, or NULL. A key with a NUL byte can equal one so, yet is not allowed. */
static bool want_fields(loader *ld, const keel_node *n, const char *path, const char *what,
                        const char *const *allowed, const keel_node **vals)
{
    size_t count = 0;
    for (; allowed[count]; count++) vals[count] = NULL;
    if (n->kind != KEEL_NODE_MAP) {
        error(ld, KEEL_PARSE_ERROR, path, n, "%s must be a map", what);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n->count; i++) {
        const keel_node *k = &n->items[2 * i];
        bool found = false;
        for (size_t a = 0; a < count && k->kind == KEEL_NODE_SCALAR && k->text; a++) {
            const char *s = allowed[a];
            if (k->text[0] != s[0]) continue;
            size_t len = strlen(s);
            if (k->len < len || memcmp(k->text, s, len + 1) != 0) continue; /* with its NUL: strcmp's equal */
            if (!vals[a]) vals[a] = &n->items[2 * i + 1];
            found = k->len == len;
            break;
        }
        if (!found) {
            unknown_key(ld, k, path, what);
            ok = false;
        }
    }
    return ok;
}

/* want_fields for a section whose values are read later (at most 15 allowed keys). */
static bool want_map(loader *ld, const keel_node *n, const char *path, const char *what,
                     const char *const *allowed)
{
    const keel_node *vals[16];
    return want_fields(ld, n, path, what, allowed, vals);
}

/* 1 to 9 decimal digits in a plain scalar: keel_node_as_int's answer, without its general path. */
static bool small_uint(const keel_node *n, int64_t *out)
{
    if (n->kind != KEEL_NODE_SCALAR || !n->text || n->len == 0 || n->len > 9 || n->style == KEEL_STYLE_SINGLE ||
        n->style == KEEL_STYLE_DOUBLE || n->style == KEEL_STYLE_LITERAL || n->style == KEEL_STYLE_FOLDED)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n->len; i++) {
        unsigned d = (unsigned)(unsigned char)n->text[i] - '0';
        if (d > 9) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* keel_node_get(body, key) (a body is a map), with most keys told apart by their first byte. */
static const keel_node *body_get(const keel_node *body, const char *key)
{
    size_t len = 0;
    for (size_t i = 0; i < body->count; i++) {
        const keel_node *k = &body->items[2 * i];
        if (k->kind != KEEL_NODE_SCALAR || !k->text || k->text[0] != key[0]) continue;
        if (!len) len = strlen(key);
        if (k->len >= len && memcmp(k->text, key, len + 1) == 0) return &body->items[2 * i + 1];
    }
    return NULL;
}

/* Encoded size of a body, approximated by the text it holds (as saves and sets count it). */
static size_t body_size(const keel_node *n) { return keel__body_size(n); }

/* ---- sections ---- */

/* settings.random: the world's generator (random.c) as a dump left it, seed and state (64 hex
 * digits, four 64-bit words); a seed alone starts the generator from that seed. */
static void load_random(loader *ld, const keel_node *n)
{
    static const char *const keys[] = { "seed", "state", NULL };
    if (!want_map(ld, n, "settings.random", "settings.random", keys)) return;
    const keel_node *sn = keel_node_get(n, "seed"), *st = keel_node_get(n, "state");
    int64_t seed = 0;
    if (!sn) {
        error(ld, KEEL_PARSE_ERROR, "settings.random", n, "settings.random needs a seed");
        return;
    }
    if (!want_int(ld, sn, "settings.random.seed", &seed)) return;
    if (!st) {
        keel_world_set_seed(ld->w, seed);
        return;
    }
    uint64_t rs[4] = { 0 };
    bool ok = st->kind == KEEL_NODE_SCALAR && st->text && st->len == 64;
    for (size_t i = 0; ok && i < 64; i++) {
        char c = st->text[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) ok = false;
        else rs[i / 16] = rs[i / 16] << 4 | (uint64_t)v;
    }
    if (!ok || !(rs[0] | rs[1] | rs[2] | rs[3])) {
        error(ld, KEEL_INVALID_ARGUMENT, "settings.random.state", st,
              "expected 64 lowercase hex digits, not all zero, got '%.64s'", show(st));
        return;
    }
    keel_random_set_state(ld->w, seed, rs, NULL);
}

static void load_grid(loader *ld, const keel_node *n)
{
    static const char *const keys[] = { "enabled",     "origin",      "orientation", "base_spacing",
                                        "major_line_every", "minor_color", "major_color", "u_color",
                                        "v_color",     "fade",        "display",     NULL };
    if (!want_map(ld, n, "settings.grid", "settings.grid", keys)) return;
    keel_grid g = *keel_world_grid(ld->w);
    bool ok = true;
    const keel_node *v;
    if ((v = keel_node_get(n, "enabled"))) ok = want_bool(ld, v, "settings.grid.enabled", &g.enabled) && ok;
    if ((v = keel_node_get(n, "origin"))) ok = want_vec(ld, v, "settings.grid.origin", 3, g.origin) && ok;
    if ((v = keel_node_get(n, "orientation"))) {
        if (want_vec(ld, v, "settings.grid.orientation", 4, g.orientation)) {
            double q = 0;
            for (int i = 0; i < 4; i++) q += g.orientation[i] * g.orientation[i];
            if (fabs(sqrt(q) - 1.0) > 1e-6) {
                error(ld, KEEL_INVALID_ARGUMENT, "settings.grid.orientation", v,
                      "orientation must be a normalized quaternion (length %g)", sqrt(q));
                ok = false;
            }
        } else {
            ok = false;
        }
    }
    if ((v = keel_node_get(n, "base_spacing"))) {
        if (want_float(ld, v, "settings.grid.base_spacing", &g.base_spacing)) {
            if (!(g.base_spacing > 0)) {
                error(ld, KEEL_INVALID_ARGUMENT, "settings.grid.base_spacing", v, "base_spacing must be > 0");
                ok = false;
            }
        } else {
            ok = false;
        }
    }
    if ((v = keel_node_get(n, "major_line_every"))) {
        if (want_int(ld, v, "settings.grid.major_line_every", &g.major_line_every)) {
            if (g.major_line_every < 1) {
                error(ld, KEEL_INVALID_ARGUMENT, "settings.grid.major_line_every", v, "major_line_every must be >= 1");
                ok = false;
            }
        } else {
            ok = false;
        }
    }
    static const char *const colors[] = { "minor_color", "major_color", "u_color", "v_color" };
    double *slots[] = { g.minor_color, g.major_color, g.u_color, g.v_color };
    for (int c = 0; c < 4; c++) {
        char path[40];
        snprintf(path, sizeof path, "settings.grid.%s", colors[c]);
        if (!(v = keel_node_get(n, colors[c]))) continue;
        if (!want_vec(ld, v, path, 4, slots[c])) {
            ok = false;
            continue;
        }
        for (int i = 0; i < 4; i++)
            if (!(slots[c][i] >= 0 && slots[c][i] <= 1)) {
                error(ld, KEEL_INVALID_ARGUMENT, path, v, "%s's r, g, b, a must each be in [0, 1]", colors[c]);
                ok = false;
                break;
            }
    }
    if ((v = keel_node_get(n, "fade"))) {
        if (want_float(ld, v, "settings.grid.fade", &g.fade)) {
            if (!(g.fade >= 0)) {
                error(ld, KEEL_INVALID_ARGUMENT, "settings.grid.fade", v, "fade must be >= 0 (0: never)");
                ok = false;
            }
        } else {
            ok = false;
        }
    }
    if ((v = keel_node_get(n, "display"))) {
        const char *t = v->kind == KEEL_NODE_SCALAR && v->text ? v->text : "";
        if (strcmp(t, "lines") == 0) g.display = KEEL_GRID_LINES;
        else if (strcmp(t, "dots") == 0) g.display = KEEL_GRID_DOTS;
        else if (strcmp(t, "none") == 0) g.display = KEEL_GRID_NONE;
        else {
            error(ld, KEEL_INVALID_ARGUMENT, "settings.grid.display", v, "display must be lines, dots or none");
            ok = false;
        }
    }
    if (!ok) return;
    keel_diags tmp;
    keel_diags_init(&tmp);
    keel_world_set_grid(ld->w, &g, &tmp);
    forward(ld, &tmp, "settings.grid", n);
}

static void count_unknown(loader *ld, const char *key, int newer)
{
    for (size_t i = 0; i < ld->unk_n; i++)
        if (strcmp(ld->unk[i].key, key) == 0 && ld->unk[i].newer == newer) {
            ld->unk[i].count++;
            return;
        }
    KEEL__VEC_RESERVE(ld->unk, ld->unk_n, ld->unk_cap, 1, 4);
    ld->unk[ld->unk_n].key = keel__strdup(key);
    ld->unk[ld->unk_n].count = 1;
    ld->unk[ld->unk_n].root_count = 0;
    ld->unk[ld->unk_n].newer = newer;
    ld->unk_n++;
}

/* Entity fields must name an entity of the document; asset fields an asset of the manifest. */
static bool has_references(const keel_kind_desc *kd)
{
    for (size_t f = 0; f < kd->field_count; f++)
        if (kd->fields[f].type == KEEL_T_ENTITY || kd->fields[f].type == KEEL_T_ASSET) return true;
    return false;
}

static void check_references(loader *ld, keel_comp c, const pos *field_at, const char *bpath, bool entities)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    for (size_t f = 0; kd && f < kd->field_count; f++) {
        keel_type t = kd->fields[f].type;
        if (t != KEEL_T_ENTITY && t != KEEL_T_ASSET) continue;
        keel_value v;
        if (keel_get(ld->w, c, (int)f, &v, NULL) != KEEL_OK || v.nil || keel_uuid_is_nil(v.as.u)) continue;
        keel_node at = at_pos(field_at[f]);
        char u[37];
        keel_uuid_format(v.as.u, u);
        char *p = pathf("%s.%s", bpath, kd->fields[f].key);
        if (t == KEEL_T_ENTITY && entities && !ld->fragment && !keel_find(ld->w, v.as.u)) {
            error(ld, KEEL_NOT_FOUND, p, &at, "entity reference %s is not an entity of this scene", u);
        } else if (t == KEEL_T_ASSET && ld->o->assets && !keel_assets_has(ld->o->assets, v.as.u)) {
            if (ld->o->strict) {
                error(ld, KEEL_NOT_FOUND, p, &at, "asset %s is not in the manifest", u);
            } else {
                warning(ld, KEEL_NOT_FOUND, p, &at, "asset %s is not in the manifest; using a placeholder", u);
            }
        }
        free(p);
    }
}

/* What a file holds but a save will drop (a runtime-only kind, a transient field) is read,
 * and said: `keel fmt` would otherwise lose it without a word. */
static void warn_unsaved(loader *ld, const keel_kind_desc *kd, const keel_node *n, const keel_node *body,
                         const char *cpath)
{
    if (kd->flags & KEEL_KIND_NOSAVE) {
        warning(ld, KEEL_UNSUPPORTED, cpath, n, "%s is nosave (runtime only): loaded, but never saved", kd->key);
        return;
    }
    for (size_t f = 0; body && f < kd->field_count; f++) {
        unsigned fl = kd->fields[f].flags;
        const keel_node *at = (fl & (KEEL_FIELD_TRANSIENT | KEEL_FIELD_RUNTIME)) ? body_get(body, kd->fields[f].key) : NULL;
        if (!at) continue;
        char *p = pathf("%s.body.%s", cpath, kd->fields[f].key);
        warning(ld, KEEL_UNSUPPORTED, p, at, "%s: field '%s' is %s: read, but never %s", kd->key, kd->fields[f].key,
                fl & KEEL_FIELD_TRANSIENT ? "transient" : "runtime",
                fl & KEEL_FIELD_TRANSIENT ? "saved" : "written to a scene file");
        free(p);
    }
}

/* What a component entry says besides its body: checked, each problem an error. */
typedef struct comp_head {
    const char *key;
    int64_t version, slot; /* slot -1: none given */
    bool enabled;
} comp_head;

/* keel__kind_key_valid, remembering the last keys it passed: entries name few kinds, over and over. */
static bool kind_key_valid(loader *ld, const keel_node *kn)
{
    if (kn->kind != KEEL_NODE_SCALAR) return false;
    for (int i = 0; i < 4; i++)
        if (ld->valid_kinds[i].len && kn->len == ld->valid_kinds[i].len &&
            memcmp(kn->text, ld->valid_kinds[i].text, kn->len) == 0)
            return true;
    if (keel__node_has_nul(kn) || !keel__kind_key_valid(kn->text)) return false;
    if (kn->len < sizeof ld->valid_kinds[0].text) {
        unsigned i = ld->valid_kinds_next++ % 4;
        memcpy(ld->valid_kinds[i].text, kn->text, kn->len);
        ld->valid_kinds[i].len = kn->len;
    }
    return true;
}

static bool read_kind_key(loader *ld, const keel_node *n, const keel_node *kn, const char *cpath, comp_head *h)
{
    if (!kn) {
        error(ld, KEEL_PARSE_ERROR, cpath, n, "missing key 'kind'");
        return false;
    }
    if (!kind_key_valid(ld, kn)) {
        char *p = pathf("%s.kind", cpath);
        error(ld, KEEL_PARSE_ERROR, p, kn, "malformed kind key '%.64s'%s (ns:name, [a-z0-9_]+)", show(kn),
              keel__node_has_nul(kn) ? " (holding a NUL byte)" : "");
        free(p);
        return false;
    }
    h->key = kn->text;
    return true;
}

static bool read_version(loader *ld, const keel_node *n, const keel_node *vn, const char *cpath, comp_head *h)
{
    if (!vn) {
        error(ld, KEEL_PARSE_ERROR, cpath, n, "missing key 'version'");
        return false;
    }
    if (small_uint(vn, &h->version) && h->version >= 1) return true; /* the common case */
    if (vn->kind == KEEL_NODE_SCALAR && !keel__node_has_nul(vn) && keel_node_as_int(vn, &h->version) &&
        h->version >= 1 && h->version <= INT32_MAX)
        return true; /* before any path is built */
    char *p = pathf("%s.version", cpath);
    bool ok = true;
    if (want_int(ld, vn, p, &h->version) && (h->version < 1 || h->version > INT32_MAX)) {
        error(ld, KEEL_INVALID_ARGUMENT, p, vn, "version must be an integer >= 1");
        ok = false;
    } else if (h->version < 1) {
        ok = false;
    }
    free(p);
    return ok;
}

static bool read_slot(loader *ld, const keel_node *sn, const char *cpath, comp_head *h)
{
    if (!sn) return true;
    if (small_uint(sn, &h->slot)) return true; /* the common case */
    if (sn->kind == KEEL_NODE_SCALAR && !keel__node_has_nul(sn) && keel_node_as_int(sn, &h->slot) && h->slot >= 0 &&
        h->slot < (int64_t)UINT32_MAX)
        return true; /* the common case, before any path is built */
    char *p = pathf("%s.slot", cpath);
    bool ok = want_int(ld, sn, p, &h->slot);
    if (ok && (h->slot < 0 || h->slot >= (int64_t)UINT32_MAX)) {
        error(ld, KEEL_INVALID_ARGUMENT, p, sn, "slot must be an integer from 0 to %u",
              (unsigned)(KEEL_SLOT_AUTO - 1)); /* KEEL_SLOT_AUTO itself means "none" */
        ok = false;
    }
    free(p);
    return ok;
}

/* The entry's values: kind, version, slot, enabled (load_component's keys). */
static bool read_head(loader *ld, const keel_node *n, const keel_node *const *v, const char *cpath, comp_head *h)
{
    *h = (comp_head){ NULL, 0, -1, true };
    bool ok = read_kind_key(ld, n, v[0], cpath, h);
    ok = read_version(ld, n, v[1], cpath, h) && ok;
    ok = read_slot(ld, v[2], cpath, h) && ok;
    if (v[3]) {
        char p[PATH_CAP];
        ok = want_bool(ld, v[3], path_join(p, cpath, ".enabled"), &h->enabled) && ok;
    }
    return ok;
}

/* The body: absent or null (none), else a map within the size limit. */
static bool check_body(loader *ld, const keel_node *body, const char *bpath)
{
    if (body && body->kind != KEEL_NODE_MAP) {
        error(ld, KEEL_PARSE_ERROR, bpath, body, "a component body must be a map");
        return false;
    }
    if (body && body_size(body) > ld->o->limits.body_size) {
        error(ld, KEEL_LIMIT_EXCEEDED, bpath, body, "component body larger than the limit (%zu bytes)",
              ld->o->limits.body_size);
        return false;
    }
    return true;
}

/* A declared kind at a version it knows: decoded, added (rules and awake come later). */
static bool add_known(loader *ld, keel_entity e, const keel_node *n, const comp_head *h, keel_kind_id k,
                      const keel_node *body, const char *cpath, const char *bpath)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    keel_diags tmp;
    keel_diags_init(&tmp);
    keel_add_opts ao = KEEL_ADD_OPTS_INIT;
    ao.slot = h->slot < 0 ? KEEL_SLOT_AUTO : (uint32_t)h->slot;
    ao.body = body;
    ao.version = (int)h->version;
    ao.strict = ld->o->strict;
    ao.skip_rules = true;
    ao.no_awake = true;
    ao.path = bpath;
    ao.file = ld->file;
    keel_comp c;
    if (keel_add(ld->w, e, k, &ao, &c, NULL, &tmp) != KEEL_OK) {
        forward(ld, &tmp, cpath, n);
        return false;
    }
    if (!h->enabled) keel_comp_set_enabled(ld->w, c, false, NULL, &tmp);
    bool ok = forward(ld, &tmp, cpath, n);
    warn_unsaved(ld, kd, n, body, cpath);
    if (has_references(kd)) {
        KEEL__VEC_RESERVE(ld->refs, ld->refs_n, ld->refs_cap, 1, 64);
        pos *field_at = keel__xcalloc(kd->field_count ? kd->field_count : 1, sizeof *field_at);
        for (size_t f = 0; body && f < kd->field_count; f++) {
            const keel_node *v = body_get(body, kd->fields[f].key);
            if (v) field_at[f] = pos_of(v);
        }
        ld->refs[ld->refs_n++] = (ref_check){ c, field_at, keel__strdup(bpath) };
    }
    return ok;
}

/* Not registered, or newer than the kind knows: kept whole, never guessed at. */
static bool add_unknown(loader *ld, keel_entity e, const keel_node *n, const comp_head *h,
                        const keel_kind_desc *kd, const keel_node *body, const char *cpath)
{
    keel_diags tmp;
    keel_diags_init(&tmp);
    uint32_t s = h->slot < 0 ? KEEL_SLOT_AUTO : (uint32_t)h->slot;
    keel_node *empty = body ? NULL : keel_node_new_map();
    bool ok;
    if (keel_add_unknown(ld->w, e, h->key, (int)h->version, s, body ? body : empty, &tmp) == KEEL_OK) {
        count_unknown(ld, h->key, kd ? (kd->version < 1 ? 1 : kd->version) : 0);
        /* The public command refuses edits to unknown entries; a loader
         * restores the flag the file recorded, on the entry just added. */
        keel__ent *ent = h->enabled ? NULL : keel__ent_get(ld->w, e);
        if (ent && ent->member_count) keel__entry_set_enabled(ld->w, &keel__members(ld->w, ent)[ent->member_count - 1], false);
        ok = forward(ld, &tmp, cpath, n);
    } else {
        forward(ld, &tmp, cpath, n);
        ok = false;
    }
    keel_node_free(empty);
    return ok;
}

static bool load_component(loader *ld, keel_entity e, const keel_node *n, const char *cpath)
{
    static const char *const keys[] = { "kind", "version", "slot", "enabled", "body", NULL };
    const keel_node *v[5];
    if (!want_fields(ld, n, cpath, "a component", keys, v)) return false;
    comp_head h;
    bool ok = read_head(ld, n, v, cpath, &h);
    const keel_node *body = v[4];
    if (body && is_null(body)) body = NULL;
    char bpath[PATH_CAP];
    path_join(bpath, cpath, ".body");
    ok = check_body(ld, body, bpath) && ok;
    if (ok) {
        keel_kind_id k = keel_kind_find(h.key);
        const keel_kind_desc *kd = k ? keel_kind_describe(k) : NULL;
        if (kd && h.version <= (kd->version < 1 ? 1 : kd->version))
            ok = add_known(ld, e, n, &h, k, body, cpath, bpath);
        else
            ok = add_unknown(ld, e, n, &h, kd, body, cpath);
    }
    return ok;
}

/* Components of one entity (or of the root when `prefix` is "root"). */
static bool load_components(loader *ld, keel_entity e, const keel_node *list, const char *prefix)
{
    if (!list || is_null(list)) return true;
    if (list->kind != KEEL_NODE_SEQ) {
        error(ld, KEEL_PARSE_ERROR, prefix, list, "components must be a list");
        return false;
    }
    if (list->count > ld->o->limits.components_per_entity) {
        error(ld, KEEL_LIMIT_EXCEEDED, prefix, list, "more components than the limit (%zu)",
              ld->o->limits.components_per_entity);
        return false;
    }
    bool ok = true;
    for (size_t j = 0; j < list->count; j++) {
        char cpath[PATH_CAP];
        ok = load_component(ld, e, &list->items[j], path_index(cpath, prefix, j, "")) && ok;
    }
    return ok;
}

static void describe_entity(const loader *ld, keel_entity e, char *out, size_t cap)
{
    const char *name = keel_entity_name(ld->w, e);
    char u[37];
    keel_uuid_format(keel_entity_uuid(ld->w, e), u);
    if (name && *name) snprintf(out, cap, "%s (%s)", name, u);
    else snprintf(out, cap, "%s", u);
}

/* Rule diagnostics name "entities[i].components[j]": point them at that entry's line.
 * `at` holds the list's entries' positions (`count` of them; NULL: the value was no list). */
static void locate_components(keel_diags *tmp, const char *prefix, const pos *at, size_t count)
{
    if (!at) return;
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < tmp->count; i++) {
        keel_diag *g = &tmp->items[i];
        if (g->line || !g->path || strncmp(g->path, prefix, plen) != 0) continue;
        const char *rest = g->path + plen;
        size_t j;
        if (strncmp(rest, ".components[", 12) != 0 || sscanf(rest + 12, "%zu", &j) != 1 || j >= count)
            continue;
        g->line = at[j].line;
        g->col = at[j].col;
    }
}

static void entry_positions(loader *ld, const keel_node *list, size_t *first)
{
    *first = ld->comp_pos_n;
    KEEL__VEC_RESERVE(ld->comp_pos, ld->comp_pos_n, ld->comp_pos_cap, list->count, 64);
    for (size_t j = 0; j < list->count; j++) ld->comp_pos[ld->comp_pos_n++] = pos_of(&list->items[j]);
}

static size_t keep_text(loader *ld, const char *s, size_t len)
{
    KEEL__VEC_RESERVE(ld->texts, ld->texts_n, ld->texts_cap, len + 1, 64);
    size_t at = ld->texts_n;
    memcpy(ld->texts + at, s, len);
    ld->texts[at + len] = '\0';
    ld->texts_n += len + 1;
    return at;
}

/* One record of `entities`, as soon as it is read: validated and spawned at the top level
 * with its UUID (pass 1: its diagnostics in B_SPAWN), then its components decoded and added
 * (pass 2: B_COMPS). What later passes need of it is kept in an ent_rec; the node is not. */
static void load_entity(loader *ld, const keel_node *n, size_t i)
{
    static const char *const keys[] = { "uuid", "name", "parent", "enabled", "components", NULL };
    KEEL__VEC_RESERVE(ld->recs, ld->recs_n, ld->recs_cap, 1, 64);
    ent_rec *r = &ld->recs[ld->recs_n++];
    memset(r, 0, sizeof *r);
    r->at = pos_of(n);
    ld->diags = &ld->lists[B_SPAWN];
    char path[PATH_CAP], p[PATH_CAP];
    path_index(path, "entities", i, "");
    const keel_node *v[5];
    if (!want_fields(ld, n, path, "an entity", keys, v) && n->kind != KEEL_NODE_MAP) return;
    bool ok = true, uuid_ok = true;
    const keel_node *un = v[0], *nn = v[1], *parent = v[2], *en = v[3], *comps = v[4];
    keel_uuid u;
    path_join(p, path, ".uuid");
    if (!un) {
        error(ld, KEEL_PARSE_ERROR, path, n, "missing key 'uuid'");
        uuid_ok = false;
    } else if (want_uuid(ld, un, p, &u)) {
        keel_entity other = keel_find(ld->w, u);
        if (other) {
            int first = 0;
            for (size_t k = 0; k + 1 < ld->recs_n; k++)
                if (ld->recs[k].e == other) first = ld->recs[k].at.line;
            error(ld, KEEL_PARSE_ERROR, p, un, "duplicate entity uuid %s (first at line %d)", un->text, first);
            uuid_ok = false;
        }
    } else {
        uuid_ok = false;
    }
    const char *name = "";
    if (nn) {
        name = want_string(ld, nn, path_join(p, path, ".name"));
        if (!name) ok = false;
    }
    bool enabled = true;
    if (en) ok = want_bool(ld, en, path_join(p, path, ".enabled"), &enabled) && ok;
    if (parent && !is_null(parent)) { /* its syntax now; whom it names once all exist */
        if (want_uuid(ld, parent, path_join(p, path, ".parent"), &r->parent_u)) {
            r->has_parent = true;
            r->parent_at = pos_of(parent);
            r->parent_text = keep_text(ld, parent->text, parent->len);
        }
    }
    /* A bad uuid (already an error) still gets its components read, under a stand-in uuid:
     * every problem of a hand-written entity is reported in one pass. */
    if (!uuid_ok) u = keel_uuid_v4();
    if (ok) {
        keel_diags tmp;
        keel_diags_init(&tmp);
        if (keel_spawn(ld->w, name, KEEL_NO_ENTITY, &u, &r->e, NULL, &tmp) == KEEL_OK && !enabled)
            keel_set_enabled(ld->w, r->e, false, NULL, &tmp);
        forward(ld, &tmp, path, n);
    }
    if (!r->e) return;
    r->has_comps = comps != NULL;
    if (comps) r->comps_at = pos_of(comps);
    if (comps && comps->kind == KEEL_NODE_SEQ && comps->count <= ld->o->limits.components_per_entity) {
        r->comps_seq = true; /* else load_components refuses it, and no rule is checked */
        r->comp_n = comps->count;
        entry_positions(ld, comps, &r->comp_first);
    }
    ld->diags = &ld->lists[B_COMPS];
    r->comps_ok = load_components(ld, r->e, comps, path_index(p, "entities", i, ".components"));
}

/* Parents by UUID, in document order (a malformed one was reported by load_entity). */
static void resolve_parents(loader *ld, size_t count, ent_rec *recs)
{
    for (size_t i = 0; i < count; i++) {
        ent_rec *r = &recs[i];
        if (!r->e || !r->has_parent) continue;
        r->parent_e = keel_find(ld->w, r->parent_u);
        if (!r->parent_e) {
            char *p = pathf("entities[%zu].parent", i);
            keel_node at = at_pos(r->parent_at);
            error(ld, KEEL_NOT_FOUND, p, &at, "unknown parent %s", ld->texts + r->parent_text);
            free(p);
        }
    }
}

/* Parent rings, found on the resolved parents before anything is linked: a ring longer than
 * the depth limit is a cycle too, not a depth problem. Each ring is reported once, at its
 * member that comes last in the document (the link that would close it), and none of its
 * members is linked. Marks them in `in_ring`. */
static void find_rings(loader *ld, size_t count, ent_rec *recs, bool *in_ring)
{
    /* up[i]: the rec of rec i's parent (SIZE_MAX: none, or not an entity of the list) */
    size_t max = 0;
    for (size_t i = 0; i < count; i++)
        if (recs[i].e && (uint32_t)recs[i].e > max) max = (uint32_t)recs[i].e;
    size_t *rec_of = keel__xrealloc(NULL, (max + 1) * sizeof *rec_of);
    size_t *up = keel__xrealloc(NULL, (count ? count : 1) * sizeof *up);
    for (size_t i = 0; i <= max; i++) rec_of[i] = SIZE_MAX;
    for (size_t i = 0; i < count; i++)
        if (recs[i].e) rec_of[(uint32_t)recs[i].e] = i;
    for (size_t i = 0; i < count; i++) {
        keel_entity p = recs[i].e ? recs[i].parent_e : KEEL_NO_ENTITY;
        size_t at = p && (uint32_t)p <= max ? rec_of[(uint32_t)p] : SIZE_MAX;
        up[i] = at != SIZE_MAX && recs[at].e == p ? at : SIZE_MAX;
    }
    uint8_t *state = keel__xcalloc(count ? count : 1, 1); /* 0 unseen, 1 on this walk, 2 done */
    for (size_t start = 0; start < count; start++) {
        size_t j = start;
        while (j != SIZE_MAX && state[j] == 0) {
            state[j] = 1;
            j = up[j];
        }
        if (j != SIZE_MAX && state[j] == 1) { /* the walk came back to itself: j is on a ring */
            size_t closing = j;
            for (size_t k = up[j]; k != j; k = up[k])
                if (k > closing) closing = k;
            size_t k = closing;
            char chain[1024];
            describe_entity(ld, recs[closing].e, chain, sizeof chain);
            do {
                in_ring[k] = true;
                k = up[k];
                char part[160];
                describe_entity(ld, recs[k].e, part, sizeof part);
                size_t len = strlen(chain);
                if (len + strlen(part) + 8 < sizeof chain) snprintf(chain + len, sizeof chain - len, " -> %s", part);
            } while (k != closing);
            char *p = pathf("entities[%zu].parent", closing);
            keel_node at = at_pos(recs[closing].parent_at);
            error(ld, KEEL_INVALID_OPERATION, p, &at, "hierarchy cycle: %s", chain);
            free(p);
        }
        for (j = start; j != SIZE_MAX && state[j] == 1; j = up[j]) state[j] = 2;
    }
    free(state);
    free(up);
    free(rec_of);
}

/* Then the hierarchy, in document order, rings left out (find_rings reported them). Depth is
 * check_depth's (a subtree linked earlier makes it deeper than this walk sees); the world's
 * own limit can still refuse a link here. Returns whether it reported a depth problem. */
static bool link_parents(loader *ld, size_t count, ent_rec *recs)
{
    bool deep = false;
    bool *in_ring = keel__xcalloc(count ? count : 1, sizeof *in_ring);
    find_rings(ld, count, recs, in_ring);
    for (size_t i = 0; i < count; i++) {
        ent_rec *r = &recs[i];
        keel_entity parent = r->parent_e;
        if (!parent || in_ring[i]) continue;
        char *p = pathf("entities[%zu].parent", i);
        keel_diags tmp;
        keel_diags_init(&tmp);
        if (keel_reparent(ld->w, r->e, parent, NULL, &tmp) == KEEL_LIMIT_EXCEEDED) deep = true;
        keel_node at = at_pos(r->parent_at);
        forward(ld, &tmp, p, &at);
        free(p);
    }
    free(in_ring);
    return deep;
}
/* Hierarchy depth over the built tree (pre-order with an ancestor stack). */
static void check_depth(loader *ld)
{
    size_t limit = ld->o->limits.hierarchy_depth, n = 0, cap = 0;
    keel_entity *stack = NULL;
    for (keel_entity e = keel_next(ld->w, 0); e; e = keel_next(ld->w, e)) {
        keel_entity parent = keel_entity_parent(ld->w, e);
        while (n > 0 && stack[n - 1] != parent) n--;
        *KEEL__VEC_PUSH_SLOT(stack, n, cap, 64) = e;
        if (n > limit) {
            char u[37];
            keel_uuid_format(keel_entity_uuid(ld->w, e), u);
            error(ld, KEEL_LIMIT_EXCEEDED, "entities", NULL, "hierarchy deeper than the limit (%zu) at entity %s",
                  limit, u);
            break;
        }
    }
    free(stack);
}

/* Entity and asset fields of every component loaded so far, now that every entity exists
 * (`entities` false: the list was refused, so only assets can be judged). */
static void resolve_references(loader *ld, bool entities)
{
    for (size_t i = 0; i < ld->refs_n; i++) {
        check_references(ld, ld->refs[i].c, ld->refs[i].field_at, ld->refs[i].bpath, entities);
        free(ld->refs[i].bpath);
        free(ld->refs[i].field_at);
    }
    ld->refs_n = 0;
}

/* The root's components: before any entity's, wherever the file has them (their rows come
 * first, and so do their diagnostics). Remembers what they left, for drop_entities. */
static void load_root(loader *ld, const keel_node *root)
{
    ld->diags = &ld->lists[B_ROOT];
    load_components(ld, keel_world_root(ld->w), root, "root");
    ld->root_done = true;
    ld->refs_root_n = ld->refs_n;
    ld->unk_root_n = ld->unk_n;
    for (size_t i = 0; i < ld->unk_n; i++) ld->unk[i].root_count = ld->unk[i].count;
}

/* A refused `entities` list builds nothing: what its records left is forgotten. */
static void drop_entities(loader *ld)
{
    keel_diags_free(&ld->lists[B_SPAWN]);
    keel_diags_free(&ld->lists[B_COMPS]);
    for (size_t i = ld->refs_root_n; i < ld->refs_n; i++) {
        free(ld->refs[i].bpath);
        free(ld->refs[i].field_at);
    }
    ld->refs_n = ld->refs_root_n;
    for (size_t i = ld->unk_root_n; i < ld->unk_n; i++) free(ld->unk[i].key);
    ld->unk_n = ld->unk_root_n;
    for (size_t i = 0; i < ld->unk_n; i++) ld->unk[i].count = ld->unk[i].root_count;
}

/* keel__yaml_parse_stream's callbacks: the entities are built as they are read, after the root
 * when it came before them (as the writer puts it); a root after them (or none) is loaded at the
 * end (build). Reading the list whole instead would hold a tree several times the text's size. */
static bool stream_begin(void *ctx, const keel_node *list, const keel_node *pairs, size_t pair_count)
{
    (void)list;
    loader *ld = ctx;
    for (size_t i = 0; i < pair_count; i++) {
        const keel_node *k = &pairs[2 * i];
        if (k->kind == KEEL_NODE_SCALAR && k->text && strcmp(k->text, "root") == 0) {
            load_root(ld, &pairs[2 * i + 1]);
            break;
        }
    }
    ld->streamed = true;
    return true;
}

/* o->progress, when there is one and a text is read. */
static void progress(loader *ld, bool done)
{
    if (!ld->o->progress || !ld->total) return;
    keel_load_progress p = { ld->file, ld->bytes, ld->total, ld->recs_n, done };
    ld->o->progress(ld->o->progress_ctx, &p);
}

static void stream_progress(void *ctx, size_t bytes)
{
    loader *ld = ctx;
    ld->bytes = bytes;
    progress(ld, false);
}

static void stream_item(void *ctx, const keel_node *item, size_t index)
{
    loader *ld = ctx;
    if (index < ld->o->limits.entities) load_entity(ld, item, index); /* past it: refused at the end */
}

/* A merge's leftovers (keel merge, files/conflicts.c): each entry of a `conflicts:` list is an
 * error until `keel merge --take` resolves it, so a half-merged scene never loads as a whole
 * one. Only the entries' paths are read here. */
static void check_conflicts(loader *ld, const keel_node *list)
{
    if (!list || is_null(list)) return;
    if (list->kind != KEEL_NODE_SEQ) {
        keel_diag_add(ld->diags, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "conflicts", ld->file, list->line, list->col,
                      "conflicts must be a list");
        return;
    }
    for (size_t i = 0; i < list->count; i++) {
        const keel_node *e = &list->items[i];
        const keel_node *pn = keel_node_get(e, "path");
        const char *p = pn && pn->kind == KEEL_NODE_SCALAR ? pn->text : NULL;
        char at[48];
        snprintf(at, sizeof at, "conflicts[%zu]", i);
        if (!p) {
            keel_diag_add(ld->diags, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, at, ld->file, e->line, e->col,
                          "a conflicts entry must be a map with a path");
            continue;
        }
        keel_diag_add(ld->diags, KEEL_SEV_ERROR, KEEL_CONFLICT, at, ld->file, e->line, e->col,
                      "unresolved merge conflict at %s (keel merge --take ours|theirs FILE %s)", p, p);
    }
}

static void build(loader *ld, const keel_node *doc)
{
    static const char *const top[] = { "keel", "scene", "features", "settings", "root", "entities", "conflicts", NULL };
    ld->diags = &ld->lists[B_TOP];
    if (doc->kind != KEEL_NODE_MAP) {
        error(ld, KEEL_PARSE_ERROR, "", doc, "a scene document must be a map (keel, scene, settings, root, entities)");
        return;
    }
    want_map(ld, doc, "", "the scene document", top);
    check_conflicts(ld, keel_node_get(doc, "conflicts"));
    const keel_node *v = keel_node_get(doc, "keel");
    int64_t version;
    if (!v) {
        error(ld, KEEL_PARSE_ERROR, "keel", doc, "missing key 'keel' (the document version)");
    } else if (v->kind != KEEL_NODE_SCALAR || !keel_node_as_int(v, &version) || version != KEEL_DOCUMENT_VERSION) {
        error(ld, KEEL_PARSE_ERROR, "keel", v, "unsupported document version '%.32s'", show(v));
    }
    const keel_node *feats = keel_node_get(doc, "features");
    if (feats && !is_null(feats) && feats->kind != KEEL_NODE_SEQ) {
        error(ld, KEEL_PARSE_ERROR, "features", feats, "features must be a list of names");
    } else if (feats && feats->kind == KEEL_NODE_SEQ) {
        for (size_t i = 0; i < feats->count; i++) {
            const keel_node *f = &feats->items[i];
            char *p = pathf("features[%zu]", i);
            uint32_t bit = f->kind == KEEL_NODE_SCALAR && !keel__node_has_nul(f) ? keel__feature_bit(f->text) : 0;
            if (f->kind != KEEL_NODE_SCALAR) error(ld, KEEL_PARSE_ERROR, p, f, "a feature must be a name");
            else if (!bit) /* a newer keel's file: refused whole, never half-read */
                error(ld, KEEL_UNSUPPORTED, p, f, "feature '%.64s' is not known to this keel", show(f));
            else keel__world_set_features(ld->w, keel__world_features(ld->w) | bit);
            free(p);
        }
    }
    const keel_node *scene = keel_node_get(doc, "scene");
    if (!scene) {
        error(ld, KEEL_PARSE_ERROR, "scene", doc, "missing key 'scene'");
    } else {
        static const char *const keys[] = { "uuid", "name", NULL };
        if (want_map(ld, scene, "scene", "scene", keys) || scene->kind == KEEL_NODE_MAP) {
            const keel_node *un = keel_node_get(scene, "uuid"), *nn = keel_node_get(scene, "name");
            keel_uuid u;
            if (!un) error(ld, KEEL_PARSE_ERROR, "scene.uuid", scene, "missing key 'uuid'");
            else if (want_uuid(ld, un, "scene.uuid", &u)) keel_world_set_uuid(ld->w, u, NULL); /* not nil */
            if (nn) {
                const char *name = want_string(ld, nn, "scene.name");
                if (name) {
                    keel_diags tmp;
                    keel_diags_init(&tmp);
                    keel_world_set_name(ld->w, name, &tmp);
                    forward(ld, &tmp, "scene.name", nn);
                }
            }
        }
    }
    const keel_node *settings = keel_node_get(doc, "settings");
    if (settings && !is_null(settings)) {
        static const char *const keys[] = { "grid", "random", NULL };
        if (want_map(ld, settings, "settings", "settings", keys) || settings->kind == KEEL_NODE_MAP) {
            const keel_node *g = keel_node_get(settings, "grid");
            if (g && !is_null(g)) load_grid(ld, g);
            const keel_node *r = keel_node_get(settings, "random");
            if (r && !is_null(r)) load_random(ld, r);
        }
    }
    const keel_node *list = keel_node_get(doc, "entities");
    bool refused = !list || is_null(list) || list->kind != KEEL_NODE_SEQ || list->count > ld->o->limits.entities;
    if (!ld->root_done) {
        /* the entities were streamed before the root: a refused list's leftovers go first, so
         * that what the root leaves is all drop_entities keeps below */
        if (ld->streamed && refused) drop_entities(ld);
        load_root(ld, keel_node_get(doc, "root"));
    }

    ld->diags = &ld->lists[B_LIST];
    if (refused) {
        if (list && !is_null(list) && list->kind != KEEL_NODE_SEQ)
            error(ld, KEEL_PARSE_ERROR, "entities", list, "entities must be a list");
        else if (list && !is_null(list))
            error(ld, KEEL_LIMIT_EXCEEDED, "entities", list, "more entities than the limit (%zu)",
                  ld->o->limits.entities);
        drop_entities(ld);
        resolve_references(ld, !list || is_null(list)); /* the root's; a refused list built no entities to name */
        return;
    }
    /* In DESIGN.md's order: validate and build (bodies decoded), resolve parents and
     * references, then the hierarchy (cycles, depth) and the kind rules. */
    if (!ld->streamed)
        for (size_t i = 0; i < list->count; i++) {
            load_entity(ld, &list->items[i], i);
            if (i % 4096 == 4095) progress(ld, false);
        }
    ld->diags = &ld->lists[B_TAIL];
    size_t count = ld->recs_n;
    ent_rec *recs = ld->recs;
    resolve_parents(ld, count, recs);
    resolve_references(ld, true);
    if (!link_parents(ld, count, recs)) check_depth(ld); /* one depth problem, one diagnostic */
    /* Kind rules once every stack is whole (an entity with a refused
     * component would only report follow-on noise). */
    for (size_t i = 0; i < count; i++) {
        if (!recs[i].e || !recs[i].comps_ok) continue;
        char path[PATH_CAP];
        path_index(path, "entities", i, "");
        keel_diags tmp;
        keel_diags_init(&tmp);
        keel_check_rules(ld->w, recs[i].e, path, &tmp);
        locate_components(&tmp, path, recs[i].comps_seq && recs[i].comp_n ? ld->comp_pos + recs[i].comp_first : NULL,
                          recs[i].comp_n);
        keel_node at = at_pos(recs[i].has_comps ? recs[i].comps_at : recs[i].at);
        forward(ld, &tmp, path, &at);
    }
}

/* Errors before warnings, each in the order of DESIGN.md's stages and in document order within
 * a stage, so that the first diagnostic (an error object's code) is the earliest stage's error:
 * the document and its limits, values, references by UUID, then the hierarchy and kind rules.
 * Passes interleave them (a root body is decoded before the entities' UUIDs are read). */
static int stage(keel_status code)
{
    switch (code) {
    case KEEL_PARSE_ERROR: case KEEL_LIMIT_EXCEEDED: return 0;
    case KEEL_INVALID_ARGUMENT: return 1;
    case KEEL_NOT_FOUND: return 2;
    default: return 3;
    }
}

static void by_stage(keel_diags *d)
{
    if (d->count < 2) return;
    keel_diag *sorted = keel__xrealloc(NULL, d->count * sizeof *sorted);
    size_t n = 0;
    for (int sev = KEEL_SEV_ERROR; sev <= KEEL_SEV_WARNING; sev++)
        for (int s = 0; s <= 3; s++)
            for (size_t i = 0; i < d->count; i++)
                if ((int)d->items[i].severity == sev && stage(d->items[i].code) == s) sorted[n++] = d->items[i];
    memcpy(d->items, sorted, d->count * sizeof *sorted);
    free(sorted);
}

static size_t errors_so_far(const loader *ld)
{
    size_t n = 0;
    for (int b = 0; b < B_COUNT; b++) n += ld->lists[b].errors;
    return n;
}

/* Where the root's rule diagnostics point: its components' entries. */
static void locate_root(keel_diags *tmp, const keel_node *root)
{
    if (root && root->kind == KEEL_NODE_SEQ) {
        pos *at = keel__xcalloc(root->count ? root->count : 1, sizeof *at);
        for (size_t j = 0; j < root->count; j++) at[j] = pos_of(&root->items[j]);
        locate_components(tmp, "root", at, root->count);
        free(at);
    }
}

/* The load proper: `text` read by the streaming reader, or (text NULL) `given`, a tree already read. */
static keel_status scene_load(const char *text, size_t len, const keel_node *given, const keel_load_opts *o,
                              keel_world **out, bool fragment, keel_diags *d)
{
    keel_load_opts defaults = keel_load_opts_default();
    if (!o) o = &defaults;
    loader ld;
    memset(&ld, 0, sizeof ld);
    ld.fragment = fragment;
    ld.o = o;
    ld.file = o->file;
    keel_diags yaml; /* the reader's own refusals: when there are any, nothing else counts */
    keel_diags_init(&yaml);
    ld.w = keel_world_new("");
    if (!ld.w) abort();
    keel_node *doc = NULL;
    keel__arena *arena = keel__arena_new();
    keel__yaml_stream stream = { stream_begin, stream_item, o->progress ? stream_progress : NULL, &ld };
    bool parsed = true;
    if (text) {
        ld.total = len;
        progress(&ld, false);
        parsed = keel__yaml_parse_stream(text, len, &o->limits, o->file, arena, &stream, &doc, &yaml) == KEEL_OK;
        if (parsed) ld.bytes = len;
    } else {
        doc = (keel_node *)given; /* only read */
    }
    if (parsed) {
        build(&ld, doc);
        ld.diags = &ld.lists[B_TAIL];
        keel_diags tmp;
        keel_diags_init(&tmp);
        const keel_node *root = keel_node_get(doc, "root");
        if (errors_so_far(&ld) == 0) {
            keel_check_rules(ld.w, keel_world_root(ld.w), "root", &tmp);
            locate_root(&tmp, root);
            forward(&ld, &tmp, "root", root);
        }
        for (size_t i = 0; i < ld.unk_n; i++) {
            const unknown_count *u = &ld.unk[i];
            if (u->newer)
                warning(&ld, KEEL_UNSUPPORTED, "", NULL,
                        "%s is written in a version newer than the declared %d: %zu component%s kept", u->key,
                        u->newer, u->count, u->count == 1 ? "" : "s");
            else
                warning(&ld, KEEL_NOT_FOUND, "", NULL, "%s is not declared: %zu component%s kept", u->key, u->count,
                        u->count == 1 ? "" : "s");
        }
        progress(&ld, true);
        ld.w->dormant = o->no_awake;
        if (errors_so_far(&ld) == 0 && !o->no_awake) {
            keel_awake_all(ld.w, &tmp);
            forward(&ld, &tmp, "", NULL);
        }
    } else {
        progress(&ld, true);
    }
    keel__arena_free(arena);
    for (size_t i = 0; i < ld.unk_n; i++) free(ld.unk[i].key);
    free(ld.unk);
    for (size_t i = 0; i < ld.refs_n; i++) { /* left by an early return */
        free(ld.refs[i].bpath);
        free(ld.refs[i].field_at);
    }
    free(ld.refs);
    free(ld.recs);
    free(ld.comp_pos);
    free(ld.texts);
    keel_diags all;
    keel_diags_init(&all);
    if (parsed)
        for (int b = 0; b < B_COUNT; b++) keel_diags_append(&all, &ld.lists[b], "");
    else
        keel_diags_append(&all, &yaml, "");
    for (int b = 0; b < B_COUNT; b++) keel_diags_free(&ld.lists[b]);
    keel_diags_free(&yaml);
    by_stage(&all);
    keel__diags_collapse_skipped(&all);
    keel_status st = keel_diags_status(&all);
    if (st != KEEL_OK) {
        keel_world_free(ld.w);
    } else {
        *out = ld.w;
    }
    keel_diags_append(d, &all, "");
    keel_diags_free(&all);
    return st;
}

keel_status keel_scene_parse(const char *text, size_t len, const keel_load_opts *o, keel_world **out, keel_diags *d)
{
    if (!text) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no scene text");
    return scene_load(text, len, NULL, o, out, false, d);
}

keel_status keel__scene_parse_fragment(const char *text, size_t len, const keel_load_opts *o, keel_world **out,
                                       keel_diags *d)
{
    if (!text) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no fragment text");
    return scene_load(text, len, NULL, o, out, true, d);
}

keel_status keel__scene_build(const keel_node *doc, const keel_load_opts *o, keel_world **out, keel_diags *d)
{
    if (!doc) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no scene document");
    return scene_load(NULL, 0, doc, o, out, false, d);
}

keel_status keel_scene_load(const char *path, const keel_load_opts *o, keel_world **out, keel_diags *d)
{
    if (!path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no path");
    keel_load_opts opts = o ? *o : keel_load_opts_default();
    opts.file = path;
    char *data = NULL;
    size_t len = 0;
    keel_status st = keel_read_file(path, opts.limits.document_size, &data, &len, d);
    if (st) return st;
    if (len >= 8 && memcmp(data, "KEELCOOK", 8) == 0) {
        keel_load_progress p = { path, 0, len, 0, false };
        if (opts.progress) opts.progress(opts.progress_ctx, &p);
        st = keel_cook_read(data, len, &opts, out, d);
        if (st == KEEL_OK) (*out)->dormant = opts.no_awake; /* the cooked reader knows no world struct */
        p = (keel_load_progress){ path, len, len, st == KEEL_OK ? keel_world_entity_count(*out) : 0, true };
        if (opts.progress) opts.progress(opts.progress_ctx, &p); /* after awake: the reader runs it */
    } else {
        st = keel_scene_parse(data, len, &opts, out, d);
    }
    free(data);
    return st;
}
