/* slotfile.c — the save slot file: header, slot details (text), the compressed state and its
 * CRC; written atomically, read whole and verified before anything is decoded. */
#include "base/util.h"
#include "base/bytes.h"
#include "files/slotfile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define SAVE_VERSION 1u
#define SAVE_HEADER 16u                   /* magic 8, version u32, info length u32 */
#define SAVE_INFO_MAX (1u << 20)          /* slot details text */
#define SAVE_STATE_MAX (1024u * 1024u * 1024u) /* decompressed state bound */

void keel_slot_info_free(keel_slot_info *i)
{
    if (!i) return;
    free(i->title);
    keel_node_free(i->fields);
    memset(i, 0, sizeof *i);
}

/* ---- slot details (text) ---- */

static void text_quoted(keel__buf *b, const char *s)
{
    keel__buf_u8(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            keel__buf_u8(b, '\\');
            keel__buf_u8(b, c);
        } else if (c == '\n') keel__buf_bytes(b, "\\n", 2);
        else if (c == '\t') keel__buf_bytes(b, "\\t", 2);
        else if (c < 0x20 || c == 0x7f) {
            char esc[5];
            snprintf(esc, sizeof esc, "\\x%02x", c);
            keel__buf_bytes(b, esc, 4);
        } else keel__buf_u8(b, c);
    }
    keel__buf_u8(b, '"');
}

static bool plain_safe(const char *s)
{
    if (!*s || *s == '"' || *s == '\'' || *s == ' ') return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '#' || (*p == ':' && (p[1] == ' ' || !p[1]))) return false;
    return s[strlen(s) - 1] != ' ';
}

static bool field_key_ok(const char *k)
{
    if (!*k) return false;
    for (const char *p = k; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

static keel_status info_text(const keel_slot_info *info, time_t now, keel__buf *b, keel_diags *d)
{
    char num[64];
    keel__buf_bytes(b, "title: ", 7);
    text_quoted(b, info && info->title ? info->title : "");
    snprintf(num, sizeof num, "\nsaved_at: %lld\n",
             (long long)(info && info->saved_at ? info->saved_at : (int64_t)now));
    keel__buf_bytes(b, num, strlen(num));
    double ps = info ? info->play_seconds : 0;
    if (!isfinite(ps) || ps < 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "play_seconds", "play_seconds must be a finite number >= 0");
    keel__buf_bytes(b, "play_seconds: ", 14);
    keel_format_double(ps, num, sizeof num);
    keel__buf_bytes(b, num, strlen(num));
    keel__buf_u8(b, '\n');
    const keel_node *f = info ? info->fields : NULL;
    if (f && f->kind != KEEL_NODE_MAP) /* an empty SEQ or a scalar too: count says nothing of them */
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "fields", "slot fields must be a map of scalars");
    if (!f || f->count == 0) return KEEL_OK;
    keel__buf_bytes(b, "fields:\n", 8);
    for (size_t i = 0; i < f->count; i++) {
        const keel_node *k = &f->items[2 * i], *v = &f->items[2 * i + 1];
        if (k->kind != KEEL_NODE_SCALAR || !field_key_ok(k->text))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "fields",
                              "slot field key \"%s\" is not made of letters, digits and _",
                              k->kind == KEEL_NODE_SCALAR ? k->text : "?");
        if (v->kind != KEEL_NODE_SCALAR)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "fields", "slot field %s is not a scalar", k->text);
        keel__buf_bytes(b, "  ", 2);
        keel__buf_bytes(b, k->text, k->len);
        keel__buf_bytes(b, ": ", 2);
        bool quoted = v->style == KEEL_STYLE_DOUBLE || v->style == KEEL_STYLE_SINGLE || !plain_safe(v->text);
        if (quoted) text_quoted(b, v->text);
        else keel__buf_bytes(b, v->text, v->len);
        keel__buf_u8(b, '\n');
    }
    return KEEL_OK;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One value up to the end of its line: a double-quoted string or plain text. */
static keel_node *info_value(const char *s, const char *end)
{
    if (s < end && *s == '"') {
        keel__buf b = { 0 };
        const char *p = s + 1;
        for (; p < end && *p != '"'; p++) {
            if (*p != '\\') {
                keel__buf_u8(&b, (uint8_t)*p);
                continue;
            }
            if (++p >= end) break;
            if (*p == 'n') keel__buf_u8(&b, '\n');
            else if (*p == 't') keel__buf_u8(&b, '\t');
            else if (*p == 'x' && p + 2 < end && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
                int c = hexval(p[1]) * 16 + hexval(p[2]);
                if (c == 0) {
                    free(b.p);
                    return NULL;
                }
                keel__buf_u8(&b, (uint8_t)c);
                p += 2;
            } else if (*p == '"' || *p == '\\') keel__buf_u8(&b, (uint8_t)*p);
            else {
                free(b.p);
                return NULL;
            }
        }
        if (p >= end || p + 1 != end) {
            free(b.p);
            return NULL;
        }
        keel__buf_u8(&b, 0);
        keel_node *n = keel_node_new_scalar((char *)b.p, KEEL_STYLE_DOUBLE);
        free(b.p);
        return n;
    }
    char *t = keel__xrealloc(NULL, (size_t)(end - s) + 1);
    memcpy(t, s, (size_t)(end - s));
    t[end - s] = 0;
    keel_node *n = keel_node_new_scalar(t, KEEL_STYLE_PLAIN);
    free(t);
    return n;
}

