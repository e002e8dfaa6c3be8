/* scene_write.c — a world to its canonical YAML text (libyaml's emitter): same world, same bytes. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/util.h"
#include "base/vec.h"
#include "model/record.h"
#include "bind.h" /* keel__scene_dump_subtree */
#include "files/scene_write.h"
#include "files/features.h"
#include "files/save_async.h"
#include "model/value.h"

typedef keel__yaml_out writer;

int keel__yaml_out_handler(void *data, unsigned char *bytes, size_t size)
{
    writer *wr = data;
    KEEL__VEC_RESERVE(wr->buf, wr->len, wr->cap, size + 1, 65536);
    memcpy(wr->buf + wr->len, bytes, size);
    wr->len += size;
    return 1;
}

void keel__yaml_out_open(writer *wr)
{
    memset(wr, 0, sizeof *wr);
    if (!yaml_emitter_initialize(&wr->em)) abort();
    yaml_emitter_set_output(&wr->em, keel__yaml_out_handler, wr);
    yaml_emitter_set_unicode(&wr->em, 1);
    yaml_emitter_set_width(&wr->em, -1);
    yaml_emitter_set_indent(&wr->em, 2);
    yaml_emitter_set_break(&wr->em, YAML_LN_BREAK);
    yaml_event_t e;
    yaml_stream_start_event_initialize(&e, YAML_UTF8_ENCODING);
    keel__yaml_out_emit(wr, &e);
    yaml_document_start_event_initialize(&e, NULL, NULL, NULL, 1);
    keel__yaml_out_emit(wr, &e);
}

char *keel__yaml_out_close(writer *wr, const char *what, size_t *len, keel_diags *d)
{
    yaml_event_t e;
    yaml_document_end_event_initialize(&e, 1);
    keel__yaml_out_emit(wr, &e);
    yaml_stream_end_event_initialize(&e);
    keel__yaml_out_emit(wr, &e);
    if (!wr->failed && !yaml_emitter_flush(&wr->em)) wr->failed = true;
    char *out = NULL;
    if (wr->failed) {
        keel_diag_add(d, KEEL_SEV_ERROR, KEEL_INVALID_ARGUMENT, "", NULL, 0, 0, "cannot write %s: %s", what,
                      wr->em.problem ? wr->em.problem : "emitter error");
        free(wr->buf);
    } else {
        if (!wr->buf) wr->buf = keel__xrealloc(NULL, 1);
        wr->buf[wr->len] = '\0';
        out = wr->buf;
        if (len) *len = wr->len;
    }
    yaml_emitter_delete(&wr->em);
    return out;
}

static void plain(writer *wr, const char *text)
{
    keel__yaml_out_scalar(wr, text, strlen(text), YAML_PLAIN_SCALAR_STYLE);
}

static void map_start(writer *wr, bool flow)
{
    yaml_event_t e;
    yaml_mapping_start_event_initialize(&e, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    keel__yaml_out_emit(wr, &e);
}

static void map_end(writer *wr)
{
    yaml_event_t e;
    yaml_mapping_end_event_initialize(&e);
    keel__yaml_out_emit(wr, &e);
}

static void seq_start(writer *wr, bool flow)
{
    yaml_event_t e;
    yaml_sequence_start_event_initialize(&e, NULL, NULL, 1,
                                         flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    keel__yaml_out_emit(wr, &e);
}

static void seq_end(writer *wr)
{
    yaml_event_t e;
    yaml_sequence_end_event_initialize(&e);
    keel__yaml_out_emit(wr, &e);
}

/* ---- strings: plain only when a core-schema (and a YAML 1.1) reader gets the same string ---- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Numbers as a YAML 1.1 reader sees them too: 1_000, 1:30, 0b101, 2001-12-14. */
static bool number_like(const char *s)
{
    if (*s == '+' || *s == '-') s++;
    if (*s == '.') return true; /* .5, .inf, .nan */
    if (!is_digit(*s)) return false;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) { /* only with its digits: 0bcf...-... is text */
        const char *digits = s[1] == 'x' ? "0123456789abcdefABCDEF_" : s[1] == 'o' ? "01234567_" : "01_";
        return s[2] && strspn(s + 2, digits) == strlen(s + 2);
    }
    if (strlen(s) >= 8 && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) && s[4] == '-') return true;
    bool exp = false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (is_digit(c) || c == '_' || c == '.' || c == ':') continue;
        if ((c == 'e' || c == 'E') && !exp) {
            exp = true;
            if (p[1] == '+' || p[1] == '-') p++;
            continue;
        }
        return false;
    }
    return true;
}

