/* txn.c — the transaction journal: what a command or field write inside an open callback
 * transaction logs, and the rollback that undoes it. */
#include "model/world.h"
#include "model/command.h"
#include "model/field.h"
#include "model/txn.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

/* Only the outermost command inside an open hook transaction logs its inverse. */
bool keel__txn_wants(const keel_world *w)
{
    return w->txn_depth > 0 && w->cmd_depth == 0 && !w->rolling_back;
}

/* `tmp` is only initialised when it is used: commands outside hooks pay nothing for it. */
keel_cmd *keel__cmd_begin_slow(keel_world *w, keel_cmd *inverse, keel_cmd *tmp)
{
    bool wants = keel__txn_wants(w) || keel__input_wanted(w);
    w->cmd_depth++;
    if (inverse) {
        memset(inverse, 0, sizeof *inverse);
        return inverse;
    }
    if (!wants) return NULL;
    memset(tmp, 0, sizeof *tmp);
    return tmp;
}

static keel__jentry *log_push(keel_world *w)
{
    KEEL__VEC_RESERVE(w->log, w->log_count, w->log_cap, 1, 16);
    return &w->log[w->log_count++];
}

keel_status keel__cmd_end_slow(keel_world *w, keel_status st, keel_cmd *inv, keel_cmd *tmp)
{
    w->cmd_depth--;
    if (st != KEEL_OK) {
        if (inv) keel_cmd_free(inv);
        return st;
    }
    if (inv && inv->type != KEEL_CMD_NONE && keel__input_wanted(w)) w->input(w, w->input_state, inv, true);
    if (inv && inv->type != KEEL_CMD_NONE && keel__txn_wants(w)) {
        keel__jentry *j = log_push(w);
        j->type = KEEL__J_CMD;
        if (inv == tmp) {
            j->cmd = *tmp; /* moved: tmp is not freed */
            return st;
        }
        keel__cmd_copy(&j->cmd, inv);
    }
    if (inv == tmp) keel_cmd_free(tmp);
    return st;
}

void keel__txn_log_field(keel_world *w, keel_uuid entity, keel_kind_id k, uint32_t slot, int field,
                         const keel_value *old)
{
    keel__jentry *j = log_push(w);
    j->type = KEEL__J_FIELD;
    j->set.entity = entity;
    j->set.kind = k;
    j->set.slot = slot;
    j->set.field = field;
    j->set.old = *old;
}

void keel__txn_log_doomed(keel_world *w, keel_comp c, uint32_t row, keel_uuid entity)
{
    keel__jentry *j = log_push(w);
    j->type = KEEL__J_DOOMED;
    j->doomed = (keel__doomed){ c, row, entity };
}

static void entry_free(keel__jentry *j)
{
    if (j->type == KEEL__J_CMD) keel_cmd_free(&j->cmd);
    else if (j->type == KEEL__J_FIELD && j->set.old.type == KEEL_T_STRING) free((char *)j->set.old.as.s);
}

void keel__txn_rollback(keel_world *w, size_t mark)
{
    bool was = w->rolling_back;
    w->rolling_back = true;
    while (w->log_count > mark) {
        keel__jentry *j = &w->log[--w->log_count];
        if (j->type == KEEL__J_FIELD) {
            keel_uuid u = j->set.entity; /* nil: the scene root */
            keel_entity e = keel_uuid_is_nil(u) ? keel_world_root(w) : keel_find(w, u);
            keel_comp c = { e, j->set.kind, j->set.slot };
            keel__field_set(w, c, j->set.field, &j->set.old, true, NULL, NULL);
        } else if (j->type == KEEL__J_CMD) {
            keel__cmd_apply(w, &j->cmd, NULL, true, NULL);
        }
        entry_free(j);
    }
    w->rolling_back = was;
}

void keel__txn_commit(keel_world *w, size_t mark)
{
    for (size_t i = mark; i < w->log_count; i++) {
        if (w->log[i].type != KEEL__J_DOOMED) continue;
        KEEL__VEC_RESERVE(w->doomed, w->doomed_count, w->doomed_cap, 1, 16);
        w->doomed[w->doomed_count++] = w->log[i].doomed;
    }
    while (w->log_count > mark) entry_free(&w->log[--w->log_count]);
}

void keel__txn_free(keel_world *w)
{
    while (w->log_count) entry_free(&w->log[--w->log_count]);
    free(w->log);
    w->log = NULL;
    w->log_cap = 0;
    free(w->doomed);
    w->doomed = NULL;
    w->doomed_count = w->doomed_cap = 0;
}
