/* fuzz_cook.c — libFuzzer target for keel_cook_read: any input is refused cleanly or builds a whole world. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "keel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size)
{
    keel_load_opts o = keel_load_opts_default();
    o.limits.entities = 10000; /* keep single inputs cheap */
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_cook_read(data, size, &o, &w, &d);
    if ((s == KEEL_OK) != (w != NULL)) abort(); /* never a partial world */
    if (s != KEEL_OK && d.errors == 0) abort(); /* a refusal always says why */
    if (w) {
        /* a world that was built can be cooked again and dumped */
        void *again = NULL;
        size_t len = 0;
        keel_cook(w, NULL, &again, &len, NULL);
        free(again);
        char *text = NULL;
        size_t tlen = 0;
        keel_scene_dump(w, &text, &tlen, NULL);
        free(text);
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
    /* again with the CRC made right, so mutations reach the structural checks behind it */
    if (size >= 28) {
        uint8_t *copy = malloc(size);
        memcpy(copy, data, size);
        uint32_t c = (uint32_t)crc32(0L, copy, (uInt)(size - 4));
        for (int i = 0; i < 4; i++) copy[size - 4 + i] = (uint8_t)(c >> (8 * i));
        one(copy, size);
        free(copy);
    }
    return 0;
}
