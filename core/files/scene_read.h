/* scene_read.h — the scene reader's private entry: a document already read as a tree. */
#ifndef KEEL_SCENE_READ_H
#define KEEL_SCENE_READ_H

#include "keel.h"

/* keel_scene_parse's checks and world for a tree read (or built) elsewhere: keel merge loads
 * the merged tree without writing and re-reading it. The tree is only read. */
keel_status keel__scene_build(const keel_node *doc, const keel_load_opts *o, keel_world **out, keel_diags *d);

#endif
