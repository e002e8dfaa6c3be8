/* test_lifecycle.c — every creation path runs awake once and every exit reaches on_destroy once
 * (worlds.md "Lifecycles balance"): a probe kind counts its hooks while each path is walked, and
 * every world ends with keel_world_close, after which the counts must balance. */
#include "keel_test.h"

#include "keel.h"
#include "keel_net.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static keel_kind_id g_probe;
static int g_awake, g_destroy, g_transfer;
static int g_fail_destroy; /* on_destroy of n == this value fails */

static keel_status probe_awake(const keel_call *c)
{
    (void)c;
    g_awake++;
    return KEEL_OK;
}

static keel_status probe_destroy(const keel_call *c)
{
    g_destroy++;
    keel_value v;
    if (g_fail_destroy && keel_get(c->world, c->comp, 0, &v, NULL) == KEEL_OK && v.as.i == g_fail_destroy)
        return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "probe %d refuses to go", g_fail_destroy);
    return KEEL_OK;
}

static keel_status probe_transfer(const keel_call *c)
{
    (void)c;
    g_transfer++;
    return KEEL_OK;
}

static int lc_teardown(void **state)
{
    (void)state;
    keel_shutdown();
    return 0;
}

static int lc_setup(void **state)
{
    (void)state;
    if (keel_init() != KEEL_OK) return -1;
    static const keel_field_desc f[] = { { .key = "n", .type = KEEL_T_INT, .flags = KEEL_FIELD_SYNC } };
    keel_kind_desc kd = { .key = "lc:probe", .version = 1, .multiplicity = KEEL_MANY, .fields = f, .field_count = 1 };
    kd.hooks[KEEL_PHASE_AWAKE] = probe_awake;
    kd.hooks[KEEL_PHASE_ON_DESTROY] = probe_destroy;
    kd.hooks[KEEL_PHASE_ON_TRANSFER] = probe_transfer;
    return keel_kind_declare(&kd, &g_probe, NULL) ? -1 : 0;
}

static int reset(void **state)
{
    (void)state;
    g_awake = g_destroy = g_transfer = g_fail_destroy = 0;
    return 0;
}

/* An entity with `n` probes under `parent`. */
static keel_entity probed(keel_world *w, const char *name, keel_entity parent, int n)
{
    keel_entity e;
    assert_int_equal(keel_spawn(w, name, parent, NULL, &e, NULL, NULL), KEEL_OK);
    for (int i = 0; i < n; i++) {
        keel_comp c;
        assert_int_equal(keel_add(w, e, g_probe, NULL, &c, NULL, NULL), KEEL_OK);
        keel_value v = { .type = KEEL_T_INT, .as.i = i + 1 };
        assert_int_equal(keel_set(w, c, 0, &v, NULL, NULL), KEEL_OK);
    }
    return e;
}

static void close_balanced(keel_world *w)
{
    assert_int_equal(keel_world_close(w, NULL), KEEL_OK);
    assert_int_equal(g_awake, g_destroy);
}

/* spawn + add, destroy, remove, close; a subtree closes children first. */
static void lifecycle_spawn_add_destroy_remove_close(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("L");
    keel_entity a = probed(w, "a", KEEL_NO_ENTITY, 2);
    keel_entity b = probed(w, "b", a, 1);
    probed(w, "c", b, 1);
    assert_int_equal(g_awake, 4);
    assert_int_equal(keel_remove(w, a, "lc:probe", 1, NULL, NULL), KEEL_OK);
    assert_int_equal(g_destroy, 1);
    keel_entity x = probed(w, "x", KEEL_NO_ENTITY, 1);
    assert_int_equal(keel_destroy(w, x, NULL, NULL), KEEL_OK);
    assert_int_equal(g_destroy, 2);
    keel_comp rc;
    assert_int_equal(keel_add(w, keel_world_root(w), g_probe, NULL, &rc, NULL, NULL), KEEL_OK);
    close_balanced(w);
    assert_int_equal(g_awake, 6);
}

