/* scene_write.h — the scene writer's private switch. */
#ifndef KEEL_SCENE_WRITE_H
#define KEEL_SCENE_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "keel.h"

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
/* One scalar of `len` bytes in `style`. */
static inline void keel__yaml_out_scalar(keel__yaml_out *wr, const char *text, size_t len,
                                         yaml_scalar_style_t style)
{
    yaml_event_t e;
    if (!yaml_scalar_event_initialize(&e, NULL, NULL, (yaml_char_t *)text, (int)len, 1, 1, style)) {
        wr->failed = true;
        return;
    }
    keel__yaml_out_emit(wr, &e);
}
/* Starts the stream and its one document, with the settings every keel file is written in. */
void keel__yaml_out_open(keel__yaml_out *wr);
/* Ends the document and stream: the text (malloc'd, NUL-ended, its length in *len when len is
 * not NULL), or NULL after an error diagnostic "cannot write <what>: ...". Frees the emitter. */
/* A preserved tree (an unknown component's body): each node in the style it was written in. */
void keel__yaml_out_preserved(keel__yaml_out *wr, const keel_node *n);
char *keel__yaml_out_close(keel__yaml_out *wr, const char *what, size_t *len, keel_diags *d);

/* true: bodies through keel_body_encode instead of straight from records (tests compare both). */
void keel__scene_write_via_encode(bool on);
/* A double's text in scene files: keel_format_double's, found faster (at most 64 bytes). */
int keel__scene_format_double(double v, char *out);
/* Whether `s` can be written as a plain scalar and read back as the same string. */
bool keel__scene_plain_safe(const char *s, size_t len);

#endif
