/* limits.c — the default load limits and load options (DESIGN.md "Limits"). */
#include "keel.h"

keel_limits keel_limits_default(void)
{
    keel_limits l;
    l.document_size = 64u << 20;
    l.entities = 1000000;
    l.components_per_entity = 256;
    l.body_size = 64u << 10;
    l.string_length = 64u << 10;
    l.nesting_depth = 32;
    l.hierarchy_depth = 256;
    l.collection_length = 65536;
    return l;
}

/* keel_load_progress_default's: the one mutable default of a load */
static keel_load_progress_fn default_progress;
static void *default_progress_ctx;

void keel_load_progress_default(keel_load_progress_fn fn, void *ctx)
{
    default_progress = fn;
    default_progress_ctx = ctx;
}

keel_load_opts keel_load_opts_default(void)
{
    keel_load_opts o;
    o.limits = keel_limits_default();
    o.strict = false;
    o.assets = NULL;
    o.file = NULL;
    o.no_awake = false;
    o.progress = default_progress;
    o.progress_ctx = default_progress_ctx;
    return o;
}
