/* random.c — the world's own random generator (w:random, w.seed): xoshiro256** (Blackman and
 * Vigna, the published reference generator), its 256-bit state seeded from a 64-bit seed by
 * splitmix64 as the authors advise. The state is part of the world: play mode's copy, save
 * games, dumps and recordings carry it, so a replay draws the same numbers. Until a seed is set
 * the seed is derived from the scene UUID (a world loaded twice from one scene draws alike). */
#include "model/world.h"

#include <string.h>

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

void keel__random_seed_state(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++) { /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        s[i] = z ^ (z >> 31);
    }
    if (!(s[0] | s[1] | s[2] | s[3])) s[0] = 1; /* the one state xoshiro never leaves */
}

keel_uuid keel__random_uuid(uint64_t s[4])
{
    keel_uuid u;
    uint64_t a = next(s), b = next(s);
    memcpy(u.bytes, &a, 8);
    memcpy(u.bytes + 8, &b, 8);
    u.bytes[6] = (uint8_t)((u.bytes[6] & 0x0f) | 0x40);
    u.bytes[8] = (uint8_t)((u.bytes[8] & 0x3f) | 0x80);
    return u;
}

/* The seed a world has before one is set: FNV-1a over its scene UUID, as a non-negative integer
 * (what a scene file or Lua shows reads back as the same number). */
static int64_t derived_seed(const keel_world *w)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 16; i++) h = (h ^ w->uuid.bytes[i]) * 0x100000001b3ull;
    return (int64_t)(h >> 1);
}

static void ensure_seeded(keel_world *w)
{
    if (w->seeded) return;
    w->seed = derived_seed(w);
    keel__random_seed_state(w->rng, (uint64_t)w->seed);
    w->seeded = true;
}

int64_t keel_world_seed(const keel_world *w)
{
    if (!w) return 0;
    return w->seeded ? w->seed : derived_seed(w);
}

void keel_world_set_seed(keel_world *w, int64_t seed)
{
    if (!w) return;
    w->seed = seed;
    keel__random_seed_state(w->rng, (uint64_t)seed);
    w->seeded = true;
}

uint64_t keel_random_u64(keel_world *w)
{
    ensure_seeded(w);
    return next(w->rng);
}

double keel_random_unit(keel_world *w)
{
    return (double)(keel_random_u64(w) >> 11) * 0x1.0p-53;
}

keel_status keel_random_int(keel_world *w, int64_t lo, int64_t hi, int64_t *out, keel_diags *d)
{
    if (!w || !out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_random_int: NULL argument");
    if (lo > hi) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "interval is empty (%lld > %lld)", (long long)lo, (long long)hi);
    uint64_t span = (uint64_t)hi - (uint64_t)lo; /* the count minus one: the whole range fits */
    uint64_t r = keel_random_u64(w);
    if (span != UINT64_MAX) {
        /* rejection: every value equally likely */
        uint64_t lim = span + 1, cut = UINT64_MAX - UINT64_MAX % lim;
        while (r >= cut) r = keel_random_u64(w);
        r %= lim;
    }
    *out = (int64_t)((uint64_t)lo + r);
    return KEEL_OK;
}

bool keel_random_state(const keel_world *w, int64_t *seed, uint64_t state[4])
{
    int64_t s = w->seeded ? w->seed : derived_seed(w);
    if (seed) *seed = s;
    if (state) {
        if (w->seeded) memcpy(state, w->rng, sizeof w->rng);
        else keel__random_seed_state(state, (uint64_t)s);
    }
    return w->seeded;
}

keel_status keel_random_set_state(keel_world *w, int64_t seed, const uint64_t state[4], keel_diags *d)
{
    if (!w || !state) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_random_set_state: NULL argument");
    if (!(state[0] | state[1] | state[2] | state[3]))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a random state of all zeros never moves");
    w->seed = seed;
    memcpy(w->rng, state, sizeof w->rng);
    w->seeded = true;
    return KEEL_OK;
}