static keel_status info_parse(const char *text, size_t len, keel_slot_info *out, keel_diags *d)
{
    memset(out, 0, sizeof *out);
    const char *p = text, *end = text + len;
    bool in_fields = false;
    int line = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        line++;
        bool indented = eol - p >= 2 && p[0] == ' ' && p[1] == ' ';
        const char *k = indented ? p + 2 : p;
        const char *colon = memchr(k, ':', (size_t)(eol - k));
        if (eol == p) { p = eol + 1; continue; }
        if (!colon || (colon + 1 < eol && colon[1] != ' ') || colon == k || memchr(k, 0, (size_t)(eol - k))) {
            keel_slot_info_free(out);
            return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", NULL, line, 1,
                                 "save slot details: line %d is not `key: value`", line);
        }
        size_t klen = (size_t)(colon - k);
        const char *v = colon + 1 < eol ? colon + 2 : eol;
        keel_node *val = v < eol ? info_value(v, eol) : NULL;
        bool ok = true;
        if (indented && in_fields && val) {
            char *key = keel__xrealloc(NULL, klen + 1);
            memcpy(key, k, klen);
            key[klen] = 0;
            ok = field_key_ok(key);
            if (ok) keel_node_put(out->fields, key, val), val = NULL;
            free(key);
        } else if (!indented && klen == 6 && memcmp(k, "fields", 6) == 0 && v == eol) {
            in_fields = true;
            if (!out->fields) out->fields = keel_node_new_map();
        } else if (!indented && klen == 5 && memcmp(k, "title", 5) == 0 && val && val->style == KEEL_STYLE_DOUBLE) {
            free(out->title);
            out->title = keel__strdup(val->text);
        } else if (!indented && klen == 8 && memcmp(k, "saved_at", 8) == 0 && val) {
            ok = keel_node_as_int(val, &out->saved_at);
        } else if (!indented && klen == 12 && memcmp(k, "play_seconds", 12) == 0 && val) {
            ok = keel_node_as_float(val, &out->play_seconds);
        } else {
            ok = false;
        }
        keel_node_free(val);
        if (!ok) {
            keel_slot_info_free(out);
            return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", NULL, line, 1,
                                 "save slot details: line %d is not understood", line);
        }
        p = eol + 1;
    }
    if (!out->title) out->title = keel__strdup("");
    return KEEL_OK;
}

keel_status keel__slot_info_check(const keel_slot_info *info, keel_diags *d)
{
    keel__buf b = { 0 };
    keel_status s = info_text(info, 0, &b, d);
    if (s == KEEL_OK && b.len > SAVE_INFO_MAX)
        s = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "slot details of %zu bytes are over the limit (%u bytes)", b.len,
                       SAVE_INFO_MAX);
    free(b.p);
    return s;
}

/* ---- the file ---- */

keel_status keel__slot_write(const char *path, const keel_slot_info *info, const keel__buf *state, keel_diags *d)
{
    keel__buf file = { 0 };
    keel__buf_bytes(&file, "KEELSAVE", 8);
    keel__buf_u32(&file, SAVE_VERSION);
    keel__buf_u32(&file, 0);
    keel_status s = info_text(info, time(NULL), &file, d);
    if (s != KEEL_OK) {
        free(file.p);
        return s;
    }
    if (file.len - SAVE_HEADER > SAVE_INFO_MAX) { /* keel_persist_info would refuse the file */
        size_t n = file.len - SAVE_HEADER;
        free(file.p);
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "slot details of %zu bytes are over the limit (%u bytes)", n,
                          SAVE_INFO_MAX);
    }
    uint32_t info_len = (uint32_t)(file.len - SAVE_HEADER);
    for (int i = 0; i < 4; i++) file.p[12 + i] = (uint8_t)(info_len >> (8 * i));

    if (state->len > SAVE_STATE_MAX) {
        free(file.p);
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "save state of %zu bytes is over the limit", state->len);
    }
    uLongf clen = compressBound((uLong)state->len);
    keel__buf_u32(&file, (uint32_t)state->len);
    size_t clen_at = file.len;
    keel__buf_u32(&file, 0);
    uint8_t *dst = keel__buf_grow(&file, clen);
    int zr = compress2(dst, &clen, state->p, (uLong)state->len, 6);
    if (zr != Z_OK) {
        free(file.p);
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "zlib compress2 failed (%d)", zr);
    }
    file.len = clen_at + 4 + clen;
    for (int i = 0; i < 4; i++) file.p[clen_at + i] = (uint8_t)((uint32_t)clen >> (8 * i));
    keel__buf_u32(&file, (uint32_t)crc32_z(0L, file.p, file.len));
    s = keel_write_atomic(path, file.p, file.len, d);
    free(file.p);
    return s;
}