/* The words a YAML 1.1 or core-schema reader takes for null, a boolean or a merge key. */
static bool yaml_word(const char *s, size_t len)
{
    static const char *const words[6] = {
        NULL,
        "~yYnN=",
        "noNoNOonOnON<<",
        "yesYesYESoffOffOFF",
        "nullNullNULLtrueTrueTRUE",
        "falseFalseFALSE",
    };
    if (len > 5) return false;
    for (const char *w = words[len]; *w; w += len)
        if (memcmp(s, w, len) == 0) return true;
    return false;
}

/* Bit sets over bytes: the first bytes a plain scalar cannot start with, and the bytes the
 * scan below must look at (controls, DEL, ':', '#', and the lead bytes of NEL, U+2028/2029
 * and the BOM). */
static const uint64_t bad_first[2] = { 0xc40034ee00000000u, 0x3800000128000001u };
static const uint64_t look_at[4] = { 0x04000008ffffffffu, 0x8000000000000000u, 0, 0x0000800400000004u };

static bool in_set(const uint64_t *set, unsigned char c) { return set[c >> 6] >> (c & 63) & 1; }

bool keel__scene_plain_safe(const char *s, size_t len)
{
    if (len == 0 || memchr(s, '\0', len)) return false;
    if (s[0] == ' ' || s[len - 1] == ' ') return false;
    if ((unsigned char)s[0] < 128 && in_set(bad_first, (unsigned char)s[0])) return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!in_set(look_at, c)) continue;
        if (c < 0x20 || c == 0x7f) return false;
        if (c == ':' && (i + 1 == len || s[i + 1] == ' ')) return false;
        if (c == '#' && s[i - 1] == ' ') return false; /* i > 0: '#' cannot come first */
        if (c == 0xe2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
            ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9))
            return false; /* U+2028/2029 line separators */
        if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] == 0x85) return false; /* NEL */
        if (c == 0xef && i + 2 < len && (unsigned char)s[i + 1] == 0xbb && (unsigned char)s[i + 2] == 0xbf)
            return false; /* BOM */
    }
    if (yaml_word(s, len)) return false;
    if (number_like(s)) return false;
    return true;
}