/* duplicate and instantiate run awake for every copy; undo of a spawn and of a destroy too. */
static void lifecycle_duplicate_instantiate_undo(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("L");
    keel_entity a = probed(w, "a", KEEL_NO_ENTITY, 2);
    probed(w, "b", a, 1);
    keel_entity copy;
    assert_int_equal(keel_duplicate(w, a, KEEL_NO_ENTITY, &copy, NULL, NULL), KEEL_OK);
    assert_int_equal(g_awake, 6);

    keel_world *tmpl = keel_world_new("T");
    probed(tmpl, "t", KEEL_NO_ENTITY, 2);
    int before = g_awake; /* the template's own adds */
    keel_entity out[1];
    size_t n = 0;
    assert_int_equal(keel_instantiate(w, tmpl, NULL, out, 1, &n, NULL), KEEL_OK);
    assert_int_equal(g_awake, before + 2);

    /* undo of a destroy: awake again; undo of a spawn: on_destroy */
    keel_cmd undo = { 0 }, redo = { 0 };
    assert_int_equal(keel_destroy(w, copy, &undo, NULL), KEEL_OK);
    int destroyed = g_destroy;
    assert_int_equal(keel_cmd_apply(w, &undo, &redo, NULL), KEEL_OK);
    int woken = g_awake;
    assert_int_equal(keel_cmd_apply(w, &redo, NULL, NULL), KEEL_OK); /* destroy again */
    assert_int_equal(g_destroy - destroyed, 2); /* the copy of a (its child moved to the top level) */
    assert_int_equal(woken, before + 2 + 2);
    keel_cmd_free(&undo);
    keel_cmd_free(&redo);

    keel_entity s;
    keel_cmd unspawn = { 0 };
    assert_int_equal(keel_spawn(w, "s", KEEL_NO_ENTITY, NULL, &s, &unspawn, NULL), KEEL_OK);
    keel_comp sc;
    assert_int_equal(keel_add(w, s, g_probe, NULL, &sc, NULL, NULL), KEEL_OK);
    destroyed = g_destroy;
    assert_int_equal(keel_cmd_apply(w, &unspawn, NULL, NULL), KEEL_OK);
    assert_int_equal(g_destroy, destroyed + 1);
    keel_cmd_free(&unspawn);

    assert_int_equal(keel_world_close(tmpl, NULL), KEEL_OK);
    close_balanced(w);
}

/* A scene load and a save-game load run awake once per component; close retires them. */
static void lifecycle_load_and_save_game(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("L");
    keel_entity a = probed(w, "a", KEEL_NO_ENTITY, 2);
    probed(w, "b", a, 1);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(keel_scene_dump(w, &text, &len, NULL), KEEL_OK);
    keel_baseline *base = keel_baseline_capture(w);
    char path[] = "/tmp/keel-lifecycle-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(keel_persist_save(w, base, path, NULL, NULL), KEEL_OK);
    keel_baseline_free(base);
    close_balanced(w);

    keel_world *loaded = NULL;
    assert_int_equal(keel_scene_parse(text, len, NULL, &loaded, NULL), KEEL_OK);
    assert_int_equal(g_awake, 6);
    assert_int_equal(keel_persist_load(loaded, path, NULL), KEEL_OK);
    close_balanced(loaded);
    unlink(path);
    free(text);
}

/* transfer: on_transfer instead of awake and on_destroy; the destination retires it later. */
static void lifecycle_transfer(void **state)
{
    (void)state;
    keel_world *a = keel_world_new("A"), *b = keel_world_new("B");
    keel_entity e = probed(a, "e", KEEL_NO_ENTITY, 2);
    keel_entity moved;
    assert_int_equal(keel_transfer(a, e, b, KEEL_NO_ENTITY, &moved, NULL), KEEL_OK);
    assert_int_equal(g_awake, 2);
    assert_int_equal(g_destroy, 0);
    assert_int_equal(g_transfer, 2);
    assert_int_equal(keel_world_close(a, NULL), KEEL_OK);
    assert_int_equal(g_destroy, 0);
    close_balanced(b);
}

/* A lift discarded by close retires like the rest; a restored one is not a new component. */
static void lifecycle_lift_discard_and_close(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("L");
    keel_entity a = probed(w, "a", KEEL_NO_ENTITY, 1);
    keel_entity b = probed(w, "b", KEEL_NO_ENTITY, 1);
    keel_lift *la, *lb;
    assert_int_equal(keel_lift_entity(w, a, &la, NULL), KEEL_OK);
    assert_int_equal(keel_lift_restore(la, NULL), KEEL_OK);
    assert_int_equal(keel_lift_entity(w, b, &lb, NULL), KEEL_OK);
    assert_int_equal(g_destroy, 0);
    close_balanced(w); /* b's lift is discarded by the close */
    assert_int_equal(g_destroy, 2);
}

