/* value.c — the one per-type table of field values: check and convert, store into and load
 * from record bytes, compare, and turn into a body node. Adding a field type starts here. */
#include "base/util.h"
#include "model/value.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRING_LIMIT (64u * 1024u)

static bool is_vector(keel_type t) { return t >= KEEL_T_VEC2 && t <= KEEL_T_COLOR; }

/* ---- check and convert ---- */

static void fmt_num(double v, char *buf, size_t cap)
{
    keel_format_double(v, buf, cap);
}

static int choice_index(const keel_field_desc *f, const char *name)
{
    for (size_t i = 0; name && i < f->choice_count; i++)
        if (!strcmp(f->choices[i], name))
            return (int)i;
    return -1;
}

static keel_status check_bounds(const keel_field_desc *f, double x, keel_diags *d)
{
    char a[40], b[40];
    if (f->has_min && (f->min_exclusive ? !(x > f->min) : !(x >= f->min))) {
        fmt_num(x, a, sizeof a);
        fmt_num(f->min, b, sizeof b);
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: %s is below the minimum (%s %s)",
                          f->key, a, f->min_exclusive ? ">" : ">=", b);
    }
    if (f->has_max && (f->max_exclusive ? !(x < f->max) : !(x <= f->max))) {
        fmt_num(x, a, sizeof a);
        fmt_num(f->max, b, sizeof b);
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: %s is above the maximum (%s %s)",
                          f->key, a, f->max_exclusive ? "<" : "<=", b);
    }
    return KEEL_OK;
}

static keel_status check_finite(const keel_field_desc *f, double x, keel_diags *d)
{
    if (isfinite(x))
        return KEEL_OK;
    char a[40];
    fmt_num(x, a, sizeof a);
    return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: %s is not a finite number", f->key, a);
}

static keel_status wrong_type(const keel_field_desc *f, const keel_value *v, keel_diags *d)
{
    return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: expected %s, got %s", f->key,
                      keel_type_name(f->type), keel_type_name(v->type));
}

static keel_status check_bool(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    if (v->type != KEEL_T_BOOL)
        return wrong_type(f, v, d);
    return KEEL_OK;
}

static keel_status check_int(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    keel_status st;
    if (v->type == KEEL_T_FLOAT) {
        double x = v->as.f;
        if ((st = check_finite(f, x, d)))
            return st;
        if (x != floor(x) || x < -9223372036854775808.0 || x >= 9223372036854775808.0) {
            char a[40];
            fmt_num(x, a, sizeof a);
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: expected int, got %s",
                              f->key, a);
        }
        v->type = KEEL_T_INT;
        v->as.i = (int64_t)x;
    } else if (v->type != KEEL_T_INT) {
        return wrong_type(f, v, d);
    }
    if (f->has_min || f->has_max) {
        /* Compare exactly where doubles would round: bounds are doubles anyway. */
        return check_bounds(f, (double)v->as.i, d);
    }
    return KEEL_OK;
}

static keel_status check_float(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    keel_status st;
    if (v->type == KEEL_T_INT) {
        double x = (double)v->as.i;
        v->type = KEEL_T_FLOAT;
        v->as.f = x;
    } else if (v->type != KEEL_T_FLOAT) {
        return wrong_type(f, v, d);
    }
    if ((st = check_finite(f, v->as.f, d)))
        return st;
    return check_bounds(f, v->as.f, d);
}