static void string(writer *wr, const char *s, size_t len)
{
    keel__yaml_out_scalar(
        wr, s, len, keel__scene_plain_safe(s, len) ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void str(writer *wr, const char *s) { string(wr, s, strlen(s)); }

static void key(writer *wr, const char *k) { str(wr, k); }

static void int_value(writer *wr, int64_t v)
{
    char buf[24], *o = buf + sizeof buf;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v; /* INT64_MIN too */
    do {
        *--o = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--o = '-';
    keel__yaml_out_scalar(wr, o, (size_t)(buf + sizeof buf - o), YAML_PLAIN_SCALAR_STYLE);
}

/* keel_format_double's text, found with fewer trials: if p significant digits
 * read back, so does any larger p, and the correctly rounded 15-digit form of a
 * value whose shortest form has k <= 15 digits is that form padded with zeros.
 * So %.14e (then 16, 17 digits) with trailing zeros stripped is the shortest.
 * test_scene_save checks this against keel_format_double. */
/* Writes |r| (an integer below 1e15) with a decimal point `k` digits from the right. */
static int fixed_text(double r, int k, bool neg, char *out)
{
    char digits[24];
    int nd = 0;
    unsigned long long u = (unsigned long long)fabs(r);
    do {
        digits[nd++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    char *o = out;
    if (neg) *o++ = '-';
    if (nd <= k) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < k - nd; i++) *o++ = '0';
        while (nd) *o++ = digits[--nd];
    } else {
        while (nd) {
            if (nd == k) *o++ = '.';
            *o++ = digits[--nd];
        }
    }
    *o = '\0';
    return (int)(o - out);
}

/* Most authored numbers have a few decimals: try those first. A candidate that
 * reads back is the only decimal of its length that does (at <= 15 significant
 * digits the decimal step exceeds the rounding interval), so it is also the
 * one keel_format_double finds; the layout is its positional one. */
static int format_short(double v, char *out)
{
    static const double pow10[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
    double a = fabs(v);
    if (!(a >= 1e-4 && a < 1e15)) return 0;
    for (int k = 0; k <= 6; k++) {
        double s = v * pow10[k], r = nearbyint(s);
        if (fabs(r) >= 1e15) return 0;
        if (fabs(s - r) > fabs(s) * 1e-15 + 1e-300) continue; /* not near an integer: not k decimals */
        /* Reads back iff r / 10^k, correctly rounded, is v: r and 10^k are exact doubles and
         * IEEE division rounds the exact quotient as strtod rounds the text. */
        if (r / pow10[k] == v) return fixed_text(r, k, v < 0, out);
    }
    return 0;
}

/* keel_format_double's layout for significant digits `digits` (trailing zeros dropped here)
 * whose first has decimal exponent exp10. */
static int layout(bool neg, const char *digits, int nd, int exp10, char *out)
{
    char *o = out;
    if (neg) *o++ = '-';
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -exp10 - 1; i++) *o++ = '0';
            for (int i = 0; i < nd; i++) *o++ = digits[i];
        } else {
            for (int i = 0; i <= exp10 || i < nd; i++) {
                if (i == exp10 + 1) *o++ = '.';
                *o++ = i < nd ? digits[i] : '0';
            }
        }
        *o = '\0';
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            for (int i = 1; i < nd; i++) *o++ = digits[i];
        }
        snprintf(o, 16, "e%c%d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
    return (int)strlen(out);
}

#if defined(__SIZEOF_INT128__)
/* The same digits as printf's %.{p-1}e and strtod's verdict, in exact integer arithmetic, for
 * normal |v| in [1e-4, 1e15): v = m * 2^-k with k in [3, 66], so v * 10^s for s <= 20 and the
 * comparisons below stay under 2^125. Returns the length, or 0 outside that range. */
typedef unsigned __int128 u128;

static u128 pow10_128(int s)
{
    u128 r = 1;
    while (s-- > 0) r *= 10;
    return r;
}

static int format_exact(double v, char *out)
{
    double a = fabs(v);
    if (!(a >= 1e-4 && a < 1e15)) return 0;
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int k = 1075 - (int)(bits >> 52); /* a = m * 2^-k */
    uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    if (k < 3 || k > 66) return 0;
    /* E: the decimal exponent of the first digit, 10^E <= a < 10^(E+1), decided exactly */
    int E = (int)floor(log10(a));
    for (int step = 0; step < 2; step++) {
        bool below = E >= 0 ? (u128)m < (pow10_128(E) << k) : (u128)m * pow10_128(-E) < ((u128)1 << k);
        bool above = E + 1 >= 0 ? (u128)m >= (pow10_128(E + 1) << k)
                                : (u128)m * pow10_128(-(E + 1)) >= ((u128)1 << k);
        if (below) E--;
        else if (above) E++;
        else break;
    }
    for (int p = 15; p <= 17; p++) {
        int sc = p - 1 - E; /* 0..20 */
        u128 ten = pow10_128(sc), n = (u128)m * ten;
        u128 q = n >> k, rem = n & (((u128)1 << k) - 1), half = (u128)1 << (k - 1);
        if (rem > half || (rem == half && (q & 1))) q++; /* printf rounds the exact value, ties to even */
        /* Does q * 10^-sc read back as a? Scaled by 10^sc * 2^k, a's ulp is 10^sc. */
        __int128 diff = (__int128)(q << k) - (__int128)((u128)m * ten);
        u128 mag = diff < 0 ? (u128)-diff : (u128)diff;
        bool back;
        if (diff < 0 && m == (UINT64_C(1) << 52)) /* a power of two: the gap below is half as wide */
            back = 4 * mag <= ten;
        else
            back = 2 * mag < ten || (2 * mag == ten && !(m & 1));
        if (!back && p < 17) continue;
        u128 top = pow10_128(p);
        int exp10 = E;
        if (q == top) { /* rounded up to 10^(E+1) */
            q /= 10;
            exp10++;
        }
        char digits[20];
        for (int i = p - 1; i >= 0; i--) {
            digits[i] = (char)('0' + (int)(q % 10));
            q /= 10;
        }
        return layout(v < 0, digits, p, exp10, out);
    }
    return 0;
}
#else
static int format_exact(double v, char *out)
{
    (void)v;
    (void)out;
    return 0;
}
#endif

int keel__scene_format_double(double v, char *out)
{
    /* Subnormals have fewer than 15 significant digits of precision, so the padded-15-digit
     * argument above fails for them (5e-324 would come out as 4.94065645841247e-324):
     * keel_format_double searches them from 1 digit up. */
    if (!isfinite(v) || v == 0 || fabs(v) < DBL_MIN) return keel_format_double(v, out, 64);
    int n = format_short(v, out);
    if (!n) n = format_exact(v, out);
    if (n) return n;
    char tmp[64];
    int p;
    for (p = 15; p < 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (strtod(tmp, NULL) == v) break;
    }
    if (p == 17) snprintf(tmp, sizeof tmp, "%.16e", v);
    char digits[32];
    int nd = 0;
    const char *q = tmp + (*tmp == '-');
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') digits[nd++] = *q;
    return layout(v < 0, digits, nd, atoi(q + 1), out);
}

static void float_value(writer *wr, double v)
{
    char buf[64];
    int n = keel__scene_format_double(v, buf);
    keel__yaml_out_scalar(wr, buf, (size_t)n, YAML_PLAIN_SCALAR_STYLE);
}

static void vec_value(writer *wr, const double *v, int n)
{
    seq_start(wr, true);
    for (int i = 0; i < n; i++) float_value(wr, v[i]);
    seq_end(wr);
}

/* ---- preserved trees (unknown components): each node as it was written ---- */

void keel__yaml_out_preserved(keel__yaml_out *wr, const keel_node *n)
{
    if (n->kind == KEEL_NODE_SCALAR) {
        yaml_scalar_style_t st;
        switch (n->style) {
        case KEEL_STYLE_PLAIN: st = YAML_PLAIN_SCALAR_STYLE; break;
        case KEEL_STYLE_SINGLE: st = YAML_SINGLE_QUOTED_SCALAR_STYLE; break;
        case KEEL_STYLE_DOUBLE: st = YAML_DOUBLE_QUOTED_SCALAR_STYLE; break;
        case KEEL_STYLE_LITERAL: st = YAML_LITERAL_SCALAR_STYLE; break;
        case KEEL_STYLE_FOLDED: st = YAML_FOLDED_SCALAR_STYLE; break;
        default: string(wr, n->text ? n->text : "", n->text ? n->len : 0); return;
        }
        if (st == YAML_PLAIN_SCALAR_STYLE && n->len == 0) {
            plain(wr, "null"); /* an empty plain scalar is null; say so where libyaml would quote it */
            return;
        }
        keel__yaml_out_scalar(wr, n->text ? n->text : "", n->text ? n->len : 0, st);
        return;
    }
    bool flow = n->style == KEEL_STYLE_FLOW;
    if (n->kind == KEEL_NODE_SEQ) {
        seq_start(wr, flow);
        for (size_t i = 0; i < n->count; i++) keel__yaml_out_preserved(wr, &n->items[i]);
        seq_end(wr);
    } else {
        map_start(wr, flow);
        for (size_t i = 0; i < 2 * n->count; i++) keel__yaml_out_preserved(wr, &n->items[i]);
        map_end(wr);
    }
}

/* ---- known bodies: canonical, typed by the kind's fields ---- */

static bool numeric_seq(const keel_node *n)
{
    if (n->kind != KEEL_NODE_SEQ) return false;
    for (size_t i = 0; i < n->count; i++) {
        double v;
        if (n->items[i].kind != KEEL_NODE_SCALAR || !keel_node_as_float(&n->items[i], &v)) return false;
    }
    return true;
}

static void emit_canonical(writer *wr, const keel_node *n, int type)
{
    if (n->kind == KEEL_NODE_SCALAR) {
        bool quoted = n->style == KEEL_STYLE_SINGLE || n->style == KEEL_STYLE_DOUBLE ||
                      n->style == KEEL_STYLE_LITERAL || n->style == KEEL_STYLE_FOLDED || n->style == KEEL_STYLE_ANY;
        switch (type) {
        case KEEL_T_STRING:
        case KEEL_T_ENUM:
            string(wr, n->text ? n->text : "", n->text ? n->len : 0);
            return;
        case KEEL_T_ASSET:
        case KEEL_T_ENTITY:
            if (!quoted && keel_node_is_null(n)) plain(wr, "null");
            else string(wr, n->text ? n->text : "", n->text ? n->len : 0);
            return;
        default:
            if (!quoted && n->text && n->len) plain(wr, n->text);
            else if (!quoted) plain(wr, "null");
            else string(wr, n->text ? n->text : "", n->text ? n->len : 0);
            return;
        }
    }
    if (n->kind == KEEL_NODE_SEQ) {
        seq_start(wr, numeric_seq(n));
        for (size_t i = 0; i < n->count; i++) emit_canonical(wr, &n->items[i], -1);
        seq_end(wr);
        return;
    }
    map_start(wr, false);
    for (size_t i = 0; i < n->count; i++) {
        const keel_node *k = &n->items[2 * i];
        key(wr, k->text ? k->text : "");
        emit_canonical(wr, &n->items[2 * i + 1], -1);
    }
    map_end(wr);
}

static void emit_body(writer *wr, keel_kind_id k, const keel_node *body)
{
    if (!body || body->kind != KEEL_NODE_MAP) {
        map_start(wr, true);
        map_end(wr);
        return;
    }
    const keel_kind_desc *kd = keel_kind_describe(k);
    map_start(wr, false);
    size_t next = 0; /* bodies come in declared order: walk the fields alongside */
    for (size_t i = 0; i < body->count; i++) {
        const keel_node *kn = &body->items[2 * i];
        int f = -1;
        for (size_t j = next; kd && kn->text && j < kd->field_count; j++)
            if (strcmp(kd->fields[j].key, kn->text) == 0) {
                f = (int)j;
                next = j + 1;
                break;
            }
        key(wr, kn->text ? kn->text : "");
        emit_canonical(wr, &body->items[2 * i + 1], f >= 0 ? (int)kd->fields[f].type : -1);
    }
    map_end(wr);
}

/* A loaded component straight from its record: the same text keel_body_encode
 * gives (declared order, transient fields dropped) without building a tree.
 * keel__scene_write_via_encode(true) switches to keel_body_encode, and the tests
 * compare both. */
static bool via_encode;
void keel__scene_write_via_encode(bool on) { via_encode = on; }

static void sink_plain(void *wr, const char *text) { plain(wr, text); }
static void sink_number(void *wr, double x) { float_value(wr, x); }
static void sink_text(void *wr, const char *s, keel__text_kind kind) { str(wr, s); }
static void sink_seq_start(void *wr) { seq_start(wr, true); }
static void sink_seq_end(void *wr) { seq_end(wr); }
/* Field values straight to the emitter, with the writer's own float formatting. */
static const keel__value_sink writer_sink = { sink_plain, sink_number, sink_text, sink_seq_start, sink_seq_end };

static void emit_record(writer *wr, const keel_world *w, keel_comp c)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    const void *rec = keel_record(w, c);
    map_start(wr, false);
    for (size_t i = 0; kd && rec && i < kd->field_count; i++) {
        const keel_field_desc *f = &kd->fields[i];
        if (f->flags & (KEEL_FIELD_TRANSIENT | KEEL_FIELD_RUNTIME)) continue; /* not part of a scene */
        keel_value v;
        keel__record_get(c.kind, rec, (int)i, &v);
        key(wr, f->key);
        keel__value_emit(f->type, &v, f->type == KEEL_T_ENUM ? keel__value_choice(f, v.as.i) : NULL, &writer_sink, wr);
    }
    map_end(wr);
}

static void emit_components(writer *wr, const keel_world *w, keel_entity e)
{
    size_t n = keel_member_count(w, e);
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (!keel_member_at(w, e, i, &m)) continue;
        if (m.loaded) {
            const keel_kind_desc *kd = keel_kind_describe(m.kind);
            if (kd && (kd->flags & KEEL_KIND_NOSAVE)) continue;
        }
        if (shown++ == 0) seq_start(wr, false);
        map_start(wr, false);
        key(wr, "kind");
        str(wr, m.key);
        key(wr, "version");
        int_value(wr, m.version);
        key(wr, "slot");
        int_value(wr, m.slot);
        if (!m.enabled) {
            key(wr, "enabled");
            plain(wr, "false");
        }
        key(wr, "body");
        if (m.loaded && !via_encode) {
            keel_comp c = { e, m.kind, m.slot };
            emit_record(wr, w, c);
        } else if (m.loaded) {
            keel_comp c = { e, m.kind, m.slot };
            keel_node *body = keel_body_encode(w, c, false);
            emit_body(wr, m.kind, body);
            keel_node_free(body);
        } else if (m.preserved) {
            keel__yaml_out_preserved(wr, m.preserved);
        } else {
            map_start(wr, true);
            map_end(wr);
        }
        map_end(wr);
    }
    if (shown) {
        seq_end(wr);
    } else {
        seq_start(wr, true);
        seq_end(wr);
    }
}