keel_status keel__slot_read(const char *path, uint8_t **state, size_t *state_len, keel_diags *d)
{
    char *data = NULL;
    size_t len = 0;
    *state = NULL;
    *state_len = 0;
    keel_status s = keel_read_file(path, (size_t)SAVE_STATE_MAX + SAVE_INFO_MAX, &data, &len, d);
    if (s != KEEL_OK) return s;
    const uint8_t *p = (const uint8_t *)data;
    const char *err = NULL;
    uint32_t info_len = 0, raw_len = 0, clen = 0;
    if (len < 8 || memcmp(p, "KEELSAVE", 8) != 0) err = "not a keel save file (bad magic)";
    else if (len < SAVE_HEADER + 12) err = "truncated header";
    else if (keel__get_u32(p + 8) != SAVE_VERSION) err = "unsupported save format version";
    else if (keel__get_u32(p + len - 4) != (uint32_t)crc32_z(0L, p, len - 4))
        err = "CRC mismatch: the file is damaged or truncated";
    else if ((info_len = keel__get_u32(p + 12)) > len - SAVE_HEADER - 12)
        err = "slot details run past the end of the file";
    else if (info_len > SAVE_INFO_MAX)
        err = "slot details are larger than the limit"; /* as keel_persist_info says */
    else {
        size_t at = SAVE_HEADER + info_len;
        raw_len = keel__get_u32(p + at);
        clen = keel__get_u32(p + at + 4);
        if ((uint64_t)at + 8 + clen + 4 != len) err = "compressed state length does not match the file size";
        else if (raw_len > SAVE_STATE_MAX || (uint64_t)raw_len > (uint64_t)clen * 1032u + 64)
            err = "declared state size is implausible";
        else {
            keel_slot_info info;
            if (info_parse(data + SAVE_HEADER, info_len, &info, NULL) != KEEL_OK) err = "slot details are malformed";
            keel_slot_info_free(&info);
        }
        if (!err) {
            uint8_t *raw = keel__xrealloc(NULL, raw_len);
            uLongf out_len = raw_len;
            int zr = uncompress(raw, &out_len, p + at + 8, clen);
            if (zr != Z_OK || out_len != raw_len) {
                err = "the compressed state does not inflate to its declared size";
                free(raw);
            } else {
                *state = raw;
                *state_len = raw_len;
            }
        }
    }
    free(data);
    if (err) return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0, "save file: %s", err);
    return KEEL_OK;
}

keel_status keel_persist_info(const char *path, keel_slot_info *out, keel_diags *d)
{
    if (!out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_info: NULL argument");
    memset(out, 0, sizeof *out);
    if (!path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_info: NULL path");
    FILE *f = fopen(path, "rb");
    if (!f) return keel_diag_add(d, KEEL_SEV_ERROR, KEEL_IO_ERROR, "", path, 0, 0, "cannot open %s: %s", path, strerror(errno));
    uint8_t h[SAVE_HEADER];
    keel_status s = KEEL_OK;
    char *text = NULL;
    uint32_t n = 0;
    if (fread(h, 1, SAVE_HEADER, f) != SAVE_HEADER || memcmp(h, "KEELSAVE", 8) != 0)
        s = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0, "not a keel save file (bad magic)");
    else if (keel__get_u32(h + 8) != SAVE_VERSION)
        s = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0, "save format version %u is not supported",
                          keel__get_u32(h + 8));
    else if ((n = keel__get_u32(h + 12)) > SAVE_INFO_MAX)
        s = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0, "slot details length %u is too large", n);
    else {
        text = keel__xrealloc(NULL, (size_t)n + 1);
        if (fread(text, 1, n, f) != n)
            s = keel_diag_add(d, KEEL_SEV_ERROR, KEEL_PARSE_ERROR, "", path, 0, 0, "truncated slot details");
    }
    fclose(f);
    if (s == KEEL_OK) {
        keel_diags local;
        keel_diags_init(&local);
        s = info_parse(text, n, out, &local);
        for (size_t i = 0; i < local.count; i++)
            if (!local.items[i].file) local.items[i].file = keel__strdup(path);
        keel_diags_append(d, &local, "");
        keel_diags_free(&local);
    }
    free(text);
    return s;
}