static keel_status check_vector(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    keel_status st;
    int n = keel_type_width(f->type);
    if (!is_vector(v->type) || keel_type_width(v->type) != n)
        return wrong_type(f, v, d);
    v->type = f->type;
    for (int i = 0; i < n; i++) {
        if ((st = check_finite(f, v->as.v[i], d)))
            return st;
        if ((st = check_bounds(f, v->as.v[i], d)))
            return st;
    }
    if (f->type == KEEL_T_QUAT) {
        double len = sqrt(v->as.v[0] * v->as.v[0] + v->as.v[1] * v->as.v[1] +
                          v->as.v[2] * v->as.v[2] + v->as.v[3] * v->as.v[3]);
        if (!(len > 0) || !isfinite(len)) { /* squares of 1e300 or 1e-300 leave the doubles: scale first */
            double big = 0, sum = 0;
            for (int i = 0; i < 4; i++)
                big = fmax(big, fabs(v->as.v[i]));
            for (int i = 0; big > 0 && i < 4; i++)
                sum += (v->as.v[i] / big) * (v->as.v[i] / big);
            len = big * sqrt(sum);
        }
        if (!(len > 0) || !isfinite(len))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key,
                              "%s: a zero quaternion cannot be normalized", f->key);
        /* Near-unit quaternions are left alone: dividing by a length one ulp
         * off 1 moves the last digit back and forth, and a saved scene
         * would never reach a fixed point. */
        if (fabs(len - 1.0) > 4 * DBL_EPSILON)
            for (int i = 0; i < 4; i++)
                v->as.v[i] /= len;
        /* q and -q are one rotation: w >= 0 is the one kept, so what is written is canonical */
        if (v->as.v[3] < 0 || (v->as.v[3] == 0 && signbit(v->as.v[3])))
            for (int i = 0; i < 4; i++) v->as.v[i] = v->as.v[i] == 0 ? 0.0 : -v->as.v[i];
    }
    return KEEL_OK;
}

static keel_status check_enum(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    if (v->type == KEEL_T_STRING) {
        int c = choice_index(f, v->as.s);
        if (c < 0)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: '%s' is not one of its choices",
                              f->key, v->as.s ? v->as.s : "");
        v->type = KEEL_T_ENUM;
        v->as.i = c;
        return KEEL_OK;
    }
    if (v->type != KEEL_T_ENUM && v->type != KEEL_T_INT)
        return wrong_type(f, v, d);
    if (v->as.i < 0 || (uint64_t)v->as.i >= f->choice_count)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key,
                          "%s: choice %lld is out of range (0 to %zu)", f->key,
                          (long long)v->as.i, f->choice_count ? f->choice_count - 1 : 0);
    v->type = KEEL_T_ENUM;
    return KEEL_OK;
}

static keel_status check_string(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    if (v->type != KEEL_T_STRING)
        return wrong_type(f, v, d);
    if (v->as.s && strlen(v->as.s) > STRING_LIMIT)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, f->key,
                          "%s: string of %zu bytes exceeds the limit of %u", f->key,
                          strlen(v->as.s), STRING_LIMIT);
    if (v->as.s && !keel__utf8_valid(v->as.s)) /* a scene file could not hold it */
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: a string must be valid UTF-8", f->key);
    return KEEL_OK;
}

static keel_status check_ref(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    if (v->type == KEEL_T_STRING) {
        keel_uuid u;
        if (!v->as.s || !*v->as.s) {
            memset(&u, 0, sizeof u);
        } else if (!keel_uuid_parse(v->as.s, &u)) {
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: '%s' is not a UUID", f->key,
                              v->as.s);
        }
        v->type = f->type;
        v->as.u = u;
        v->nil = keel_uuid_is_nil(u);
        return KEEL_OK;
    }
    if (v->type != KEEL_T_ASSET && v->type != KEEL_T_ENTITY)
        return wrong_type(f, v, d);
    v->type = f->type;
    if (v->nil)
        memset(&v->as.u, 0, sizeof v->as.u);
    v->nil = keel_uuid_is_nil(v->as.u);
    return KEEL_OK;
}

