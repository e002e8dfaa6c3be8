/* util.h — small helpers every core file uses: strings, UTF-8, allocation that treats OOM as fatal. */
#ifndef KEEL_UTIL_H
#define KEEL_UTIL_H

#include "keel.h"

#include <stdarg.h>
#include <string.h>

char *keel__strdup(const char *s);
char *keel__strfmt(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
char *keel__vstrfmt(const char *fmt, va_list ap); /* consumes ap */
/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF): what YAML can hold. */
bool keel__utf8_valid(const char *s);
/* A scalar whose text holds a NUL byte (libyaml decodes "\0"): a keel string is a C string. */
static inline bool keel__node_has_nul(const keel_node *n)
{
    return n->kind == KEEL_NODE_SCALAR && n->text && memchr(n->text, '\0', n->len);
}
void *keel__xrealloc(void *p, size_t n); /* aborts on OOM: keel treats OOM as fatal */
void *keel__xcalloc(size_t n, size_t size); /* zeroed; aborts on OOM too */
_Noreturn void keel__oom(void); /* what they do on OOM (and vec.h on a size that cannot be) */
/* `blocks` 64-byte blocks of ChaCha20 keystream from block `counter` (uuid.c: the UUID pool). */
void keel__chacha20(const uint32_t key[8], uint64_t nonce, uint64_t counter, uint8_t *out, size_t blocks);
/* n version-4 UUIDs from the pool at once (keel_uuid_v4 is one). */
void keel__uuid_v4_fill(keel_uuid *out, size_t n);
/* Forks this process has been the child of (since the first UUID): UUIDs drawn ahead before a
 * fork are the parent's too, and are drawn again. */
extern unsigned keel__uuid_forks;

#endif
