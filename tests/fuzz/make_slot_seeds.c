/* make_slot_seeds.c — writes the seed corpus of fuzz_slot: slot files saved against fuzz_slot.c's
 * scene (NAME.sav) and their raw states behind '!' (NAME.state). Not built by CMake; from the
 * repository root, after `make test`:
 *     clang -std=c11 -D_GNU_SOURCE -fsanitize=address,undefined -Icore -Itests/fuzz \
 *         tests/fuzz/make_slot_seeds.c build-test/libkeel.a $(pkg-config --cflags --libs yaml-0.1 zlib) -lm \
 *         -o /tmp/make_slot_seeds && (cd tests/fuzz/corpus_fuzz_slot && /tmp/make_slot_seeds)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keel.h"
#include "files/slotfile.h"
/* The scene of fuzz_slot.c, which includes it from there. */
#define LLVMFuzzerTestOneInput unused_fuzzer_entry
#include "fuzz_slot.c"

static void out(const char *name, const char *slot)
{
    FILE *f = fopen(slot, "rb"); char buf[1 << 16]; size_t n = fread(buf, 1, sizeof buf, f); fclose(f);
    char p[256]; snprintf(p, sizeof p, "%s.sav", name); f = fopen(p, "wb"); fwrite(buf, 1, n, f); fclose(f);
    uint8_t *raw; size_t len;
    if (keel__slot_read(slot, &raw, &len, NULL)) abort();
    snprintf(p, sizeof p, "%s.state", name); f = fopen(p, "wb"); fputc('!', f); fwrite(raw, 1, len, f); fclose(f);
    free(raw);
}
static keel_world *fresh(void) { keel_world *w = NULL; if (keel_scene_parse(scene, sizeof scene - 1, NULL, &w, NULL)) abort(); return w; }
int main(void)
{
    keel_init();
    const char *slot = "seed.tmp.sav";
    keel_kind_id t = keel_kind_find("core:transform"), l = keel_kind_find("core:point_light");
    /* unchanged */
    keel_world *w = fresh(); keel_baseline *b = keel_baseline_capture(w);
    keel_slot_info info = { .title = "unchanged", .saved_at = 1700000000 };
    if (keel_persist_save(w, b, slot, &info, NULL)) abort(); out("unchanged", slot);
    /* fields */
    keel_entity p = keel_find_name(w, "Player");
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { 1, 2, 3 } };
    if (keel_set(w, (keel_comp){ p, t, 0 }, keel_kind_field(t, "position"), &v, NULL, NULL)) abort();
    keel_value r = { .type = KEEL_T_FLOAT, .as.f = 9.5 };
    if (keel_set(w, (keel_comp){ p, l, 0 }, keel_kind_field(l, "range"), &r, NULL, NULL)) abort();
    info.title = "fields"; info.play_seconds = 12.5;
    if (keel_persist_save(w, b, slot, &info, NULL)) abort(); out("fields", slot);
    /* structure: spawn, destroy, reparent, rename, disable, remove, unknown */
    keel_entity e;
    if (keel_spawn(w, "Spawned", p, NULL, &e, NULL, NULL)) abort();
    if (keel_add(w, e, t, NULL, NULL, NULL, NULL)) abort();
    if (keel_destroy(w, keel_find_name(w, "Doomed"), NULL, NULL)) abort();
    keel_entity c = keel_find_name(w, "Crate");
    if (keel_reparent(w, c, KEEL_NO_ENTITY, NULL, NULL)) abort();
    if (keel_rename(w, c, "Box", NULL, NULL)) abort();
    if (keel_set_enabled(w, c, false, NULL, NULL)) abort();
    if (keel_remove(w, p, "core:point_light", 0, NULL, NULL)) abort();
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "speed", keel_node_new_scalar("3.5", KEEL_STYLE_PLAIN));
    keel_node *list = keel_node_new_seq(); keel_node_push(list, keel_node_new_scalar("a", KEEL_STYLE_DOUBLE));
    keel_node_put(body, "tags", list);
    if (keel_add_unknown(w, e, "mod:engine", 2, KEEL_SLOT_AUTO, body, NULL)) abort();
    keel_node_free(body);
    keel_node *fields = keel_node_new_map();
    keel_node_put(fields, "level", keel_node_new_scalar("3", KEEL_STYLE_PLAIN));
    keel_node_put(fields, "zone", keel_node_new_scalar("north \"gate\"", KEEL_STYLE_DOUBLE));
    info.title = "structure"; info.fields = fields;
    if (keel_persist_save(w, b, slot, &info, NULL)) abort(); out("structure", slot);
    keel_node_free(fields);
    remove(slot);
    keel_baseline_free(b); keel_world_free(w);
    keel_shutdown();
    return 0;
}