/* The per-type check behind keel_field_check, usable on a field desc before the kind exists. */
keel_status keel__value_check(const keel_field_desc *f, keel_value *v, keel_diags *d)
{
    switch (f->type) {
    case KEEL_T_BOOL: return check_bool(f, v, d);
    case KEEL_T_INT: return check_int(f, v, d);
    case KEEL_T_FLOAT: return check_float(f, v, d);
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: return check_vector(f, v, d);
    case KEEL_T_ENUM: return check_enum(f, v, d);
    case KEEL_T_STRING: return check_string(f, v, d);
    case KEEL_T_ASSET: case KEEL_T_ENTITY: return check_ref(f, v, d);
    default:
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, f->key, "%s: bad field type %d", f->key, (int)f->type);
    }
}

/* ---- from a body node ---- */

static keel_status problem(keel__value_problem *pb, keel_severity sev, keel_status code, const keel_node *at,
                           const char *fmt, const char *a, const char *b)
{
    pb->set = true;
    pb->sev = sev;
    pb->code = code;
    pb->at = at;
    pb->fmt = fmt;
    snprintf(pb->a, sizeof pb->a, "%s", a ? a : "");
    snprintf(pb->b, sizeof pb->b, "%s", b ? b : "");
    return code;
}

static const char *show(const keel_node *n)
{
    if (n->kind == KEEL_NODE_SEQ)
        return "a sequence";
    if (n->kind == KEEL_NODE_MAP)
        return "a map";
    return NULL;
}

static const char *quote(const keel_node *n, char *buf)
{
    snprintf(buf, 96, "'%.80s%s'", n->text ? n->text : "", n->len > 80 ? "..." : "");
    return buf;
}

keel_status keel__value_from_node(const keel_field_desc *f, const keel_node *n, bool strict, keel_value *v,
                                  bool *keep_default, keel__value_problem *pb)
{
    memset(v, 0, sizeof *v);
    pb->set = false;
    v->type = f->type;
    *keep_default = false;
    char quoted[96]; /* the texts of a problem, made only when there is one */
#define QUOTED quote(n, quoted)
#define GOT (show(n) ? show(n) : QUOTED)
    /* libyaml decodes "\0": a keel string is a C string, so a NUL would cut it (or a choice
     * name, a UUID, a number) short. Refused, whatever the field's type. */
    if (keel__node_has_nul(n))
        return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "%s field holds a NUL byte%s",
                    keel_type_name(f->type), NULL);
    switch (f->type) {
    case KEEL_T_BOOL:
        if (!keel_node_as_bool(n, &v->as.b))
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected bool, got %s%s", GOT, NULL);
        return KEEL_OK;
    case KEEL_T_INT: {
        double x;
        if (keel_node_as_int(n, &v->as.i))
            return KEEL_OK;
        if (keel_node_as_float(n, &x)) {
            v->type = KEEL_T_FLOAT; /* integral floats are converted by the field check */
            v->as.f = x;
            return KEEL_OK;
        }
        return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected int, got %s%s", GOT, NULL);
    }
    case KEEL_T_FLOAT:
        if (!keel_node_as_float(n, &v->as.f))
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected float, got %s%s", GOT, NULL);
        return KEEL_OK;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: {
        int w = keel_type_width(f->type);
        char want[48];
#define WANT (snprintf(want, sizeof want, "%s (a sequence of %d numbers)", keel_type_name(f->type), w), want)
        if (n->kind != KEEL_NODE_SEQ || n->count != (size_t)w)
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected %s, got %s", WANT,
                        n->kind == KEEL_NODE_SEQ ? "a sequence of another length" : GOT);
        for (int i = 0; i < w; i++)
            if (!keel_node_as_float(&n->items[i], &v->as.v[i]))
                return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, &n->items[i],
                            "expected %s, got a non-number in it", WANT, NULL);
        return KEEL_OK;
    }
    case KEEL_T_ENUM:
        if (n->kind != KEEL_NODE_SCALAR)
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected a choice name, got %s%s",
                        GOT, NULL);
        for (size_t i = 0; i < f->choice_count; i++)
            if (!strcmp(f->choices[i], n->text)) {
                v->as.i = (int64_t)i;
                return KEEL_OK;
            }
        if (strict)
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "%s is not one of its choices%s",
                        QUOTED, NULL);
        *keep_default = true;
        problem(pb, KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, n,
             "%s is not one of its choices; kept the default", QUOTED, NULL);
        return KEEL_OK;
    case KEEL_T_STRING:
        if (n->kind != KEEL_NODE_SCALAR)
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected string, got %s%s", GOT, NULL);
        v->as.s = n->text ? n->text : "";
        return KEEL_OK;
    case KEEL_T_ASSET: case KEEL_T_ENTITY:
        if (n->kind != KEEL_NODE_SCALAR)
            return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "expected a UUID or null, got %s%s",
                        GOT, NULL);
        if (keel_node_is_null(n)) {
            v->nil = true;
            return KEEL_OK;
        }
        if (!keel_uuid_parse(n->text, &v->as.u))
            return problem(pb, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, n, "%s is not a canonical UUID%s", QUOTED,
                        NULL);
        v->nil = keel_uuid_is_nil(v->as.u);
        return KEEL_OK;
    default:
        return problem(pb, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, n, "bad field type%s%s", NULL, NULL);
    }
}
#undef WANT
#undef GOT
#undef QUOTED

