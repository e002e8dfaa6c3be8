/* uuid.c — UUIDs: version-4 generation (a ChaCha20 pool the kernel keys), strict canonical text form. */
#include "base/util.h"

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

/* ---- ChaCha20 keystream (the original 64-bit counter, 64-bit nonce layout) ---- */

/* The same function three times: 4 blocks side by side in SSE2 registers (any x86-64), 8 with
 * AVX2, 16 with AVX-512 (whose rotate is one instruction); the widest the CPU has is picked once.
 * A pool refill was ~130 instructions a UUID at 4 lanes. */
#define ROTL(v, n) ((v) << (n) | (v) >> (32 - (n)))
#define QR(a, b, c, d)                                                                                                 \
    (x[a] += x[b], x[d] ^= x[a], x[d] = ROTL(x[d], 16), x[c] += x[d], x[b] ^= x[c], x[b] = ROTL(x[b], 12),           \
     x[a] += x[b], x[d] ^= x[a], x[d] = ROTL(x[d], 8), x[c] += x[d], x[b] ^= x[c], x[b] = ROTL(x[b], 7))

static inline void put_le32(uint8_t *o, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(o, &v, 4);
#else
    o[0] = (uint8_t)v, o[1] = (uint8_t)(v >> 8), o[2] = (uint8_t)(v >> 16), o[3] = (uint8_t)(v >> 24);
#endif
}

#define CHACHA_LANES(NAME, LANES, TARGET)                                                                              \
    typedef uint32_t NAME##_v __attribute__((vector_size(4 * (LANES))));                                               \
    TARGET static void NAME(const uint32_t in[16], uint64_t counter, uint8_t *out, size_t blocks)                     \
    {                                                                                                                  \
        for (size_t b = 0; b < blocks; b += (LANES)) {                                                                 \
            NAME##_v s[16], x[16];                                                                                     \
            for (int i = 0; i < 16; i++) s[i] = (NAME##_v){ 0 } + in[i];                                               \
            for (int l = 0; l < (LANES); l++) {                                                                        \
                uint64_t n = counter + b + (uint64_t)l;                                                                \
                s[12][l] = (uint32_t)n, s[13][l] = (uint32_t)(n >> 32);                                                \
            }                                                                                                          \
            memcpy(x, s, sizeof x);                                                                                    \
            for (int r = 0; r < 10; r++) {                                                                             \
                QR(0, 4, 8, 12), QR(1, 5, 9, 13), QR(2, 6, 10, 14), QR(3, 7, 11, 15);                                 \
                QR(0, 5, 10, 15), QR(1, 6, 11, 12), QR(2, 7, 8, 13), QR(3, 4, 9, 14);                                 \
            }                                                                                                          \
            for (int i = 0; i < 16; i++) x[i] += s[i];                                                                 \
            uint32_t t[16][(LANES)]; /* word i of block l is t[i][l]: written out block by block */                   \
            memcpy(t, x, sizeof t);                                                                                    \
            for (int l = 0; l < (LANES) && b + (size_t)l < blocks; l++)                                                \
                for (int i = 0; i < 16; i++) {                                                                         \
                    uint32_t v = t[i][l];                                                                              \
                    put_le32(out + (b + (size_t)l) * 64 + (size_t)i * 4, v);                                           \
                }                                                                                                      \
            memset(x, 0, sizeof x); /* no keystream left on the stack */                                               \
            memset(t, 0, sizeof t);                                                                                    \
        }                                                                                                              \
    }

CHACHA_LANES(chacha_4, 4, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
CHACHA_LANES(chacha_8, 8, __attribute__((target("avx2"))))
CHACHA_LANES(chacha_16, 16, __attribute__((target("avx512f"))))
#endif

typedef void (*chacha_fn)(const uint32_t in[16], uint64_t counter, uint8_t *out, size_t blocks);

static chacha_fn chacha_pick(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return chacha_16;
    if (__builtin_cpu_supports("avx2")) return chacha_8;
#endif
    return chacha_4;
}

void keel__chacha20(const uint32_t key[8], uint64_t nonce, uint64_t counter, uint8_t *out, size_t blocks)
{
    static _Atomic(chacha_fn) fn; /* races only to store the same pointer */
    chacha_fn f = fn;
    if (!f) fn = f = chacha_pick();
    uint32_t in[16] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
    for (int i = 0; i < 8; i++) in[4 + i] = key[i];
    in[14] = (uint32_t)nonce, in[15] = (uint32_t)(nonce >> 32);
    f(in, counter, out, blocks);
}

/* UUIDs come from a per-thread ChaCha20 pool that getrandom(2) keys: a syscall (and the kernel's
 * own ChaCha20 on every byte) per 256 UUIDs was still most of a spawn's kernel time. Each refill
 * makes 4 KiB and keys the next one from its first 32 bytes (so the state in memory cannot
 * rebuild earlier output); the kernel rekeys it every 1 MiB. A forked child forgets the pool
 * (pthread_atfork) so that two processes never hand out the same bytes. */
#define POOL_BYTES 4096
#define RESEED_BYTES ((size_t)1 << 20)

static _Thread_local struct {
    uint32_t key[8];
    uint64_t counter;
    size_t since_seed;
    bool seeded;
    size_t used;
    uint8_t bytes[POOL_BYTES];
} pool = { .used = POOL_BYTES };

unsigned keel__uuid_forks;

static void pool_forget(void)
{
    /* Worlds draw UUIDs ahead of use (entity.c's ring): this count tells them the drawn ones are
     * the parent's too. Written only here, in a child that has one thread. */
    keel__uuid_forks++;
    memset(&pool, 0, sizeof pool);
    pool.used = POOL_BYTES;
}
static void pool_register(void) { pthread_atfork(NULL, NULL, pool_forget); }

static void pool_refill(void)
{
    if (!pool.seeded || pool.since_seed >= RESEED_BYTES) {
        fill_random((uint8_t *)pool.key, sizeof pool.key);
        pool.counter = 0;
        pool.since_seed = 0;
        pool.seeded = true;
    }
    keel__chacha20(pool.key, 0, pool.counter, pool.bytes, POOL_BYTES / 64);
    pool.counter += POOL_BYTES / 64;
    pool.since_seed += POOL_BYTES;
    memcpy(pool.key, pool.bytes, sizeof pool.key); /* the next key: never handed out */
    memset(pool.bytes, 0, sizeof pool.key);
    pool.used = sizeof pool.key;
}

void keel__uuid_v4_fill(keel_uuid *out, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pool_register);
    for (size_t k = 0; k < n; k++) {
        keel_uuid *u = &out[k];
        if (pool.used + sizeof u->bytes > POOL_BYTES) pool_refill();
        memcpy(u->bytes, pool.bytes + pool.used, sizeof u->bytes);
        /* Used bytes are wiped: a later memory disclosure cannot recover ids already handed out. */
        memset(pool.bytes + pool.used, 0, sizeof u->bytes);
        pool.used += sizeof u->bytes;
        u->bytes[6] = (uint8_t)((u->bytes[6] & 0x0f) | 0x40); /* version 4 */
        u->bytes[8] = (uint8_t)((u->bytes[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    }
}

keel_uuid keel_uuid_v4(void)
{
    keel_uuid u;
    keel__uuid_v4_fill(&u, 1);
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
