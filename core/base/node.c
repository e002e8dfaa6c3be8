/* node.c — keel_node document trees, YAML 1.2 core-schema scalar reading, shortest doubles. */
#include "base/util.h"
#include "base/vec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static keel_node *node_alloc(keel_node_kind kind, keel_node_style style)
{
    keel_node *n = keel__xrealloc(NULL, sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->style = style;
    return n;
}

keel_node *keel_node_new_scalar(const char *text, keel_node_style style)
{
    keel_node *n = node_alloc(KEEL_NODE_SCALAR, style);
    n->text = keel__strdup(text ? text : "");
    n->len = strlen(n->text);
    return n;
}

keel_node *keel_node_new_seq(void)
{
    return node_alloc(KEEL_NODE_SEQ, KEEL_STYLE_ANY);
}

keel_node *keel_node_new_map(void)
{
    return node_alloc(KEEL_NODE_MAP, KEEL_STYLE_ANY);
}

/* What push and put keep about a collection, in its `text` (which only scalars use for
 * text): the capacity of `items`, so it grows geometrically, and for a wide map a hash index
 * of its keys, so a put finds its key without a scan. Filling a collection is linear overall.
 * The record holds only while `items` and `count` are as it left them: a collection changed
 * by other means (the struct is public) gets a fresh one. Index slots hold pair index + 1
 * (0: empty), open addressing, at most half full; mask 0: no index. */
typedef struct node_aux {
    const keel_node *items;
    size_t count, cap, mask;
    uint32_t slots[];
} node_aux;

#define INDEX_FROM 16 /* below this many pairs a scan is as fast as a hash */

static size_t used_slots(const keel_node *n)
{
    return n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
}

/* The collection's record, with room for `slots` child structs in items. */
static node_aux *node_reserve(keel_node *n, size_t slots)
{
    node_aux *a = (node_aux *)(void *)n->text;
    if (!a || a->items != n->items || a->count != n->count) {
        free(n->text);
        a = keel__xcalloc(1, sizeof *a);
        a->cap = used_slots(n); /* all that is known of a block allocated elsewhere */
        a->count = n->count;
        a->items = n->items;
        n->text = (char *)(void *)a;
        n->len = 0;
    }
    if (a->cap < slots) {
        n->items = keel__vec_grow(n->items, &a->cap, slots, sizeof *n->items, 8);
        a->items = n->items;
    }
    return a;
}

keel_node *keel_node_push(keel_node *seq, keel_node *item)
{
    if (!seq || seq->kind != KEEL_NODE_SEQ) { /* a map holds pairs, a scalar nothing */
        keel_node_free(item);
        return NULL;
    }
    if (!item)
        item = keel_node_new_scalar("", KEEL_STYLE_PLAIN); /* a null */
    node_aux *a = node_reserve(seq, seq->count + 1);
    seq->items[seq->count] = *item;
    free(item);
    a->count = ++seq->count;
    return &seq->items[seq->count - 1];
}

static size_t key_hash(const char *k)
{
    size_t h = (size_t)14695981039346656037ull;
    for (; *k; k++) h = (h ^ (unsigned char)*k) * (size_t)1099511628211ull;
    return h;
}

static const char *key_text(const keel_node *map, size_t pair)
{
    const keel_node *k = &map->items[2 * pair];
    return k->kind == KEEL_NODE_SCALAR && k->text ? k->text : NULL;
}

static void index_insert(node_aux *a, const keel_node *map, size_t pair)
{
    const char *k = key_text(map, pair);
    if (!k) return;
    size_t at = key_hash(k) & a->mask;
    while (a->slots[at]) at = (at + 1) & a->mask;
    a->slots[at] = (uint32_t)(pair + 1);
}

/* The pair whose key is `key` (the first, if a hand-made map has it twice), or map->count.
 * `a` is the map's record (node_reserve); it may move when the index is (re)built. */
static size_t find_pair(keel_node *map, node_aux **ap, const char *key)
{
    node_aux *a = *ap;
    if (map->count < INDEX_FROM) {
        for (size_t i = 0; i < map->count; i++) {
            const char *k = key_text(map, i);
            if (k && strcmp(k, key) == 0) return i;
        }
        return map->count;
    }
    if (!a->mask || 2 * (map->count + 1) > a->mask + 1) { /* none yet, or too full for one more */
        size_t slots = 64;
        while (slots < 4 * (map->count + 1)) slots *= 2;
        a = keel__xrealloc(a, sizeof *a + slots * sizeof *a->slots);
        memset(a->slots, 0, slots * sizeof *a->slots);
        a->mask = slots - 1;
        for (size_t i = 0; i < map->count; i++) index_insert(a, map, i);
        map->text = (char *)(void *)a;
        *ap = a;
    }
    /* Pairs go in in order, so along a probe chain a lower pair comes first. */
    for (size_t at = key_hash(key) & a->mask; a->slots[at]; at = (at + 1) & a->mask) {
        size_t pair = a->slots[at] - 1;
        const char *k = key_text(map, pair);
        if (k && strcmp(k, key) == 0) return pair;
    }
    return map->count;
}

keel_node *keel_node_put(keel_node *map, const char *key, keel_node *value)
{
    if (!map || map->kind != KEEL_NODE_MAP || !key) {
        keel_node_free(value);
        return NULL;
    }
    if (!value)
        value = keel_node_new_scalar("", KEEL_STYLE_PLAIN); /* a null */
    node_aux *a = node_reserve(map, 2 * (map->count + 1));
    size_t i = find_pair(map, &a, key);
    if (i < map->count) {
        keel_node *v = &map->items[2 * i + 1];
        keel_node_clear(v);
        *v = *value;
        free(value);
        return v;
    }
    keel_node *k = keel_node_new_scalar(key, KEEL_STYLE_ANY);
    map->items[2 * map->count] = *k;
    map->items[2 * map->count + 1] = *value;
    free(k);
    free(value);
    if (a->mask) index_insert(a, map, map->count);
    a->count = ++map->count;
    return &map->items[2 * map->count - 1];
}

static void node_copy_into(keel_node *dst, const keel_node *src)
{
    *dst = *src;
    dst->text = NULL;
    dst->items = NULL;
    if (src->text && src->kind == KEEL_NODE_SCALAR) { /* a map's text is its index: not copied */
        dst->text = keel__xrealloc(NULL, src->len + 1);
        memcpy(dst->text, src->text, src->len);
        dst->text[src->len] = '\0';
    }
    size_t n = src->kind == KEEL_NODE_MAP ? 2 * src->count : src->kind == KEEL_NODE_SEQ ? src->count : 0;
    if (n) {
        dst->items = keel__xrealloc(NULL, n * sizeof *dst->items);
        for (size_t i = 0; i < n; i++)
            node_copy_into(&dst->items[i], &src->items[i]);
    }
}

keel_node *keel_node_copy(const keel_node *n)
{
    if (!n)
        return NULL;
    keel_node *c = node_alloc(n->kind, n->style);
    node_copy_into(c, n);
    return c;
}

void keel_node_clear(keel_node *n)
{
    if (!n)
        return;
    size_t cnt = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->kind == KEEL_NODE_SEQ ? n->count : 0;
    for (size_t i = 0; i < cnt; i++)
        keel_node_clear(&n->items[i]);
    free(n->items);
    free(n->text);
    n->items = NULL;
    n->text = NULL;
    n->count = 0;
    n->len = 0;
}

void keel_node_free(keel_node *n)
{
    if (!n)
        return;
    keel_node_clear(n);
    free(n);
}

const keel_node *keel_node_get(const keel_node *map, const char *key)
{
    if (!map || map->kind != KEEL_NODE_MAP || !key)
        return NULL;
    for (size_t i = 0; i < map->count; i++) {
        const keel_node *k = &map->items[2 * i];
        if (k->kind == KEEL_NODE_SCALAR && k->text && strcmp(k->text, key) == 0)
            return &map->items[2 * i + 1];
    }
    return NULL;
}

static bool is_quoted(const keel_node *n)
{
    return n->style == KEEL_STYLE_SINGLE || n->style == KEEL_STYLE_DOUBLE ||
           n->style == KEEL_STYLE_LITERAL || n->style == KEEL_STYLE_FOLDED;
}

/* Equal structure and text. Style matters only where it changes meaning: a quoted
 * scalar is a string, so `"1"` and `1` differ; flow/block layout does not. */
bool keel_node_equal(const keel_node *a, const keel_node *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind)
        return false;
    if (a->kind == KEEL_NODE_SCALAR) {
        size_t la = a->text ? a->len : 0, lb = b->text ? b->len : 0;
        if (la != lb || (la && memcmp(a->text, b->text, la) != 0))
            return false;
        return is_quoted(a) == is_quoted(b);
    }
    if (a->count != b->count)
        return false;
    size_t n = a->kind == KEEL_NODE_MAP ? 2 * a->count : a->count;
    for (size_t i = 0; i < n; i++)
        if (!keel_node_equal(&a->items[i], &b->items[i]))
            return false;
    return true;
}

