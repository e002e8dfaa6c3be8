/* embed_example.c — libkeel from C alone: declare a kind, spawn, step, save.
 * Built by the test suite against the installed header and pkg-config:
 *   cc embed_example.c $(pkg-config --cflags --libs keel) -o embed_example */
#include <keel.h>
#include <stdio.h>

static keel_status health_update(const keel_call *call)
{
    /* Fields sit in declared order, 8-byte aligned: `value` is the first double. */
    double *value = call->record;
    *value -= 10.0 * call->dt;
    return KEEL_OK;
}

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "example.yaml";
    keel_diags d;
    keel_diags_init(&d);
    if (keel_init() != KEEL_OK) return 2;

    static const keel_field_desc fields[] = {
        { .key = "value", .type = KEEL_T_FLOAT, .has_default = true,
          .def = { .type = KEEL_T_FLOAT, .as.f = 100 }, .has_min = true, .min = 0 },
    };
    keel_kind_desc health = {
        .key = "example:health", .version = 1, .multiplicity = KEEL_ONE,
        .fields = fields, .field_count = 1,
    };
    health.hooks[KEEL_PHASE_UPDATE] = health_update;
    keel_kind_id kid;
    if (keel_kind_declare(&health, &kid, &d) != KEEL_OK) goto fail;

    keel_world *w = keel_world_new("Example");
    keel_entity e;
    if (keel_spawn(w, "Player", KEEL_NO_ENTITY, NULL, &e, NULL, &d) != KEEL_OK) goto fail;
    keel_add_opts opts = KEEL_ADD_OPTS_INIT;
    keel_comp c;
    if (keel_add(w, e, kid, &opts, &c, NULL, &d) != KEEL_OK) goto fail;
    for (int i = 0; i < 60; i++) keel_step(w, 1.0 / 60, &d);

    keel_value v;
    keel_get(w, c, keel_kind_field(kid, "value"), &v, &d);
    printf("health after one second: %g\n", v.as.f);
    if (keel_scene_save(w, out, &d) != KEEL_OK) goto fail;
    printf("saved %s\n", out);
    keel_world_free(w);
    keel_diags_free(&d);
    keel_shutdown();
    return 0;
fail:
    for (size_t i = 0; i < d.count; i++) {
        char buf[512];
        fprintf(stderr, "%s\n", keel_diag_format(&d.items[i], buf, sizeof buf));
    }
    keel_diags_free(&d);
    return 1;
}