static void emit_entity(writer *wr, const keel_world *w, keel_entity e, keel_entity top)
{
    char u[37];
    map_start(wr, false);
    key(wr, "uuid");
    keel_uuid_format(keel_entity_uuid(w, e), u);
    str(wr, u);
    key(wr, "name");
    const char *name = keel_entity_name(w, e);
    str(wr, name ? name : "");
    keel_entity parent = keel_entity_parent(w, e);
    if (parent && e != top) { /* a fragment's top entity: its parent is wherever it is pasted */
        key(wr, "parent");
        keel_uuid_format(keel_entity_uuid(w, parent), u);
        str(wr, u);
    }
    if (!keel_entity_enabled(w, e)) {
        key(wr, "enabled");
        plain(wr, "false");
    }
    key(wr, "components");
    emit_components(wr, w, e);
    map_end(wr);
}

static void emit_settings(writer *wr, const keel_world *w)
{
    const keel_grid *g = keel_world_grid(w);
    key(wr, "settings");
    map_start(wr, false);
    key(wr, "grid");
    map_start(wr, false);
    key(wr, "enabled");
    plain(wr, g->enabled ? "true" : "false");
    key(wr, "origin");
    vec_value(wr, g->origin, 3);
    key(wr, "orientation");
    vec_value(wr, g->orientation, 4);
    key(wr, "base_spacing");
    float_value(wr, g->base_spacing);
    key(wr, "major_line_every");
    int_value(wr, g->major_line_every);
    /* How the grid looks: written only when not the default, so files from before these keys
     * keep their bytes. */
    keel_grid def = keel_grid_default();
    static const char *const colors[] = { "minor_color", "major_color", "u_color", "v_color" };
    const double *have[] = { g->minor_color, g->major_color, g->u_color, g->v_color };
    const double *want[] = { def.minor_color, def.major_color, def.u_color, def.v_color };
    for (int c = 0; c < 4; c++)
        if (memcmp(have[c], want[c], 4 * sizeof(double)) != 0) {
            key(wr, colors[c]);
            vec_value(wr, have[c], 4);
        }
    if (g->fade != def.fade) {
        key(wr, "fade");
        float_value(wr, g->fade);
    }
    if (g->display != def.display) {
        key(wr, "display");
        plain(wr, g->display == KEEL_GRID_DOTS ? "dots" : "none");
    }
    map_end(wr);
    int64_t seed;
    uint64_t rs[4];
    if (keel_random_state(w, &seed, rs)) { /* only once seeded or drawn: other files stay as they were */
        key(wr, "random");
        map_start(wr, false);
        key(wr, "seed");
        int_value(wr, seed);
        char hex[65];
        for (int i = 0; i < 4; i++) snprintf(hex + 16 * i, 17, "%016llx", (unsigned long long)rs[i]);
        key(wr, "state");
        str(wr, hex);
        map_end(wr);
    }
    map_end(wr);
}

