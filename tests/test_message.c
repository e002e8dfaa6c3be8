/* test_message.c — keel_send / keel_broadcast: delivery order and time, same-pass delivery and
 * its cap, what is dropped or skipped, handler transactions, refusals. */
#include "keel_test.h"
#include "world_fixture.h"

#include <stdio.h>

static char g_log[1024];
static long g_delivered;
static long g_resend; /* messages a "chain" handler still sends */

static void note(const char *s)
{
    strncat(g_log, s, sizeof g_log - strlen(g_log) - 1);
}

/* Notes "<entity>:<name>[<data>]" (data a NUL-terminated text, if any). */
static keel_status on_message(const keel_call *c)
{
    const keel_message *m = keel_call_message(c);
    assert_non_null(m);
    g_delivered++;
    if (strcmp(m->name, "chain") == 0) {
        if (g_resend-- > 0) return keel_send(c->world, c->comp.entity, "chain", NULL, 0, c->comp.entity, c->diags);
        return KEEL_OK;
    }
    char text[128];
    snprintf(text, sizeof text, "%s:%s%s%s%s ", keel_entity_name(c->world, c->comp.entity), m->name,
             m->size ? "[" : "", m->size ? (const char *)m->data : "", m->size ? "]" : "");
    note(text);
    if (m->sender) {
        snprintf(text, sizeof text, "<%s ", keel_entity_name(c->world, m->sender));
        note(text);
    }
    if (strcmp(m->name, "echo") == 0) /* sent while delivering: the same pass */
        return keel_broadcast(c->world, "echoed", NULL, 0, c->comp.entity, c->diags);
    if (strcmp(m->name, "fail") == 0) {
        keel_entity e = 0;
        keel_spawn(c->world, "Spawned", 0, NULL, &e, NULL, c->diags);
        keel_value v = { .type = KEEL_T_INT, .as.i = 42 };
        keel_set(c->world, c->comp, 0, &v, NULL, c->diags);
        return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "handler refused");
    }
    return KEEL_OK;
}

static keel_status on_update(const keel_call *c)
{
    note("U ");
    if (strcmp(keel_entity_name(c->world, c->comp.entity), "A") == 0)
        return keel_send(c->world, c->comp.entity, "from_update", NULL, 0, c->comp.entity, c->diags);
    return KEEL_OK;
}

static keel_status sys_run(const keel_system_call *c)
{
    (void)c;
    note("S ");
    return KEEL_OK;
}

static int msg_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    static const keel_field_desc f[] = { { .key = "n", .type = KEEL_T_INT } };
    keel_kind_desc kd = {
        .key = "test:inbox", .version = 1, .multiplicity = KEEL_MANY, .fields = f, .field_count = 1
    };
    kd.hooks[KEEL_PHASE_ON_MESSAGE] = on_message;
    if (keel_kind_declare(&kd, NULL, NULL)) return -1;
    keel_kind_desc up = { .key = "test:sender", .version = 1 };
    up.hooks[KEEL_PHASE_UPDATE] = on_update;
    return keel_kind_declare(&up, NULL, NULL) ? -1 : 0;
}

static int msg_setup(void **state)
{
    g_log[0] = 0;
    g_delivered = 0;
    g_resend = 0;
    return fx_setup(state);
}

static void step(fx *f)
{
    assert_int_equal(keel_step(f->w, 1.0 / 60, &f->d), KEEL_OK);
}

static void message_outside_a_step_waits_for_the_next_step_in_send_order(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    add(f, a, "test:inbox");
    add(f, b, "test:inbox");
    add(f, a, "test:inbox"); /* a many kind: both slots receive */
    char buf[8] = "x";
    assert_int_equal(keel_send(f->w, b, "one", buf, 2, 0, &f->d), KEEL_OK);
    strcpy(buf, "y"); /* copied at send */
    assert_int_equal(keel_broadcast(f->w, "two", buf, 2, a, &f->d), KEEL_OK);
    assert_int_equal(keel_message_count(f->w), 2);
    assert_string_equal(g_log, "");
    step(f);
    assert_string_equal(g_log, "B:one[x] A:two[y] <A A:two[y] <A B:two[y] <A ");
    assert_int_equal(keel_message_count(f->w), 0);
}

static void message_sent_in_a_phase_is_delivered_at_its_end_after_systems(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:inbox");
    add(f, a, "test:sender");
    keel_system_desc sd = { .name = "s", .phase = KEEL_PHASE_UPDATE, .run = sys_run };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    step(f);
    assert_string_equal(g_log, "U S A:from_update <A ");
}

