/* fuzz_scene.c — libFuzzer target: any bytes through keel_scene_parse with small limits; no crash, no leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        keel_init();
        ready = 1;
    }
    keel_load_opts o = keel_load_opts_default();
    o.limits.document_size = 1 << 20;
    o.limits.entities = 64;
    o.limits.components_per_entity = 16;
    o.limits.body_size = 4096;
    o.limits.string_length = 1024;
    o.limits.nesting_depth = 16;
    o.limits.hierarchy_depth = 16;
    o.limits.collection_length = 256;
    o.file = "fuzz.yaml";
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    if (keel_scene_parse((const char *)data, size, &o, &w, &d) == KEEL_OK) {
        /* A world that loaded must dump, and its dump must load again. */
        char *text = NULL;
        size_t len = 0;
        if (keel_scene_dump(w, &text, &len, NULL) == KEEL_OK) {
            keel_world *w2 = NULL;
            keel_load_opts o2 = keel_load_opts_default();
            if (keel_scene_parse(text, len, &o2, &w2, NULL) != KEEL_OK) abort();
            char *again = NULL;
            size_t len2 = 0;
            if (keel_scene_dump(w2, &again, &len2, NULL) != KEEL_OK) abort();
            /* Byte identity of the second dump: on request, since quaternion
             * renormalization can still move the last bit (see the report). */
            if (getenv("KEEL_FUZZ_CANONICAL") && (len2 != len || memcmp(again, text, len) != 0)) abort();
            free(again);
            keel_world_free(w2);
            free(text);
        }
        keel_world_free(w);
    }
    keel_diags_free(&d);
    return 0;
}