/* `keel:` and `scene:` (its UUID and name): the head of a scene file and of a fragment. */
static void emit_header(writer *wr, const keel_world *w)
{
    key(wr, "keel");
    int_value(wr, KEEL_DOCUMENT_VERSION);
    key(wr, "scene");
    map_start(wr, false);
    char u[37];
    keel_uuid_format(keel_world_uuid(w), u);
    key(wr, "uuid");
    str(wr, u);
    key(wr, "name");
    const char *name = keel_world_name(w);
    str(wr, name ? name : "");
    map_end(wr);
    uint32_t feats = keel__world_features(w); /* what the loaded file needed, kept */
    if (feats) {
        key(wr, "features");
        seq_start(wr, true);
        for (uint32_t i = 0; keel__feature_names[i]; i++)
            if (feats & (1u << i)) str(wr, keel__feature_names[i]);
        seq_end(wr);
    }
}

keel_status keel_scene_dump(const keel_world *w, char **out, size_t *len, keel_diags *d)
{
    if (keel_world_in_callback(w)) /* a file never sees state that may still roll back */
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel_scene_dump refuses while a callback transaction is open");
    writer wr;
    keel__yaml_out_open(&wr);
    map_start(&wr, false);
    emit_header(&wr, w);
    emit_settings(&wr, w);
    key(&wr, "root");
    emit_components(&wr, w, keel_world_root(w));
    key(&wr, "entities");
    keel_entity first = keel_next(w, 0);
    seq_start(&wr, first == KEEL_NO_ENTITY);
    for (keel_entity ent = first; ent; ent = keel_next(w, ent)) emit_entity(&wr, w, ent, KEEL_NO_ENTITY);
    seq_end(&wr);
    map_end(&wr);
    char *text = keel__yaml_out_close(&wr, "the scene", len, d);
    if (!text) return KEEL_INVALID_ARGUMENT;
    *out = text;
    return KEEL_OK;
}