static void message_sent_while_delivering_is_delivered_in_the_same_pass(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    add(f, a, "test:inbox");
    add(f, b, "test:inbox");
    assert_int_equal(keel_send(f->w, a, "echo", NULL, 0, 0, &f->d), KEEL_OK);
    assert_int_equal(keel_send(f->w, b, "after", NULL, 0, 0, &f->d), KEEL_OK);
    step(f);
    assert_string_equal(g_log, "A:echo B:after A:echoed <A B:echoed <A ");
}

static void message_pass_is_capped_with_one_limit_exceeded(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:inbox");
    g_resend = 200000;
    assert_int_equal(keel_send(f->w, a, "chain", NULL, 0, 0, &f->d), KEEL_OK);
    step(f);
    assert_int_equal(g_delivered, KEEL_MESSAGE_MAX_PASS);
    assert_int_equal(keel_fault_count(f->w), 1);
    const keel_fault *fl = keel_fault_at(f->w, 0);
    assert_non_null(strstr(fl->message, "LimitExceeded"));
    assert_string_equal(fl->kind, "message");
    assert_int_equal(keel_message_count(f->w), 0); /* the rest was dropped */
    g_delivered = 0;
    step(f);
    assert_int_equal(g_delivered, 0);
}

static void message_to_a_destroyed_entity_is_dropped_and_skips_disabled_and_faulted(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0), c = spawn(f, "C", 0);
    add(f, a, "test:inbox");
    keel_comp cb = add(f, b, "test:inbox");
    add(f, c, "test:inbox");
    assert_int_equal(keel_send(f->w, a, "gone", NULL, 0, 0, &f->d), KEEL_OK);
    assert_int_equal(keel_destroy(f->w, a, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(f->w, cb, false, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_broadcast(f->w, "all", NULL, 0, 0, &f->d), KEEL_OK);
    step(f);
    assert_string_equal(g_log, "C:all ");
    assert_int_equal(keel_fault_count(f->w), 0);
    /* a target that is not alive now is refused at send */
    keel_status st = keel_send(f->w, a, "late", NULL, 0, 0, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "live entity");
}

static void message_handler_failure_rolls_back_and_faults(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    keel_comp ca = add(f, a, "test:inbox");
    assert_int_equal(keel_send(f->w, a, "fail", NULL, 0, 0, &f->d), KEEL_OK);
    assert_int_equal(keel_send(f->w, a, "more", NULL, 0, 0, &f->d), KEEL_OK);
    step(f);
    assert_string_equal(g_log, "A:fail "); /* faulted: "more" is not received */
    keel_value v = { 0 };
    assert_int_equal(keel_get(f->w, ca, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 0);                        /* the write rolled back */
    assert_int_equal(keel_world_entity_count(f->w), 1); /* and the spawn */
    assert_int_equal(keel_fault_count(f->w), 1);
    const keel_fault *fl = keel_fault_at(f->w, 0);
    assert_string_equal(fl->kind, "test:inbox");
    assert_int_equal(fl->phase, KEEL_PHASE_ON_MESSAGE);
    assert_string_equal(fl->message, "handler refused");
}

static void message_refuses_bad_arguments(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    keel_status st = keel_broadcast(f->w, NULL, NULL, 0, 0, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "a name");
    st = keel_broadcast(f->w, "", NULL, 0, 0, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "empty");
    st = keel_send(f->w, a, "x", NULL, 4, 0, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "NULL");
    static char big[KEEL_MESSAGE_MAX_SIZE + 1];
    st = keel_send(f->w, a, "x", big, sizeof big, 0, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "larger than");
    st = keel_send(NULL, a, "x", NULL, 0, 0, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "a world");
    assert_int_equal(keel_message_count(f->w), 0);
    /* queued ones are freed with the world (ASan: no leak) */
    assert_int_equal(keel_send(f->w, a, "x", "abc", 4, 0, &f->d), KEEL_OK);
}

#define TM(name) cmocka_unit_test_setup_teardown(name, msg_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TM(message_outside_a_step_waits_for_the_next_step_in_send_order),
        TM(message_sent_in_a_phase_is_delivered_at_its_end_after_systems),
        TM(message_sent_while_delivering_is_delivered_in_the_same_pass),
        TM(message_pass_is_capped_with_one_limit_exceeded),
        TM(message_to_a_destroyed_entity_is_dropped_and_skips_disabled_and_faulted),
        TM(message_handler_failure_rolls_back_and_faults),
        TM(message_refuses_bad_arguments),
    };
    return KEEL_TEST_RUN(tests, msg_group_setup, group_teardown);
}
