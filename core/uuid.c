/* uuid.c — UUIDs: version-4 generation from the kernel, strict canonical text form. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static void fill_random(uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n)
        return;
    /* Old kernels without getrandom(2): fall back to the device. */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
    if (got < n) {
        fputs("keel: no source of randomness for UUIDs\n", stderr);
        abort();
    }
}

/* One getrandom(2) call per 256 UUIDs: a syscall per UUID was most of the cost
 * of a spawn. The pool is per thread; a forked child empties it (pthread_atfork)
 * so that two processes never hand out the same bytes. */
static _Thread_local struct {
    uint8_t bytes[4096];
    size_t used;
} pool = { .used = sizeof pool.bytes };

static void pool_forget(void) { pool.used = sizeof pool.bytes; }
static void pool_register(void) { pthread_atfork(NULL, NULL, pool_forget); }

keel_uuid keel_uuid_v4(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pool_register);
    keel_uuid u;
    if (pool.used + sizeof u.bytes > sizeof pool.bytes) {
        fill_random(pool.bytes, sizeof pool.bytes);
        pool.used = 0;
    }
    memcpy(u.bytes, pool.bytes + pool.used, sizeof u.bytes);
    /* Used bytes are wiped: a later memory disclosure cannot predict past or future ids from them. */
    memset(pool.bytes + pool.used, 0, sizeof u.bytes);
    pool.used += sizeof u.bytes;
    u.bytes[6] = (uint8_t)((u.bytes[6] & 0x0f) | 0x40); /* version 4 */
    u.bytes[8] = (uint8_t)((u.bytes[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    return u;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* uppercase is not canonical */
}

bool keel_uuid_parse(const char *s, keel_uuid *out)
{
    if (!s)
        return false;
    keel_uuid u;
    int b = 0;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return false;
            continue;
        }
        int hi = hexval(c);
        if (hi < 0)
            return false;
        int lo = hexval(s[++i]);
        if (lo < 0 || i == 8 || i == 13 || i == 18 || i == 23)
            return false;
        u.bytes[b++] = (uint8_t)(hi << 4 | lo);
    }
    if (s[36] != '\0')
        return false;
    if (out)
        *out = u;
    return true;
}

void keel_uuid_format(keel_uuid u, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    int o = 0;
    for (int b = 0; b < 16; b++) {
        if (b == 4 || b == 6 || b == 8 || b == 10)
            out[o++] = '-';
        out[o++] = hex[u.bytes[b] >> 4];
        out[o++] = hex[u.bytes[b] & 15];
    }
    out[o] = '\0';
}

bool keel_uuid_is_nil(keel_uuid u)
{
    for (int i = 0; i < 16; i++)
        if (u.bytes[i])
            return false;
    return true;
}

bool keel_uuid_equal(keel_uuid a, keel_uuid b)
{
    return memcmp(a.bytes, b.bytes, 16) == 0;
}