/* Pre-order below e, as keel_next walks the whole world. */
static void emit_subtree(writer *wr, const keel_world *w, keel_entity e, keel_entity top)
{
    emit_entity(wr, w, e, top);
    size_t n = keel_entity_child_count(w, e);
    for (size_t i = 0; i < n; i++) emit_subtree(wr, w, keel_entity_child(w, e, i), top);
}

keel_status keel__scene_dump_subtree(const keel_world *w, keel_entity e, char **out, size_t *len, keel_diags *d)
{
    if (keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "e:dump refuses while a callback transaction is open");
    if (e == keel_world_root(w)) return KEEL_ERROR(d, KEEL_PROTECTED_ENTITY, "", "the scene root cannot be dumped as a fragment");
    if (!keel_alive(w, e)) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "the entity is not alive");
    writer wr;
    keel__yaml_out_open(&wr);
    map_start(&wr, false);
    emit_header(&wr, w); /* a fragment says where it came from: a scene file needs it to load */
    key(&wr, "entities");
    seq_start(&wr, false);
    emit_subtree(&wr, w, e, e);
    seq_end(&wr);
    map_end(&wr);
    char *text = keel__yaml_out_close(&wr, "the fragment", len, d);
    if (!text) return KEEL_INVALID_ARGUMENT;
    *out = text;
    return KEEL_OK;
}

keel_status keel_scene_save(const keel_world *w, const char *path, keel_diags *d)
{
    if (!path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no path");
    if (keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel_scene_save refuses while a callback transaction is open");
    if (keel_world_lift_count(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel_scene_save refuses while entities are lifted (restore or discard them)");
    if (keel__job_path_pending(path))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s has a save job still pending", path);
    char *text = NULL;
    size_t len = 0;
    keel_status st = keel_scene_dump(w, &text, &len, d);
    if (st) return st;
    st = keel_write_atomic(path, text, len, d);
    free(text);
    return st;
}
