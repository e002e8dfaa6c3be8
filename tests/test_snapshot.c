/* test_snapshot.c — the renderer snapshot: drawables, lights, camera, ambient; disabled and unknown ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "keel.h"

#include "world_fixture.h"

static void setf(fx *f, keel_comp c, const char *field, keel_value v)
{
    int i = keel_kind_field(c.kind, field);
    assert_true(i >= 0);
    v.type = keel_kind_describe(c.kind)->fields[i].type;
    assert_int_equal(keel_set(f->w, c, i, &v, NULL, &f->d), KEEL_OK);
}

static void snapshot_drawables_follow_visibility_and_enable(void **state)
{
    fx *f = *state;
    keel_entity p = spawn(f, "P", 0), a = spawn(f, "A", p), hidden = spawn(f, "Hidden", 0);
    keel_entity off = spawn(f, "Off", 0), under = spawn(f, "Under", off);
    keel_entity xs[] = { a, hidden, off, under };
    for (int i = 0; i < 4; i++) {
        add(f, xs[i], "core:transform");
        add(f, xs[i], "core:mesh_renderer");
    }
    keel_comp pt = add(f, p, "core:transform");
    setf(f, pt, "position", (keel_value){ .as.v = { 0, 5, 0 } });
    keel_comp mr;
    assert_true(keel_get_comp(f->w, a, K("core:mesh_renderer"), 0, &mr));
    setf(f, mr, "roughness", (keel_value){ .as.f = 0.25 });
    keel_uuid mesh = keel_uuid_v4();
    setf(f, mr, "mesh", (keel_value){ .as.u = mesh });
    assert_true(keel_get_comp(f->w, hidden, K("core:mesh_renderer"), 0, &mr));
    setf(f, mr, "visible", (keel_value){ .as.b = false });
    assert_int_equal(keel_set_enabled(f->w, off, false, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, a, "mod:glow", 1, 0, NULL, &f->d), KEEL_OK);

    keel_snapshot *s = keel_snapshot_extract(f->w);
    assert_int_equal(s->drawable_count, 1);
    keel_snap_drawable *d = &s->drawables[0];
    assert_true(keel_uuid_equal(d->entity, keel_entity_uuid(f->w, a)));
    assert_true(keel_uuid_equal(d->mesh, mesh));
    assert_true(d->roughness == 0.25);
    assert_true(d->casts_shadow);
    assert_true(d->color[0] == 1 && d->color[3] == 1);
    assert_true(d->world[13] == 5); /* inherits the parent's translation */
    assert_int_equal(s->light_count, 0);
    assert_false(s->has_camera);
    keel_snapshot_free(s);
    keel_snapshot_free(NULL);
}

static void snapshot_lights_of_each_type(void **state)
{
    fx *f = *state;
    const char *kinds[] = { "core:point_light", "core:spot_light", "core:directional_light" };
    for (int i = 0; i < 3; i++) {
        keel_entity e = spawn(f, "L", 0);
        keel_comp t = add(f, e, "core:transform");
        setf(f, t, "position", (keel_value){ .as.v = { i, 0, 0 } });
        keel_comp l = add(f, e, kinds[i]);
        setf(f, l, "intensity", (keel_value){ .as.f = 100 + i });
    }
    keel_snapshot *s = keel_snapshot_extract(f->w);
    assert_int_equal(s->light_count, 3);
    assert_int_equal(s->lights[0].type, KEEL_LIGHT_POINT);
    assert_int_equal(s->lights[1].type, KEEL_LIGHT_SPOT);
    assert_int_equal(s->lights[2].type, KEEL_LIGHT_DIRECTIONAL);
    assert_true(s->lights[0].range == 10);
    assert_true(s->lights[1].inner_angle == 30 && s->lights[1].outer_angle == 45);
    assert_true(s->lights[2].intensity == 102);
    assert_true(s->lights[2].world[12] == 2);
    keel_snapshot_free(s);
}

static void snapshot_first_active_camera_and_ambient(void **state)
{
    fx *f = *state;
    keel_entity off = spawn(f, "OffCam", 0), c1 = spawn(f, "Cam1", 0), c2 = spawn(f, "Cam2", 0);
    keel_entity cams[] = { off, c1, c2 };
    for (int i = 0; i < 3; i++) {
        add(f, cams[i], "core:transform");
        keel_comp c = add(f, cams[i], "core:camera");
        setf(f, c, "fov", (keel_value){ .as.f = 50 + i });
    }
    assert_int_equal(keel_set_enabled(f->w, off, false, NULL, &f->d), KEEL_OK);
    keel_comp ws = add(f, keel_world_root(f->w), "core:world_settings");
    setf(f, ws, "ambient", (keel_value){ .as.v = { 0.1, 0.2, 0.3, 1 } });
    keel_snapshot *s = keel_snapshot_extract(f->w);
    assert_true(s->has_camera);
    assert_true(keel_uuid_equal(s->camera_entity, keel_entity_uuid(f->w, c1)));
    assert_true(s->fov == 51);
    assert_true(s->near_plane == 0.1 && s->far_plane == 1000);
    assert_int_equal(s->camera_projection, 0);
    assert_true(s->ambient[0] == 0.1 && s->ambient[2] == 0.3 && s->ambient[3] == 1);
    keel_snapshot_free(s);
}

static void snapshot_of_empty_world(void **state)
{
    fx *f = *state;
    keel_snapshot *s = keel_snapshot_extract(f->w);
    assert_non_null(s);
    assert_int_equal(s->drawable_count, 0);
    assert_int_equal(s->light_count, 0);
    assert_false(s->has_camera);
    assert_true(s->ambient[0] == 0.2 && s->ambient[2] == 0.25); /* world_settings' default */
    keel_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(snapshot_drawables_follow_visibility_and_enable),
        T(snapshot_lights_of_each_type),
        T(snapshot_first_active_camera_and_ambient),
        T(snapshot_of_empty_world),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