/* ---- record bytes ---- */

void keel__value_store(const keel_field_desc *f, unsigned char *p, const keel_value *v)
{
    switch (f->type) {
    case KEEL_T_BOOL: { bool b = v->as.b; memcpy(p, &b, sizeof b); break; }
    case KEEL_T_INT: case KEEL_T_ENUM: memcpy(p, &v->as.i, sizeof v->as.i); break;
    case KEEL_T_FLOAT: memcpy(p, &v->as.f, sizeof v->as.f); break;
    case KEEL_T_STRING: {
        char *old;
        memcpy(&old, p, sizeof old);
        char *s = keel__strdup(v->as.s ? v->as.s : "");
        free(old);
        memcpy(p, &s, sizeof s);
        break;
    }
    case KEEL_T_ASSET: case KEEL_T_ENTITY: {
        keel_uuid u = v->as.u;
        if (v->nil)
            memset(&u, 0, sizeof u);
        memcpy(p, &u, sizeof u);
        break;
    }
    default: /* vectors */
        memcpy(p, v->as.v, 8u * (size_t)keel_type_width(f->type));
        break;
    }
}

void keel__value_load(const keel_field_desc *f, const unsigned char *p, keel_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = f->type;
    switch (f->type) {
    case KEEL_T_BOOL: memcpy(&out->as.b, p, sizeof out->as.b); break;
    case KEEL_T_INT: case KEEL_T_ENUM: memcpy(&out->as.i, p, sizeof out->as.i); break;
    case KEEL_T_FLOAT: memcpy(&out->as.f, p, sizeof out->as.f); break;
    case KEEL_T_STRING: {
        const char *s;
        memcpy(&s, p, sizeof s);
        out->as.s = s ? s : "";
        break;
    }
    case KEEL_T_ASSET: case KEEL_T_ENTITY:
        memcpy(&out->as.u, p, sizeof out->as.u);
        out->nil = keel_uuid_is_nil(out->as.u);
        break;
    default:
        memcpy(out->as.v, p, 8u * (size_t)keel_type_width(f->type));
        break;
    }
}

/* ---- comparing ---- */

bool keel__value_equal(const keel_value *a, const keel_value *b)
{
    if (a->type != b->type || a->nil != b->nil) return false;
    switch (a->type) {
    case KEEL_T_BOOL: return a->as.b == b->as.b;
    case KEEL_T_INT: case KEEL_T_ENUM: return a->as.i == b->as.i;
    case KEEL_T_FLOAT: return memcmp(&a->as.f, &b->as.f, sizeof a->as.f) == 0;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
        return memcmp(a->as.v, b->as.v, sizeof(double) * (size_t)keel_type_width(a->type)) == 0;
    case KEEL_T_STRING: return strcmp(a->as.s ? a->as.s : "", b->as.s ? b->as.s : "") == 0;
    case KEEL_T_ASSET: case KEEL_T_ENTITY: return a->nil || keel_uuid_equal(a->as.u, b->as.u);
    default: return false;
    }
}

