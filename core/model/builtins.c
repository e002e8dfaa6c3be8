/* builtins.c — the built-in kinds (DESIGN.md "Built-in kinds"), declared in C like any other kind. */
#include "base/util.h"
#include "model/builtins.h"

#include <string.h>
#include "model/record.h"

#include <stddef.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Field declaration helpers: a default always, bounds where the design names them. */
#define DEF(t, ...) .has_default = true, .def = { .type = (t), __VA_ARGS__ }
#define F_BOOL(k, d) { .key = (k), .type = KEEL_T_BOOL, DEF(KEEL_T_BOOL, .as.b = (d)) }
#define F_FLOAT(k, d, ...) { .key = (k), .type = KEEL_T_FLOAT, DEF(KEEL_T_FLOAT, .as.f = (d)), __VA_ARGS__ }
#define F_VEC3(k, x, y, z) { .key = (k), .type = KEEL_T_VEC3, DEF(KEEL_T_VEC3, .as.v = { (x), (y), (z), 0 }) }
#define F_QUAT(k) { .key = (k), .type = KEEL_T_QUAT, DEF(KEEL_T_QUAT, .as.v = { 0, 0, 0, 1 }) }
#define F_COLOR(k, r, g, b, a) \
    { .key = (k), .type = KEEL_T_COLOR, DEF(KEEL_T_COLOR, .as.v = { (r), (g), (b), (a) }), .has_min = true, .min = 0 }
#define F_ASSET(k) { .key = (k), .type = KEEL_T_ASSET, DEF(KEEL_T_ASSET, .nil = true) }
#define F_ENUM(k, ch, d) \
    { .key = (k), .type = KEEL_T_ENUM, DEF(KEEL_T_ENUM, .as.i = (d)), .choices = (ch), .choice_count = N(ch) }
#define MIN(m) .has_min = true, .min = (m)
#define MIN_EX(m) .has_min = true, .min = (m), .min_exclusive = true
#define MAX(m) .has_max = true, .max = (m)

/* Whether the field being validated is one of the pair a rule ties together: a write of any
 * other field cannot break it (the pair held before), so it is not looked at. */
static bool concerns(const keel_call *call, int field, const char *a, const char *b)
{
    const keel_kind_desc *kd = keel_kind_describe(call->comp.kind);
    if (!kd || field < 0 || (size_t)field >= kd->field_count) return true;
    const char *k = kd->fields[field].key;
    return strcmp(k, a) == 0 || strcmp(k, b) == 0;
}

/* Reads a float field of the record being validated, by name. */
static double num(const keel_call *call, const char *field)
{
    keel_value v;
    keel__record_get(call->comp.kind, call->record, keel_kind_field(call->comp.kind, field), &v);
    return v.as.f;
}

static const char *const no_lights_but_point[] = { "core:spot_light", "core:directional_light" };
static const char *const no_lights_but_spot[] = { "core:point_light", "core:directional_light" };
static const char *const no_lights_but_directional[] = { "core:point_light", "core:spot_light" };
static const char *const needs_transform[] = { "core:transform" };
static const char *const no_world_settings[] = { "core:world_settings" };
static const char *const no_transform[] = { "core:transform" };

/* ---- core:transform ---- */
static const keel_field_desc transform_fields[] = {
    { .key = "position", .type = KEEL_T_VEC3, DEF(KEEL_T_VEC3, .as.v = { 0, 0, 0, 0 }), .flags = KEEL_FIELD_SYNC },
    { .key = "rotation", .type = KEEL_T_QUAT, DEF(KEEL_T_QUAT, .as.v = { 0, 0, 0, 1 }), .flags = KEEL_FIELD_SYNC },
    { .key = "scale", .type = KEEL_T_VEC3, DEF(KEEL_T_VEC3, .as.v = { 1, 1, 1, 0 }), .flags = KEEL_FIELD_SYNC },
};

/* ---- core:mesh_renderer ---- */
static const keel_field_desc mesh_renderer_fields[] = {
    F_ASSET("mesh"),
    F_ASSET("material"),
    F_BOOL("visible", true),
    F_BOOL("casts_shadow", true),
    F_COLOR("color", 1, 1, 1, 1),
    F_FLOAT("metallic", 0, MIN(0), MAX(1)),
    F_FLOAT("roughness", 0.5, MIN(0), MAX(1)),
};

/* ---- lights ---- */
static const keel_field_desc point_light_fields[] = {
    F_COLOR("color", 1, 1, 1, 1),
    F_FLOAT("intensity", 800, MIN(0)),   /* candela */
    F_FLOAT("range", 10, MIN_EX(0)),     /* metres */
};

static const keel_field_desc spot_light_fields[] = {
    F_COLOR("color", 1, 1, 1, 1),
    F_FLOAT("intensity", 800, MIN(0)),
    F_FLOAT("range", 10, MIN_EX(0)),
    F_FLOAT("inner_angle", 30, MIN(0), MAX(179)), /* degrees */
    F_FLOAT("outer_angle", 45, MIN(0), MAX(179)),
};

static keel_status spot_light_validate(const keel_call *call, int field)
{
    if (concerns(call, field, "inner_angle", "outer_angle") && num(call, "inner_angle") > num(call, "outer_angle"))
        return KEEL_ERROR(call->diags, KEEL_INVALID_ARGUMENT, "inner_angle",
                          "inner_angle must not exceed outer_angle");
    return KEEL_OK;
}