/* ---- core schema ---- */

static const char *plain_text(const keel_node *n)
{
    if (!n || n->kind != KEEL_NODE_SCALAR || is_quoted(n))
        return NULL;
    if (n->text && strlen(n->text) != n->len)
        return NULL; /* embedded NUL: not a core-schema value */
    return n->text ? n->text : "";
}

bool keel_node_is_null(const keel_node *n)
{
    if (!n)
        return true;
    const char *t = plain_text(n);
    if (!t)
        return false;
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") || !strcmp(t, "NULL");
}

bool keel_node_as_bool(const keel_node *n, bool *out)
{
    const char *t = plain_text(n);
    if (!t)
        return false;
    if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE")) {
        if (out)
            *out = true;
        return true;
    }
    if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE")) {
        if (out)
            *out = false;
        return true;
    }
    return false;
}

static bool all_in(const char *s, const char *set)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

/* Core-schema int: [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+. Returns the magnitude
 * via strtoull so callers can range-check; false when not an int at all. */
static bool parse_int_text(const char *t, bool *neg, unsigned long long *mag, bool *overflow)
{
    *neg = false;
    *overflow = false;
    int base = 10;
    const char *digits = t;
    if (t[0] == '0' && t[1] == 'x') {
        base = 16;
        digits = t + 2;
        if (!all_in(digits, "0123456789abcdefABCDEF"))
            return false;
    } else if (t[0] == '0' && t[1] == 'o') {
        base = 8;
        digits = t + 2;
        if (!all_in(digits, "01234567"))
            return false;
    } else {
        if (*digits == '-' || *digits == '+') {
            *neg = *digits == '-';
            digits++;
        }
        if (!all_in(digits, "0123456789"))
            return false;
    }
    errno = 0;
    *mag = strtoull(digits, NULL, base);
    if (errno == ERANGE)
        *overflow = true;
    return true;
}

