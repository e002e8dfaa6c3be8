/* fuzz_slot.c — libFuzzer target for keel_persist_load and keel_persist_info (save slot files):
 * any input is refused cleanly, leaving the world as it was, or applied whole.
 * An input is a slot file (its CRC made right); one starting with '!' is a raw state that the
 * target frames as a slot, so mutations reach the state decoder behind zlib and the CRC. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "keel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The baseline every seed was saved against (tests/fuzz/make_slot_seeds.c writes them). */
static const char scene[] =
    "keel: 1\n"
    "scene:\n  uuid: 5a5e0000-0000-4000-8000-00000000f001\n  name: Fuzz\n"
    "entities:\n"
    "  - uuid: 00000000-0000-4000-8000-00000000f001\n    name: Player\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        body:\n          position: [0, 1.5, 0]\n"
    "      - kind: core:point_light\n        version: 1\n        body:\n          range: 4\n"
    "  - uuid: 00000000-0000-4000-8000-00000000f002\n    name: Crate\n"
    "    parent: 00000000-0000-4000-8000-00000000f001\n    components:\n"
    "      - kind: core:transform\n        version: 1\n        body: {}\n"
    "  - uuid: 00000000-0000-4000-8000-00000000f003\n    name: Doomed\n    components: []\n";

static char path[128];

static void remove_file(void) { unlink(path); }

static char *dump(const keel_world *w)
{
    char *text = NULL;
    size_t len = 0;
    if (keel_scene_dump(w, &text, &len, NULL) != KEEL_OK) abort();
    return text;
}

static void put_file(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
}

static void load(const uint8_t *data, size_t size)
{
    put_file(data, size);
    keel_diags d;
    keel_diags_init(&d);
    keel_slot_info info;
    keel_status s = keel_persist_info(path, &info, &d);
    if (s != KEEL_OK && d.errors == 0) abort(); /* a refusal always says why */
    keel_slot_info_free(&info);
    keel_diags_free(&d);

    keel_world *w = NULL;
    if (keel_scene_parse(scene, sizeof scene - 1, NULL, &w, NULL) != KEEL_OK) abort();
    char *before = dump(w);
    keel_diags_init(&d);
    s = keel_persist_load(w, path, &d);
    char *after = dump(w);
    if (s != KEEL_OK) {
        if (d.errors == 0) abort();
        if (strcmp(before, after) != 0) abort(); /* never half-applied */
    }
    free(before);
    free(after);
    keel_diags_free(&d);
    keel_world_free(w);
}

static void put_u32(uint8_t *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (uint8_t)(v >> (8 * i));
}

/* A slot file around a raw state: header, details, the state compressed, the CRC. */
static void load_state(const uint8_t *state, size_t n)
{
    static const char details[] = "title: fuzz\nsaved_at: 1\nplay_seconds: 0\n";
    size_t dl = sizeof details - 1;
    uLongf clen = compressBound((uLong)n);
    uint8_t *file = malloc(16 + dl + 8 + clen + 4);
    memcpy(file, "KEELSAVE", 8);
    put_u32(file + 8, 1);
    put_u32(file + 12, (uint32_t)dl);
    memcpy(file + 16, details, dl);
    size_t at = 16 + dl;
    if (compress2(file + at + 8, &clen, state, (uLong)n, 1) != Z_OK) abort();
    put_u32(file + at, (uint32_t)n);
    put_u32(file + at + 4, (uint32_t)clen);
    size_t len = at + 8 + clen;
    put_u32(file + len, (uint32_t)crc32(0L, file, (uInt)len));
    load(file, len + 4);
    free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        keel_init();
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/keel_fuzz_slot_%ld.sav", dir, (long)getpid());
        atexit(remove_file);
        ready = true;
    }
    if (size > (1u << 20)) return 0;
    if (size >= 1 && data[0] == '!') {
        load_state(data + 1, size - 1);
        return 0;
    }
    load(data, size);
    /* again with the CRC made right, so mutations reach the checks behind it */
    if (size >= 32) {
        uint8_t *copy = malloc(size);
        memcpy(copy, data, size);
        put_u32(copy + size - 4, (uint32_t)crc32(0L, copy, (uInt)(size - 4)));
        load(copy, size);
        free(copy);
    }
    return 0;
}
