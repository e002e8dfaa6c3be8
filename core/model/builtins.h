/* builtins.h — the built-in kinds (core:transform, core:camera, ...). */
#ifndef KEEL_BUILTINS_H
#define KEEL_BUILTINS_H

#include "keel.h"

/* Declares the built-in kinds (called by keel_init). */
keel_status keel__builtins_register(keel_diags *d);

#endif
