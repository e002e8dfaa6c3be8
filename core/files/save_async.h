/* save_async.h — what the synchronous saves ask of the save jobs (save_async.c). */
#ifndef KEEL_SAVE_ASYNC_H
#define KEEL_SAVE_ASYNC_H

#include <stdbool.h>

/* Whether a save job to this file (its folder resolved) is still pending. */
bool keel__job_path_pending(const char *path);

#endif
