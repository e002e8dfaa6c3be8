/* scene_write.h — the scene writer's private switch. */
#ifndef KEEL_SCENE_WRITE_H
#define KEEL_SCENE_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

/* A libyaml emitter writing into one growing buffer (the scene writer's, and keel merge's). */
typedef struct keel__yaml_out {
    yaml_emitter_t em;
    char *buf;
    size_t len, cap;
    bool failed;
} keel__yaml_out;
int keel__yaml_out_handler(void *data, unsigned char *bytes, size_t size); /* yaml_emitter_set_output's */
/* Emits e unless an earlier event failed (the emitter frees the event either way). Inline: the
 * writer's hot path. */
static inline void keel__yaml_out_emit(keel__yaml_out *wr, yaml_event_t *e)
{
    if (wr->failed) {
        yaml_event_delete(e);
        return;
    }
    if (!yaml_emitter_emit(&wr->em, e)) wr->failed = true;
}

/* true: bodies through keel_body_encode instead of straight from records (tests compare both). */
void keel__scene_write_via_encode(bool on);
/* A double's text in scene files: keel_format_double's, found faster (at most 64 bytes). */
int keel__scene_format_double(double v, char *out);
/* Whether `s` can be written as a plain scalar and read back as the same string. */
bool keel__scene_plain_safe(const char *s, size_t len);

#endif
