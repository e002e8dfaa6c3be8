/* fuzz_replay.c — libFuzzer target for the recording reader (design/replay.md): any input is
 * refused cleanly (with a diagnostic, nothing built) or opens a replay that steps and seeks. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "keel.h"
#include "bind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size)
{
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_replay_opts o = { .allow_changed_kinds = true, .verify = true };
    keel_status s = keel__replay_open_bytes(data, size, "fuzz", w, &o, &rp, &d);
    if ((s == KEEL_OK) != (rp != NULL)) abort();
    if (s != KEEL_OK && d.errors == 0) abort(); /* a refusal always says why */
    if (s != KEEL_OK && keel_world_entity_count(w) != 0) abort(); /* nothing half-built */
    if (rp) {
        uint64_t n = keel__replay_frames(rp);
        keel__replay_step(rp, n < 64 ? n : 64, NULL); /* may diverge or refuse: never crash */
        keel__replay_seek(rp, n / 2, NULL);
        keel__replay_seek(rp, 0, NULL);
        keel__replay_close(rp);
        keel__world_freeze(w, false);
    }
    keel_world_free(w);
    keel_diags_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        keel_init();
        ready = true;
    }
    one(data, size);
    /* again with every whole chunk's CRC made right, so mutations reach the decoders behind it */
    if (size > 8) {
        uint8_t *copy = malloc(size);
        memcpy(copy, data, size);
        size_t at = 8;
        while (size - at >= 9) {
            uint32_t len = (uint32_t)copy[at + 1] | (uint32_t)copy[at + 2] << 8 | (uint32_t)copy[at + 3] << 16 |
                           (uint32_t)copy[at + 4] << 24;
            if ((size_t)len + 9 > size - at) break;
            uint32_t c = (uint32_t)crc32(0L, copy + at, (uInt)(5 + len));
            for (int i = 0; i < 4; i++) copy[at + 5 + len + i] = (uint8_t)(c >> (8 * i));
            at += 9 + (size_t)len;
        }
        one(copy, size);
        free(copy);
    }
    return 0;
}