bool keel_node_as_int(const keel_node *n, int64_t *out)
{
    const char *t = plain_text(n);
    if (!t)
        return false;
    bool neg, overflow;
    unsigned long long mag;
    if (!parse_int_text(t, &neg, &mag, &overflow) || overflow)
        return false;
    int64_t v;
    if (neg) {
        if (mag > (unsigned long long)INT64_MAX + 1ull)
            return false;
        v = mag == (unsigned long long)INT64_MAX + 1ull ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (unsigned long long)INT64_MAX)
            return false;
        v = (int64_t)mag;
    }
    if (out)
        *out = v;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_core_float(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t lead = strspn(s, "0123456789");
    s += lead;
    if (*s == '.') {
        s++;
        size_t frac = strspn(s, "0123456789");
        if (!lead && !frac)
            return false;
        s += frac;
    } else if (!lead) {
        return false;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        size_t ex = strspn(s, "0123456789");
        if (!ex)
            return false;
        s += ex;
    }
    return *s == '\0';
}

/* [-+]?digits[.digits] or [-+]?.digits with at most 15 digits in all: the integer M of its
 * digits and 10^k (k fraction digits) are exact doubles, so M / 10^k, rounded once by the
 * division, is the nearest double to the text: strtod's answer without strtod. */
static bool short_decimal(const char *t, double *out)
{
    static const double pow10[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
    const char *s = t + (*t == '-' || *t == '+');
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (;; s++) {
        if (*s >= '0' && *s <= '9') {
            if (++digits > 15)
                return false;
            m = m * 10 + (uint64_t)(*s - '0');
            if (frac >= 0)
                frac++;
        } else if (*s == '.' && frac < 0) {
            frac = 0;
        } else {
            break;
        }
    }
    if (*s || !digits)
        return false;
    double v = (double)m / pow10[frac > 0 ? frac : 0];
    *out = *t == '-' ? -v : v;
    return true;
}

bool keel_node_as_float(const keel_node *n, double *out)
{
    const char *t = plain_text(n);
    if (!t)
        return false;
    double v;
    if (short_decimal(t, &v)) {
        if (out)
            *out = v;
        return true;
    }
    const char *u = t + (*t == '-' || *t == '+');
    if (!strcmp(u, ".inf") || !strcmp(u, ".Inf") || !strcmp(u, ".INF")) {
        v = *t == '-' ? -INFINITY : INFINITY;
    } else if (!strcmp(t, ".nan") || !strcmp(t, ".NaN") || !strcmp(t, ".NAN")) {
        v = NAN;
    } else if (is_core_float(t)) {
        v = strtod(t, NULL); /* decimal ints too: keeps "-0" as negative zero */
    } else {
        bool neg, overflow;
        unsigned long long mag;
        if (!parse_int_text(t, &neg, &mag, &overflow))
            return false;
        if (overflow)
            return false;
        v = neg ? -(double)mag : (double)mag;
    }
    if (out)
        *out = v;
    return true;
}

/* ---- shortest round-trip doubles ---- */

/* Python repr's layout: positional for decimal exponents in [-4, 16), else
 * d.ddde+X / d.ddde-X with no leading zeros in the exponent. */
int keel_format_double(double v, char *buf, size_t cap)
{
    char out[64];
    if (isnan(v)) {
        strcpy(out, ".nan");
    } else if (isinf(v)) {
        strcpy(out, v < 0 ? "-.inf" : ".inf");
    } else if (v == 0) {
        strcpy(out, signbit(v) ? "-0" : "0");
    } else {
        char digits[32];
        int nd = 0, exp10;
        bool neg = v < 0;
        double mag = fabs(v);
        if (mag < 1e15 && mag == floor(mag)) {
            /* an integer below 10^15: its digits are the shortest that read back (doubles there
             * are at most 1/8 apart, and fewer digits name another integer) */
            char rev[20];
            int n = 0;
            for (uint64_t m = (uint64_t)mag; m; m /= 10)
                rev[n++] = (char)('0' + m % 10);
            exp10 = n - 1;
            while (n)
                digits[nd++] = rev[--n];
            while (nd > 1 && digits[nd - 1] == '0')
                nd--;
            digits[nd] = '\0';
        } else {
            /* If p significant digits read back exactly, so do p+1 (the nearest p+1-digit
             * decimal is at least as close), so the shortest p can be found by bisection. Most
             * values that are not short need 16 or 17 digits: 16 and 15 are asked first, so those
             * take one or two tries, not five; the last text that read back is kept. */
            char tmp[64], ok[64];
            int lo = 1, hi = 17, have = 0;
            for (int p = 16; p >= 15; p--) {
                snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
                if (strtod(tmp, NULL) != v) {
                    lo = hi = p + 1;
                    break;
                }
                memcpy(ok, tmp, sizeof ok);
                have = hi = p;
            }
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                snprintf(tmp, sizeof tmp, "%.*e", mid - 1, v);
                if (strtod(tmp, NULL) == v) {
                    memcpy(ok, tmp, sizeof ok);
                    have = hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            if (have == lo)
                memcpy(tmp, ok, sizeof tmp);
            else
                snprintf(tmp, sizeof tmp, "%.*e", lo - 1, v);
            /* tmp: [-]d[.ddd]e[+-]XX */
            const char *p = tmp;
            if (*p == '-')
                p++;
            for (; *p && *p != 'e'; p++)
                if (*p >= '0' && *p <= '9')
                    digits[nd++] = *p;
            while (nd > 1 && digits[nd - 1] == '0')
                nd--;
            digits[nd] = '\0';
            exp10 = atoi(p + 1);
        }
        char *o = out;
        if (neg)
            *o++ = '-';
        if (exp10 >= -4 && exp10 < 16) {
            if (exp10 < 0) {
                *o++ = '0';
                *o++ = '.';
                for (int i = 0; i < -exp10 - 1; i++)
                    *o++ = '0';
                for (int i = 0; i < nd; i++)
                    *o++ = digits[i];
            } else {
                for (int i = 0; i <= exp10 || i < nd; i++) {
                    if (i == exp10 + 1)
                        *o++ = '.';
                    *o++ = i < nd ? digits[i] : '0';
                }
            }
            *o = '\0';
        } else {
            *o++ = digits[0];
            if (nd > 1) {
                *o++ = '.';
                for (int i = 1; i < nd; i++)
                    *o++ = digits[i];
            }
            snprintf(o, sizeof out - (size_t)(o - out), "e%c%d", exp10 < 0 ? '-' : '+',
                     exp10 < 0 ? -exp10 : exp10);
        }
    }
    int len = (int)strlen(out);
    if (buf && cap) {
        size_t n = (size_t)len < cap ? (size_t)len : cap - 1;
        memcpy(buf, out, n);
        buf[n] = '\0';
    }
    return len;
}