static const keel_field_desc directional_light_fields[] = {
    F_COLOR("color", 1, 1, 1, 1),
    F_FLOAT("intensity", 10, MIN(0)), /* lux */
};

static const keel_field_desc reflection_probe_fields[] = {
    F_FLOAT("radius", 10, MIN_EX(0)),
    F_FLOAT("intensity", 1, MIN(0)),
    F_BOOL("box_projection", false),
};

/* ---- core:camera ---- */
static const char *const projections[] = { "perspective", "orthographic" };
static const keel_field_desc camera_fields[] = {
    F_ENUM("projection", projections, 0),
    F_FLOAT("fov", 60, MIN(1), MAX(179)), /* degrees, vertical */
    F_FLOAT("near", 0.1, MIN_EX(0)),
    F_FLOAT("far", 1000, MIN_EX(0)),
};

static keel_status camera_validate(const keel_call *call, int field)
{
    if (concerns(call, field, "near", "far") && !(num(call, "far") > num(call, "near")))
        return KEEL_ERROR(call->diags, KEEL_INVALID_ARGUMENT, "far", "far must be greater than near");
    return KEEL_OK;
}

/* ---- core:audio_source ---- */
static const char *const buses[] = { "music", "effects", "ambience", "voice" };
static const keel_field_desc audio_source_fields[] = {
    F_ASSET("clip"),
    F_ENUM("bus", buses, 1),
    F_FLOAT("volume", 1, MIN(0), MAX(1)),
    F_FLOAT("pitch", 1, MIN_EX(0)),
    F_BOOL("loop", false),
    F_BOOL("spatial", true),
    F_FLOAT("min_distance", 1, MIN(0)),
    F_FLOAT("max_distance", 500, MIN(0)),
    F_BOOL("play_on_start", true),
};

static keel_status audio_source_validate(const keel_call *call, int field)
{
    if (concerns(call, field, "min_distance", "max_distance") && num(call, "max_distance") < num(call, "min_distance"))
        return KEEL_ERROR(call->diags, KEEL_INVALID_ARGUMENT, "max_distance",
                          "max_distance must not be less than min_distance");
    return KEEL_OK;
}

/* ---- core:world_settings ---- */
static const keel_field_desc world_settings_fields[] = {
    F_COLOR("ambient", 0.2, 0.2, 0.25, 1),
    F_COLOR("sky_color", 0.5, 0.7, 1, 1),
    F_BOOL("fog", false),
    F_FLOAT("fog_density", 0.01, MIN(0)),
    F_FLOAT("exposure", 1, MIN_EX(0)),
};

#define FIELDS(a) .fields = (a), .field_count = N(a)
#define REQUIRES(a) .requires = (a), .requires_count = N(a)
#define REJECTS(a) .rejects = (a), .rejects_count = N(a)

static const keel_kind_desc builtins[] = {
    { .key = "core:transform", .display = "Transform", .category = "Scene", .version = 1,
      .flags = KEEL_KIND_NOT_ON_ROOT, REJECTS(no_world_settings), FIELDS(transform_fields), .builtin = true,
      .sync_interval = 1 },
    { .key = "core:mesh_renderer", .display = "Mesh Renderer", .category = "Rendering", .version = 1,
      REQUIRES(needs_transform), FIELDS(mesh_renderer_fields), .builtin = true },
    { .key = "core:point_light", .display = "Point Light", .category = "Lighting", .version = 1,
      REQUIRES(needs_transform), REJECTS(no_lights_but_point), FIELDS(point_light_fields), .builtin = true },
    { .key = "core:spot_light", .display = "Spot Light", .category = "Lighting", .version = 1,
      REQUIRES(needs_transform), REJECTS(no_lights_but_spot), FIELDS(spot_light_fields),
      .validate = spot_light_validate, .builtin = true },
    { .key = "core:directional_light", .display = "Directional Light", .category = "Lighting", .version = 1,
      REQUIRES(needs_transform), REJECTS(no_lights_but_directional), FIELDS(directional_light_fields),
      .builtin = true },
    { .key = "core:reflection_probe", .display = "Reflection Probe", .category = "Lighting", .version = 1,
      REQUIRES(needs_transform), FIELDS(reflection_probe_fields), .builtin = true },
    { .key = "core:camera", .display = "Camera", .category = "Rendering", .version = 1,
      REQUIRES(needs_transform), FIELDS(camera_fields), .validate = camera_validate, .builtin = true },
    { .key = "core:audio_source", .display = "Audio Source", .category = "Audio", .version = 1,
      .multiplicity = KEEL_MANY, REQUIRES(needs_transform), FIELDS(audio_source_fields),
      .validate = audio_source_validate, .builtin = true },
    { .key = "core:world_settings", .display = "World Settings", .category = "Scene", .version = 1,
      .flags = KEEL_KIND_ROOT_ONLY, REJECTS(no_transform), FIELDS(world_settings_fields), .builtin = true },
};

keel_status keel__builtins_register(keel_diags *d)
{
    keel_status first = KEEL_OK;
    for (size_t i = 0; i < N(builtins); i++) {
        keel_status st = keel_kind_declare(&builtins[i], NULL, d);
        if (st && !first)
            first = st;
    }
    return first;
}
