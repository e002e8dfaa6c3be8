/* scene_write.h — the scene writer's private switch. */
#ifndef KEEL_SCENE_WRITE_H
#define KEEL_SCENE_WRITE_H

#include <stdbool.h>

/* true: bodies through keel_body_encode instead of straight from records (tests compare both). */
void keel__scene_write_via_encode(bool on);

#endif
