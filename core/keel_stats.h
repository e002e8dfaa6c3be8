/* keel_stats.h — where a frame goes (core/game/stats.c; design/profiler.md): per phase, per
 * system and per kind's hooks, in milliseconds of the last step, with counts, and the frame
 * times of the last KEEL_STATS_HISTORY steps. An optional part of libkeel's API, beside keel.h. */
#ifndef KEEL_STATS_H
#define KEEL_STATS_H

#include "keel.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ======================================================================
 * Frame statistics
 *
 * Off by default, and off costs nothing but a test per run item. While on, keel_step reads
 * the clock per phase, per system run and per stretch of one kind's hooks (consecutive run
 * items of a kind: a batch), never per entity. A step measured in full is published at its
 * end; keel_world_stats reads the last one. Counts are what the step did: messages taken
 * from the queue (each once, whatever its receivers), timer callbacks called, entities
 * spawned and destroyed (a transaction's rollback is not counted; a spawn it undid is),
 * failures recorded (keel_fault_at: each, repeats included). Hook time is inclusive: an
 * awake a hook's spawn runs is its hook's. Turning it on starts a new history.
 *
 * Example:
 *     static int slept;
 *     static keel_status busy(const keel_system_call *c)
 *     {
 *         (void)c;
 *         for (volatile int i = 0; i < 100000; i++) slept++;
 *         return KEEL_OK;
 *     }
 *     int main(void)
 *     {
 *         keel_diags d;
 *         keel_diags_init(&d);
 *         keel_init();
 *         keel_world *w = keel_world_new("Stats");
 *         keel_system_desc sd = { .name = "busy", .phase = KEEL_PHASE_UPDATE, .run = busy };
 *         keel_status st = keel_system_add(w, &sd, &d);
 *         keel_world_stats_enable(w, true);
 *         for (int i = 0; st == KEEL_OK && i < 3; i++) st = keel_step(w, 1.0 / 60, &d);
 *         keel_stats s;
 *         int bad = st != KEEL_OK || !keel_world_stats(w, &s);
 *         bad |= s.frame != 3 || s.history_count != 3 || s.system_count != 1;
 *         bad |= strcmp(s.systems[0].name, "busy") != 0 || s.systems[0].calls != 1;
 *         bad |= !(s.systems[0].ms > 0 && s.phase_ms[KEEL_PHASE_UPDATE] >= s.systems[0].ms);
 *         bad |= !(s.frame_ms >= s.phase_ms[KEEL_PHASE_UPDATE]);
 *         keel_world_stats_enable(w, false);
 *         bad |= keel_world_stats_enabled(w);
 *         keel_world_free(w);
 *         keel_diags_free(&d);
 *         keel_shutdown();
 *         return bad;
 *     }
 * ====================================================================== */

#define KEEL_STATS_HISTORY 300 /* frames kept */

typedef struct keel_stats_system {
    const char *name;
    double ms;         /* its runs' time this step */
    uint32_t calls;    /* its runs (a fixed_update system may run several times a step) */
    uint64_t entities; /* entities its `each` visited (0 for a `run` system) */
} keel_stats_system;

typedef struct keel_stats_kind {
    keel_kind_id kind;
    keel_phase phase; /* start, fixed_update, update, late_update or on_message */
    double ms;
    uint32_t calls; /* hook calls */
} keel_stats_kind;

typedef struct keel_stats {
    uint64_t frame;                     /* keel_world_frame after the step measured */
    double frame_ms;                    /* the whole keel_step */
    double phase_ms[KEEL_PHASE_COUNT_]; /* start, fixed_update (its runs summed), update, late_update */
    const keel_stats_system *systems;   /* those that ran, costliest first */
    size_t system_count;
    const keel_stats_kind *kinds; /* (kind, phase) pairs whose hooks ran, costliest first */
    size_t kind_count;
    uint32_t messages, timers, spawned, destroyed, faults;
    const double *history;                          /* frame_ms of the last history_count steps, oldest first */
    size_t history_count;                           /* <= KEEL_STATS_HISTORY */
    const double *phase_history[KEEL_PHASE_COUNT_]; /* the same per phase (start..late_update; else NULL) */
} keel_stats;

/* Starts (a new history) or stops collecting. Stopping keeps the last figures readable. Inside a
 * step, starting counts from the next step. NULL: nothing. */
void keel_world_stats_enable(keel_world *w, bool on);
bool keel_world_stats_enabled(const keel_world *w);
/* The last step measured into *out; false (out zeroed) when none was. The pointers stay valid
 * until the next keel_step or keel_world_free. */
bool keel_world_stats(const keel_world *w, keel_stats *out);
/* A binding that runs systems of its own (as keel.system in Lua) reports each run: its time in
 * milliseconds and the entities it visited. Ignored while collecting is off. */
void keel_world_stats_system(keel_world *w, const char *name, double ms, uint64_t entities);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