/* stop: what play added retires, what play destroyed wakes again, the rest neither. */
static void lifecycle_play_stop_balances(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("L");
    keel_entity a = probed(w, "a", KEEL_NO_ENTITY, 1);
    keel_entity b = probed(w, "b", a, 2);
    assert_int_equal(keel_world_play(w, NULL), KEEL_OK);
    probed(w, "new", b, 1);
    keel_comp extra;
    assert_int_equal(keel_add(w, a, g_probe, NULL, &extra, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_destroy(w, b, NULL, NULL), KEEL_OK);
    assert_int_equal(g_awake, 5);
    assert_int_equal(g_destroy, 2);
    assert_int_equal(keel_world_stop(w, NULL), KEEL_OK);
    assert_int_equal(g_destroy, 4); /* "new"'s probe and a's extra one */
    assert_int_equal(g_awake, 7);   /* b's two again */
    close_balanced(w);
    assert_int_equal(g_destroy, 7);
}

/* A failing on_destroy is recorded and the close goes on: one error each, the world freed. */
static void lifecycle_close_goes_on_past_a_failure(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("L");
    probed(w, "a", KEEL_NO_ENTITY, 3);
    probed(w, "b", KEEL_NO_ENTITY, 3);
    g_fail_destroy = 2;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_world_close(w, &d), KEEL_INVALID_OPERATION);
    assert_int_equal(d.errors, 2);
    assert_non_null(strstr(d.items[0].message, "probe 2 refuses to go"));
    assert_non_null(strstr(d.items[0].path, "/lc:probe[1]"));
    assert_int_equal(g_destroy, 6);
    keel_diags_free(&d);
    /* refused, and nothing retired, inside a callback or step: keel_world_close(NULL) is a no-op */
    assert_int_equal(keel_world_close(NULL, NULL), KEEL_OK);
}

/* A replication mirror runs awake once when it appears and on_destroy once when it goes. */
static void pump(keel_net_host *h, keel_net_client *c, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        keel_net_host_service(h, NULL);
        keel_net_client_service(c, NULL);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

static void lifecycle_mirror(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("H");
    keel_entity e = probed(w, "e", KEEL_NO_ENTITY, 2);
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    o.port = 0;
    keel_net_host *h = NULL;
    assert_int_equal(keel_net_host_new(w, &o, &h, NULL), KEEL_OK);
    keel_net_client *c = NULL;
    assert_int_equal(keel_net_connect("127.0.0.1", keel_net_host_port(h), "p", &c, NULL), KEEL_OK);
    keel_world *cw = keel_net_client_world(c);
    for (int i = 0; i < 3000 && keel_world_entity_count(cw) < 1; i++) {
        pump(h, c, 1);
        keel_step(w, 1.0 / 60, NULL);
    }
    assert_int_equal(keel_world_entity_count(cw), 1);
    assert_int_equal(g_awake, 4); /* the host's two and the mirror's two */
    assert_int_equal(keel_destroy(w, e, NULL, NULL), KEEL_OK);
    for (int i = 0; i < 3000 && keel_world_entity_count(cw) > 0; i++) {
        keel_step(w, 1.0 / 60, NULL);
        pump(h, c, 1);
    }
    assert_int_equal(keel_world_entity_count(cw), 0);
    assert_int_equal(g_destroy, 4);
    keel_net_client_free(c);
    keel_net_host_free(h);
    close_balanced(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(lifecycle_spawn_add_destroy_remove_close, reset),
        cmocka_unit_test_setup(lifecycle_duplicate_instantiate_undo, reset),
        cmocka_unit_test_setup(lifecycle_load_and_save_game, reset),
        cmocka_unit_test_setup(lifecycle_transfer, reset),
        cmocka_unit_test_setup(lifecycle_lift_discard_and_close, reset),
        cmocka_unit_test_setup(lifecycle_play_stop_balances, reset),
        cmocka_unit_test_setup(lifecycle_close_goes_on_past_a_failure, reset),
        cmocka_unit_test_setup(lifecycle_mirror, reset),
    };
    return KEEL_TEST_RUN(tests, lc_setup, lc_teardown);
}
