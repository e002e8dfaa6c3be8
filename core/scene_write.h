/* scene_write.h — the scene writer's private switch. */
#ifndef KEEL_SCENE_WRITE_H
#define KEEL_SCENE_WRITE_H

#include <stdbool.h>
#include <stddef.h>

/* true: bodies through keel_body_encode instead of straight from records (tests compare both). */
void keel__scene_write_via_encode(bool on);
/* A double's text in scene files: keel_format_double's, found faster (at most 64 bytes). */
int keel__scene_format_double(double v, char *out);
/* Whether `s` can be written as a plain scalar and read back as the same string. */
bool keel__scene_plain_safe(const char *s, size_t len);

#endif