/* ---- emitting: one switch, the sink decides the form (a node, or the scene writer's events) ---- */

void keel__value_emit(keel_type t, const keel_value *v, const char *choice, const keel__value_sink *s, void *ctx)
{
    char buf[40];
    switch (t) {
    case KEEL_T_BOOL: s->plain(ctx, v->as.b ? "true" : "false"); return;
    case KEEL_T_INT:
        snprintf(buf, sizeof buf, "%" PRId64, v->as.i);
        s->plain(ctx, buf);
        return;
    case KEEL_T_FLOAT: s->number(ctx, v->as.f); return;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
        s->seq_start(ctx);
        for (int i = 0; i < keel_type_width(t); i++) s->number(ctx, v->as.v[i]);
        s->seq_end(ctx);
        return;
    case KEEL_T_ENUM: s->text(ctx, choice ? choice : "", KEEL__TEXT_CHOICE); return;
    case KEEL_T_STRING: s->text(ctx, v->as.s ? v->as.s : "", KEEL__TEXT_STRING); return;
    case KEEL_T_ASSET: case KEEL_T_ENTITY:
        if (v->nil) {
            s->plain(ctx, "null");
            return;
        }
        keel_uuid_format(v->as.u, buf);
        s->text(ctx, buf, KEEL__TEXT_UUID);
        return;
    default: s->plain(ctx, "null"); return;
    }
}

/* The node sink: a scalar, or a flow sequence of numbers. */
typedef struct node_sink {
    keel_node *out, *seq;
    bool quote_text;
} node_sink;

static void node_add(node_sink *n, keel_node *x)
{
    if (n->seq) keel_node_push(n->seq, x);
    else n->out = x;
}

static void node_plain(void *ctx, const char *text) { node_add(ctx, keel_node_new_scalar(text, KEEL_STYLE_PLAIN)); }

static void node_number(void *ctx, double x)
{
    char buf[40];
    keel_format_double(x, buf, sizeof buf);
    node_add(ctx, keel_node_new_scalar(buf, KEEL_STYLE_PLAIN));
}

static void node_text(void *ctx, const char *s, keel__text_kind kind)
{
    node_sink *n = ctx;
    keel_node_style st = KEEL_STYLE_PLAIN; /* a UUID */
    if (kind == KEEL__TEXT_STRING) st = n->quote_text ? KEEL_STYLE_DOUBLE : KEEL_STYLE_ANY;
    else if (kind == KEEL__TEXT_CHOICE) st = n->quote_text ? KEEL_STYLE_PLAIN : KEEL_STYLE_ANY;
    node_add(n, keel_node_new_scalar(s, st));
}

static void node_seq_start(void *ctx)
{
    node_sink *n = ctx;
    n->seq = keel_node_new_seq();
    n->seq->style = KEEL_STYLE_FLOW;
}

static void node_seq_end(void *ctx)
{
    node_sink *n = ctx;
    n->out = n->seq;
    n->seq = NULL;
}

static const keel__value_sink node_sink_ops = { node_plain, node_number, node_text, node_seq_start, node_seq_end };

keel_node *keel__value_node(keel_type t, const keel_value *v, const char *choice, bool quote_text)
{
    node_sink n = { NULL, NULL, quote_text };
    keel__value_emit(t, v, choice, &node_sink_ops, &n);
    return n.out;
}

const char *keel__value_choice(const keel_field_desc *f, int64_t i)
{
    return i >= 0 && (size_t)i < f->choice_count ? f->choices[i] : f->choice_count ? f->choices[0] : "";
}
