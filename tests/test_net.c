/* test_net.c — replication over real ENet on loopback: convergence through a lossy shim, what
 * never crosses, late join and reconnect, interest entry/exit, stale and malformed packets,
 * refusal before any state, mirror worlds. */
#include "keel_test.h"
#include "world_fixture.h"

#include "keel_net.h"
#include "net/net.h"
#include "net/net_wire.h"

#include <enet/enet.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static keel_kind_id g_ship;

static int net_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    static const keel_field_desc f[] = {
        { .key = "hp", .type = KEEL_T_INT, .flags = KEEL_FIELD_SYNC },
        { .key = "ai_state", .type = KEEL_T_STRING },
        { .key = "label", .type = KEEL_T_STRING, .flags = KEEL_FIELD_SYNC },
    };
    keel_kind_desc kd = { .key = "test:ship", .version = 1, .fields = f, .field_count = 3, .sync_interval = 1 };
    if (keel_kind_declare(&kd, &g_ship, NULL)) return -1;
    keel_kind_desc ver = { .key = "test:ver", .version = 1, .sync_interval = 2 };
    return keel_kind_declare(&ver, NULL, NULL) ? -1 : 0;
}

static void pump(keel_net_host *h, keel_net_client **c, int nc, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        if (h) keel_net_host_service(h, NULL);
        for (int i = 0; i < nc; i++)
            if (c[i]) keel_net_client_service(c[i], NULL);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
}

static keel_net_host *host_on(keel_world *w, double radius)
{
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    o.port = 0;
    o.interest_radius = radius;
    keel_net_host *h = NULL;
    assert_int_equal(keel_net_host_new(w, &o, &h, NULL), KEEL_OK);
    return h;
}

/* A host on any free port taking at most max_clients players. */
static keel_net_host *host_for(keel_world *w, uint32_t max_clients)
{
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    o.port = 0;
    o.max_clients = max_clients;
    keel_net_host *h = NULL;
    assert_int_equal(keel_net_host_new(w, &o, &h, NULL), KEEL_OK);
    return h;
}

static keel_net_client *join(keel_net_host *h, const char *name)
{
    keel_net_client *c = NULL;
    assert_int_equal(keel_net_connect("127.0.0.1", keel_net_host_port(h), name, &c, NULL), KEEL_OK);
    for (int i = 0; i < 2000 && !keel_net_client_joined(c) && !keel_net_client_reason(c); i++) pump(h, &c, 1, 1);
    pump(h, &c, 1, 5); /* the server hears the join */
    return c;
}

static keel_entity ship(fx *f, const char *name, double x, int hp)
{
    keel_entity e = spawn(f, name, 0);
    keel_comp t = add(f, e, "core:transform");
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { x, 0, 0 } };
    assert_int_equal(keel_set(f->w, t, 0, &v, NULL, NULL), KEEL_OK);
    keel_comp s = add(f, e, "test:ship");
    keel_value hv = { .type = KEEL_T_INT, .as.i = hp };
    assert_int_equal(keel_set(f->w, s, 0, &hv, NULL, NULL), KEEL_OK);
    keel_value ai = { .type = KEEL_T_STRING, .as.s = "hunting" };
    assert_int_equal(keel_set(f->w, s, 1, &ai, NULL, NULL), KEEL_OK);
    return e;
}

static void set_x(fx *f, keel_entity e, double x)
{
    keel_comp t;
    assert_true(keel_get_comp(f->w, e, K("core:transform"), 0, &t));
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { x, x * 0.5, -x } };
    assert_int_equal(keel_set(f->w, t, 0, &v, NULL, NULL), KEEL_OK);
}

/* Every server entity is on the client under its UUID with the same synced values; the
 * non-synced ai_state kept its default (empty) there. */
static void assert_mirrors(keel_world *srv, keel_world *cw)
{
    assert_int_equal(keel_world_entity_count(cw), keel_world_entity_count(srv));
    for (keel_entity e = keel_next(srv, 0); e; e = keel_next(srv, e)) {
        keel_entity m = keel_find(cw, keel_entity_uuid(srv, e));
        assert_true(m != 0);
        assert_string_equal(keel_entity_name(cw, m), keel_entity_name(srv, e));
        keel_comp a, b;
        assert_true(keel_get_comp(srv, e, K("core:transform"), 0, &a));
        assert_true(keel_get_comp(cw, m, K("core:transform"), 0, &b));
        for (int fld = 0; fld < 3; fld++) {
            keel_value x, y;
            keel_get(srv, a, fld, &x, NULL);
            keel_get(cw, b, fld, &y, NULL);
            assert_memory_equal(x.as.v, y.as.v, sizeof x.as.v);
        }
        if (keel_get_comp(srv, e, g_ship, 0, &a)) {
            assert_true(keel_get_comp(cw, m, g_ship, 0, &b));
            keel_value x, y;
            keel_get(srv, a, 0, &x, NULL);
            keel_get(cw, b, 0, &y, NULL);
            assert_int_equal(x.as.i, y.as.i);
            keel_get(cw, b, 1, &y, NULL);
            assert_string_equal(y.as.s, ""); /* ai_state never crossed */
        }
    }
}

static void net_converges_through_loss_and_keeps_unsynced_home(void **state)
{
    fx *f = *state;
    keel_entity ships[40];
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "ship%d", i);
        ships[i] = ship(f, name, i, 100 + i);
    }
    keel_net_host *h = host_on(f->w, 0);
    keel_net_client *c[3] = { join(h, "a"), join(h, "b"), join(h, "c") };
    for (int i = 0; i < 3; i++) assert_true(keel_net_client_joined(c[i]));
    keel_net_host_set_loss(h, 0.25, 0.1, 0.15, 7);
    for (int t = 0; t < 120; t++) {
        for (int i = 0; i < 40; i++)
            set_x(f, ships[i], i + t * 0.37 + 0.1 * sqrt((double)t)); /* not float-exact */
        if (t % 7 == 0) {
            keel_comp s;
            keel_get_comp(f->w, ships[t % 40], g_ship, 0, &s);
            keel_value hv = { .type = KEEL_T_INT, .as.i = t };
            keel_set(f->w, s, 0, &hv, NULL, NULL);
        }
        pump(h, c, 3, 1);
    }
    pump(h, c, 3, 150); /* settle, the shim still on */
    assert_int_equal(keel_net_host_client_count(h), 3);
    for (int i = 0; i < 3; i++) {
        assert_null(keel_net_client_reason(c[i]));
        assert_mirrors(f->w, keel_net_client_world(c[i]));
        assert_int_equal(keel__net_client_stats(c[i]).spawns, 40); /* one snapshot each, never again */
    }
    for (int i = 0; i < 3; i++) keel_net_client_free(c[i]);
    keel_net_host_free(h);
}

static void net_late_joiner_and_reconnect_get_one_snapshot(void **state)
{
    fx *f = *state;
    keel_entity e[10];
    for (int i = 0; i < 10; i++) e[i] = ship(f, "s", i, i);
    keel_net_host *h = host_on(f->w, 0);
    pump(h, NULL, 0, 20);
    keel_destroy(f->w, e[3], NULL, NULL); /* what happened before the join is not replayed */
    pump(h, NULL, 0, 5);
    keel_net_client *c = join(h, "late");
    pump(h, &c, 1, 30);
    assert_int_equal(keel__net_client_stats(c).spawns, 9);
    assert_int_equal(keel__net_client_stats(c).removals, 0);
    assert_mirrors(f->w, keel_net_client_world(c));
    keel_net_client_free(c);
    pump(h, NULL, 0, 10);
    c = join(h, "late");
    set_x(f, e[0], 42);
    pump(h, &c, 1, 30);
    assert_int_equal(keel__net_client_stats(c).spawns, 9);
    assert_mirrors(f->w, keel_net_client_world(c));
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static void net_interest_entry_and_exit_give_one_spawn_and_one_removal(void **state)
{
    fx *f = *state;
    keel_entity me = ship(f, "me", 0, 1);
    keel_entity other = ship(f, "other", 100, 1);
    keel_net_host *h = host_on(f->w, 10);
    keel_net_client *c = join(h, "p1");
    assert_int_equal(keel_net_host_focus(h, "p1", me, NULL), KEEL_OK);
    assert_int_equal(keel_net_host_focus(h, "nobody", me, &f->d), KEEL_NOT_FOUND);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    pump(h, &c, 1, 20);
    keel_world *cw = keel_net_client_world(c);
    assert_int_equal(keel_world_entity_count(cw), 1);
    for (int x = 100; x >= 0; x -= 5) { /* in */
        set_x(f, other, x);
        pump(h, &c, 1, 2);
    }
    pump(h, &c, 1, 10);
    assert_int_equal(keel_world_entity_count(cw), 2);
    assert_true(keel_find(cw, keel_entity_uuid(f->w, other)) != 0);
    for (int x = 0; x <= 100; x += 5) { /* and out */
        set_x(f, other, x);
        pump(h, &c, 1, 2);
    }
    pump(h, &c, 1, 10);
    assert_int_equal(keel_world_entity_count(cw), 1);
    assert_int_equal(keel__net_client_stats(c).spawns, 2);
    assert_int_equal(keel__net_client_stats(c).removals, 1);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

/* An entity placed at (x, 0, 0) under `parent`: local there, its world position composed. */
static keel_entity child_at(fx *f, const char *name, keel_entity parent, double x)
{
    keel_entity e = spawn(f, name, parent);
    keel_comp t = add(f, e, "core:transform");
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { x, 0, 0 } };
    assert_int_equal(keel_set(f->w, t, 0, &v, NULL, NULL), KEEL_OK);
    return e;
}

static bool mirrored(keel_net_client *c, fx *f, keel_entity e)
{
    return keel_find(keel_net_client_world(c), keel_entity_uuid(f->w, e)) != 0;
}

/* Interest is measured at world positions: a child whose local position is out of the radius
 * but whose world position is in reaches the client, the converse does not, and a parent's
 * move carries its children in and out. */
static void net_interest_measures_world_positions(void **state)
{
    fx *f = *state;
    keel_entity me = ship(f, "me", 0, 1);
    keel_entity tank = ship(f, "tank", 50, 1);            /* out of the radius */
    keel_entity turret = child_at(f, "turret", tank, -45); /* local -45: out; world 5: in */
    keel_entity flag = child_at(f, "flag", tank, 5);       /* local 5: in; world 55: out */
    keel_net_host *h = host_on(f->w, 10);
    keel_net_client *c = join(h, "p1");
    assert_int_equal(keel_net_host_focus(h, "p1", me, NULL), KEEL_OK);
    pump(h, &c, 1, 20);
    assert_true(mirrored(c, f, me));
    assert_false(mirrored(c, f, tank));
    assert_true(mirrored(c, f, turret));
    assert_false(mirrored(c, f, flag));
    set_x(f, tank, 0); /* the tank moves to (0, 0, -0): the turret to -45, the flag to 5 */
    pump(h, &c, 1, 20);
    assert_true(mirrored(c, f, tank));
    assert_false(mirrored(c, f, turret));
    assert_true(mirrored(c, f, flag));
    assert_int_equal(keel__net_client_stats(c).removals, 1);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static int64_t mirror_hp(keel_net_client *c, keel_entity m)
{
    keel_comp sc;
    assert_true(keel_get_comp(keel_net_client_world(c), m, g_ship, 0, &sc));
    keel_value v;
    keel_get(keel_net_client_world(c), sc, 0, &v, NULL);
    return v.as.i;
}

static void set_hp(fx *f, keel_entity e, int64_t hp)
{
    keel_comp sc;
    assert_true(keel_get_comp(f->w, e, g_ship, 0, &sc));
    keel_value v = { .type = KEEL_T_INT, .as.i = hp };
    assert_int_equal(keel_set(f->w, sc, 0, &v, NULL, NULL), KEEL_OK);
}

/* A lift is not a destroy seen from a client: the mirror stays (its handle too) and nothing is
 * sent while lifted, a client joining then does not get it, a restore resumes its deltas on the
 * same mirror entity (no respawn), and only a discard sends the one removal. With and without
 * an interest radius. */
static void lift_case(fx *f, double radius)
{
    keel_entity e = ship(f, "lifted", 1, 5);
    keel_entity kid = child_at(f, "kid", e, 1);
    keel_entity stay = ship(f, "stay", 2, 6);
    keel_uuid ue = keel_entity_uuid(f->w, e), uk = keel_entity_uuid(f->w, kid); /* nil while lifted */
    keel_net_host *h = host_on(f->w, radius);
    keel_net_client *c = join(h, "p1");
    if (radius > 0) assert_int_equal(keel_net_host_focus(h, "p1", stay, NULL), KEEL_OK);
    pump(h, &c, 1, 20);
    keel_world *cw = keel_net_client_world(c);
    keel_entity m = keel_find(cw, ue), mk = keel_find(cw, uk);
    assert_true(m != 0 && mk != 0);
    keel__net_stats before = keel__net_client_stats(c);
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, e, &l, NULL), KEEL_OK);
    set_hp(f, stay, 7);
    pump(h, &c, 1, 20);
    assert_int_equal(keel_find(cw, ue), m); /* the mirror stays, its handle good */
    assert_true(keel_alive(cw, m) && keel_alive(cw, mk));
    assert_int_equal(mirror_hp(c, m), 5);
    assert_int_equal(mirror_hp(c, keel_find(cw, keel_entity_uuid(f->w, stay))), 7); /* the rest goes on */
    assert_int_equal(keel__net_client_stats(c).removals, before.removals);
    keel_net_client *late = join(h, "late");
    if (radius > 0) assert_int_equal(keel_net_host_focus(h, "late", stay, NULL), KEEL_OK);
    keel_net_client *both[2] = { c, late };
    pump(h, both, 2, 20);
    assert_true(mirrored(late, f, stay));
    assert_int_equal(keel_find(keel_net_client_world(late), ue), 0); /* not in play: not sent to a newcomer */
    assert_int_equal(keel_lift_restore(l, NULL), KEEL_OK);
    set_hp(f, e, 77);
    pump(h, both, 2, 20);
    assert_int_equal(keel_find(cw, ue), m); /* same mirror entity */
    assert_int_equal(mirror_hp(c, m), 77);
    assert_int_equal(keel__net_client_stats(c).spawns, before.spawns); /* no respawn */
    assert_int_equal(keel__net_client_stats(c).removals, before.removals);
    assert_true(mirrored(late, f, e)); /* the late client sees it now */
    assert_int_equal(keel_lift_entity(f->w, e, &l, NULL), KEEL_OK);
    pump(h, both, 2, 10);
    assert_int_equal(keel_lift_discard(l, NULL), KEEL_OK);
    pump(h, both, 2, 20);
    assert_int_equal(keel_find(cw, ue), 0);
    assert_int_equal(keel_find(cw, uk), 0);
    assert_false(keel_alive(cw, m));
    assert_int_equal(keel__net_client_stats(c).removals, before.removals + 2); /* one each: it and its child */
    keel_net_client_free(late);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

/* The parent of a lifted entity destroyed meanwhile: the client's mirror of the lifted one stays
 * (at the top level, as a destroy leaves children), and a restore (at the top level) resumes it. */
static void net_lifted_child_outlives_its_parent_on_the_client(void **state)
{
    fx *f = *state;
    keel_entity p = ship(f, "parent", 1, 1);
    keel_entity e = child_at(f, "kid", p, 1);
    add(f, e, "test:ship");
    keel_uuid ue = keel_entity_uuid(f->w, e);
    keel_net_host *h = host_on(f->w, 0);
    keel_net_client *c = join(h, "p1");
    pump(h, &c, 1, 20);
    keel_world *cw = keel_net_client_world(c);
    keel_entity m = keel_find(cw, ue);
    assert_true(m != 0);
    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, e, &l, NULL), KEEL_OK);
    pump(h, &c, 1, 10);
    assert_int_equal(keel_destroy(f->w, p, NULL, NULL), KEEL_OK);
    pump(h, &c, 1, 20);
    assert_int_equal(keel_find(cw, keel_entity_uuid(f->w, p)), 0);
    assert_int_equal(keel_find(cw, ue), m);
    assert_int_equal(keel_entity_parent(cw, m), KEEL_NO_ENTITY);
    assert_int_equal(keel_lift_restore(l, NULL), KEEL_OK);
    set_hp(f, e, 9);
    pump(h, &c, 1, 20);
    assert_int_equal(keel_find(cw, ue), m);
    assert_int_equal(mirror_hp(c, m), 9);
    assert_int_equal(keel__net_client_stats(c).spawns, 2);
    assert_int_equal(keel__net_client_stats(c).removals, 1);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static void net_lift_is_no_removal_and_restore_no_respawn(void **state)
{
    lift_case(*state, 0);
}

static void net_lift_is_no_removal_with_interest(void **state)
{
    lift_case(*state, 50);
}

/* A full host refuses the next client with a reason; a second client under a taken name is
 * refused too (the host's log and focus name clients). */
static void net_full_host_and_taken_name_refuse_with_a_reason(void **state)
{
    fx *f = *state;
    ship(f, "s", 1, 5);
    keel_net_host *h = host_for(f->w, 2);
    keel_net_client *a = join(h, "a");
    keel_net_client *b = join(h, "a");
    assert_true(keel_net_client_joined(a));
    assert_false(keel_net_client_joined(b));
    assert_non_null(keel_net_client_reason(b));
    assert_non_null(strstr(keel_net_client_reason(b), "a client named 'a' is connected already"));
    keel_net_client_free(b);
    keel_net_client *c = join(h, "c");
    keel_net_client *d = join(h, "d");
    assert_true(keel_net_client_joined(c));
    assert_false(keel_net_client_joined(d));
    assert_non_null(keel_net_client_reason(d));
    assert_string_equal(keel_net_client_reason(d), "server full (2 clients)");
    assert_int_equal(keel_net_host_client_count(h), 2);
    keel_net_client_free(a);
    keel_net_client_free(c);
    keel_net_client_free(d);
    keel_net_host_free(h);
}

/* A peer that connects and never says hello is dropped at the deadline, and peers in their
 * handshake take places of their own: a player still joins a host whose slots they crowd. */
static void net_silent_peers_are_dropped_and_hold_no_player_slot(void **state)
{
    fx *f = *state;
    ship(f, "s", 1, 5);
    keel_net_host *h = host_for(f->w, 2);
    ENetHost *raw = enet_host_create(NULL, 4, 2, 0, 0);
    assert_non_null(raw);
    ENetAddress addr;
    enet_address_set_host(&addr, "127.0.0.1");
    addr.port = keel_net_host_port(h);
    for (int i = 0; i < 4; i++) assert_non_null(enet_host_connect(raw, &addr, 2, 0));
    ENetEvent ev;
    for (int r = 0; r < 200 && keel__net_host_stats(h).handshaking < 4; r++) {
        keel_net_host_service(h, NULL);
        while (enet_host_service(raw, &ev, 1) > 0) {}
    }
    assert_int_equal(keel__net_host_stats(h).handshaking, 4); /* connected, silent */
    keel_net_client *p = join(h, "player");
    assert_true(keel_net_client_joined(p));
    /* the deadline: 2 s after connecting, no hello, gone */
    for (int r = 0; r < 400 && keel__net_host_stats(h).dropped_slow < 4; r++) {
        keel_net_host_service(h, NULL);
        keel_net_client_service(p, NULL);
        while (enet_host_service(raw, &ev, 0) > 0) {}
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    assert_int_equal(keel__net_host_stats(h).dropped_slow, 4);
    assert_int_equal(keel__net_host_stats(h).handshaking, 0);
    assert_int_equal(keel_net_host_client_count(h), 1);
    enet_host_destroy(raw);
    keel_net_client_free(p);
    keel_net_host_free(h);
}

/* An entity with no position sits in the interest grid's cell of its own, which every client's
 * candidates include: it reaches a client with a focus as well as one without. */
static void net_interest_offers_entities_without_a_position(void **state)
{
    fx *f = *state;
    keel_entity me = ship(f, "me", 0, 1);
    keel_entity far = ship(f, "far", 1000, 1);
    keel_entity flag = spawn(f, "flag", 0);
    add(f, flag, "test:ship"); /* synced, and no core:transform */
    keel_net_host *h = host_on(f->w, 10);
    keel_net_client *c = join(h, "p1");
    assert_int_equal(keel_net_host_focus(h, "p1", me, NULL), KEEL_OK);
    pump(h, &c, 1, 30);
    keel_world *cw = keel_net_client_world(c);
    assert_true(keel_find(cw, keel_entity_uuid(f->w, me)) != 0);
    assert_true(keel_find(cw, keel_entity_uuid(f->w, flag)) != 0);
    assert_true(keel_find(cw, keel_entity_uuid(f->w, far)) == 0);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

/* A delta from before an entity's snapshot (an earlier incarnation under the same id) and one
 * for an id no longer held change nothing. */
static void net_stale_incarnation_delta_changes_nothing(void **state)
{
    fx *f = *state;
    keel_entity e = ship(f, "s", 1, 5);
    keel_net_host *h = host_on(f->w, 0);
    pump(h, NULL, 0, 50); /* the server's tick moves on */
    keel_net_client *c = join(h, "p");
    pump(h, &c, 1, 20);
    keel_world *cw = keel_net_client_world(c);
    keel_entity m = keel_find(cw, keel_entity_uuid(f->w, e));
    assert_true(m != 0);
    /* DELTA seq 1000, tick 1 (before the snapshot), lid 1, kind test:ship's id, hp = 999 */
    keel__wire_buf b = { 0 };
    keel__wire_u8(&b, KEEL__PK_DELTA);
    keel__wire_varint(&b, 1000);
    keel__wire_varint(&b, 1);
    keel__wire_varint(&b, 1);
    /* test:ship's connection id: its place among the synced kinds, sorted by key */
    uint32_t kid = 0, n = 0;
    for (size_t i = 0; i < keel_kind_count(); i++) {
        const keel_kind_desc *kd = keel_kind_describe(keel_kind_at(i));
        bool synced = kd->sync_interval > 0;
        for (size_t j = 0; j < kd->field_count; j++) synced |= (kd->fields[j].flags & KEEL_FIELD_SYNC) != 0;
        if (!synced) continue;
        if (keel_kind_at(i) == g_ship) kid = n;
        n++;
    }
    keel__wire_varint(&b, kid);
    keel__wire_varint(&b, 1); /* hp present */
    keel_value hv = { .type = KEEL_T_INT, .as.i = 999 };
    keel__wire_value(&b, KEEL_T_INT, &hv, false);
    uint64_t before = keel__net_client_stats(c).ignored;
    assert_int_equal(keel__net_client_inject(c, 1, b.p, b.len, NULL), KEEL_OK);
    assert_int_equal(keel__net_client_stats(c).ignored, before + 1);
    keel_comp sc;
    assert_true(keel_get_comp(cw, m, g_ship, 0, &sc));
    keel_value got;
    keel_get(cw, sc, 0, &got, NULL);
    assert_int_equal(got.as.i, 5);
    /* an id never held: ignored too */
    b.p[4] = 77; /* lid (after type, 2-byte seq, tick) */
    assert_int_equal(keel__net_client_inject(c, 1, b.p, b.len, NULL), KEEL_OK);
    keel_get(cw, sc, 0, &got, NULL);
    assert_int_equal(got.as.i, 5);
    keel__wire_buf_free(&b);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static void net_malformed_packet_disconnects_and_changes_nothing(void **state)
{
    fx *f = *state;
    ship(f, "s", 1, 5);
    keel_net_host *h = host_on(f->w, 0);
    keel_net_client *c = join(h, "p");
    pump(h, &c, 1, 20);
    keel_world *cw = keel_net_client_world(c);
    assert_int_equal(keel_world_entity_count(cw), 1);
    /* a STATE spawn then a record with a bad tag: nothing of it lands */
    keel__wire_buf b = { 0 };
    keel__wire_u8(&b, KEEL__PK_STATE);
    keel__wire_varint(&b, 100000);
    keel__wire_u8(&b, KEEL__REC_SPAWN);
    keel__wire_varint(&b, 500);
    keel_uuid u = keel_uuid_v4();
    keel__wire_bytes(&b, u.bytes, 16);
    keel__wire_varint(&b, 1);
    keel__wire_varint(&b, 0);
    keel__wire_u8(&b, 1);
    keel__wire_str(&b, "intruder");
    keel__wire_u8(&b, 99);
    keel_status st = keel__net_client_inject(c, 0, b.p, b.len, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "malformed packet");
    assert_int_equal(keel_world_entity_count(cw), 1);
    assert_int_equal(keel_find(cw, u), 0);
    assert_non_null(strstr(keel_net_client_reason(c), "record tag"));
    assert_int_equal(keel_net_client_service(c, NULL), KEEL_INVALID_OPERATION);
    keel__wire_buf_free(&b);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static bool has_text(const uint8_t *p, size_t n, const char *t)
{
    size_t m = strlen(t);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(p + i, t, m)) return true;
    return false;
}

/* A peer speaking garbage to the host is told why and dropped; the world is untouched. */
static void net_host_drops_a_malformed_peer_with_a_reason(void **state)
{
    fx *f = *state;
    ship(f, "s", 1, 5);
    keel_net_host *h = host_on(f->w, 0);
    assert_int_equal(enet_initialize(), 0);
    ENetHost *raw = enet_host_create(NULL, 1, 2, 0, 0);
    ENetAddress a;
    enet_address_set_host(&a, "127.0.0.1");
    a.port = keel_net_host_port(h);
    ENetPeer *p = enet_host_connect(raw, &a, 2, 0);
    bool sent = false, refused = false, dropped = false;
    for (int i = 0; i < 3000 && !dropped; i++) {
        keel_net_host_service(h, NULL);
        ENetEvent ev;
        while (enet_host_service(raw, &ev, 1) > 0) {
            if (ev.type == ENET_EVENT_TYPE_CONNECT && !sent) {
                static const uint8_t junk[] = { 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
                enet_peer_send(p, 0, enet_packet_create(junk, sizeof junk, ENET_PACKET_FLAG_RELIABLE));
                sent = true;
            } else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
                refused |= ev.packet->dataLength > 1 && ev.packet->data[0] == KEEL__PK_REFUSE &&
                    has_text(ev.packet->data, ev.packet->dataLength, "malformed");
                enet_packet_destroy(ev.packet);
            } else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) dropped = true;
        }
    }
    assert_true(sent);
    assert_true(refused);
    assert_true(dropped);
    assert_int_equal(keel_net_host_client_count(h), 0);
    assert_int_equal(keel_world_entity_count(f->w), 1);
    enet_host_destroy(raw);
    enet_deinitialize();
    keel_net_host_free(h);
}

static void net_refused_client_receives_no_entity(void **state)
{
    fx *f = *state;
    ship(f, "s", 1, 5);
    keel_net_host *h = host_on(f->w, 0);
    /* the client's registry now has another version of test:ver than the server's table */
    keel_kind_desc ver = { .key = "test:ver", .version = 2, .sync_interval = 2 };
    assert_int_equal(keel_kind_declare(&ver, NULL, NULL), KEEL_OK);
    keel_net_client *c = NULL;
    assert_int_equal(keel_net_connect("127.0.0.1", keel_net_host_port(h), "p", &c, NULL), KEEL_OK);
    keel_status st = KEEL_OK;
    keel_diags cd;
    keel_diags_init(&cd);
    for (int i = 0; i < 2000 && st == KEEL_OK; i++) {
        keel_net_host_service(h, NULL);
        st = keel_net_client_service(c, &cd);
        assert_true(st == KEEL_OK || keel_net_client_reason(c)); /* fails exactly when a reason is known */
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    /* the refusal is known: service fails with it at once, the client no longer counts as connected */
    assert_int_equal(st, KEEL_INVALID_OPERATION);
    assert_false(keel_net_client_connected(c));
    assert_int_equal(cd.count, 1);
    assert_non_null(strstr(cd.items[0].message, "test:ver"));
    keel_diags_free(&cd);
    pump(h, &c, 1, 30);
    assert_false(keel_net_client_joined(c));
    const char *why = keel_net_client_reason(c);
    assert_non_null(why);
    assert_non_null(strstr(why, "test:ver"));
    assert_int_equal(keel_world_entity_count(keel_net_client_world(c)), 0);
    assert_int_equal(keel__net_client_stats(c).spawns, 0);
    assert_int_equal(keel_net_host_client_count(h), 0);
    keel_net_client_free(c);
    keel_net_host_free(h);
    ver.version = 1;
    assert_int_equal(keel_kind_declare(&ver, NULL, NULL), KEEL_OK);
}

/* A small budget spreads the snapshot over ticks: never much past it in a tick, all there in the end. */
static void net_budget_spreads_the_snapshot(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 300; i++) ship(f, "a ship with a long name to fill the packets", i, i);
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    o.port = 0;
    o.budget = 4096;
    keel_net_host *h = NULL;
    assert_int_equal(keel_net_host_new(f->w, &o, &h, NULL), KEEL_OK);
    keel_net_client *c = join(h, "p");
    uint64_t b0 = keel__net_host_stats(h).bytes;
    keel_net_host_service(h, NULL);
    uint64_t spent = keel__net_host_stats(h).bytes - b0;
    assert_true(spent <= 4096 + KEEL__WIRE_MTU);
    assert_true(spent > 0);
    pump(h, &c, 1, 100);
    assert_mirrors(f->w, keel_net_client_world(c));
    assert_int_equal(keel__net_client_stats(c).spawns, 300);
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static void net_mirror_refuses_synced_writes(void **state)
{
    fx *f = *state;
    keel_entity e = ship(f, "s", 1, 5);
    keel_net_host *h = host_on(f->w, 0);
    keel_net_client *c = join(h, "p");
    pump(h, &c, 1, 20);
    keel_world *cw = keel_net_client_world(c);
    keel_entity m = keel_find(cw, keel_entity_uuid(f->w, e));
    keel_comp sc;
    assert_true(keel_get_comp(cw, m, g_ship, 0, &sc));
    keel_value hv = { .type = KEEL_T_INT, .as.i = 1 };
    assert_diag(keel_set(cw, sc, 0, &hv, NULL, &f->d), &f->d, KEEL_INVALID_OPERATION, "synced");
    keel_value ai = { .type = KEEL_T_STRING, .as.s = "local" };
    assert_int_equal(keel_set(cw, sc, 1, &ai, NULL, NULL), KEEL_OK); /* not synced: the client's own */
    /* a built-in kind's synced fields too, through every C write */
    keel_comp tc;
    assert_true(keel_get_comp(cw, m, K("core:transform"), 0, &tc));
    keel_value pos = { .type = KEEL_T_VEC3, .as.v = { 9, 9, 9 } };
    keel_value rot = { .type = KEEL_T_QUAT, .as.v = { 0, 0, 0, 1 } };
    assert_diag(keel_set(cw, tc, 0, &pos, NULL, &f->d), &f->d, KEEL_INVALID_OPERATION, "synced");
    assert_diag(keel_set(cw, tc, 1, &rot, NULL, &f->d), &f->d, KEEL_INVALID_OPERATION, "synced");
    assert_diag(keel_set(cw, tc, 2, &pos, NULL, &f->d), &f->d, KEEL_INVALID_OPERATION, "synced");
    assert_diag(keel_reset(cw, tc, -1, &f->d), &f->d, KEEL_INVALID_OPERATION, "synced");
    keel_cmd cmd = { .type = KEEL_CMD_SET, .entity = keel_entity_uuid(cw, m), .kind_key = strdup("core:transform"),
                     .field = strdup("position"), .value = pos };
    assert_diag(keel_cmd_apply(cw, &cmd, NULL, &f->d), &f->d, KEEL_INVALID_OPERATION, "synced");
    keel_cmd_free(&cmd);
    keel_value got;
    assert_int_equal(keel_get(cw, tc, 0, &got, NULL), KEEL_OK);
    assert_true(got.as.v[0] == 1 && got.as.v[1] == 0 && got.as.v[2] == 0); /* the host's, untouched */
    keel_net_client_free(c);
    keel_net_host_free(h);
}

/* A hosted world's step sends a network tick once `tick` seconds of dt have added up. */
static void net_tick_paces_the_steps(void **state)
{
    fx *f = *state;
    keel_entity e = ship(f, "s", 1, 5);
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    o.port = 0;
    keel_net_host *h = NULL;
    for (int i = 0; i < 3; i++) {
        o.tick = (double[]){ 0, -0.1, NAN }[i];
        assert_int_equal(keel_net_host_new(f->w, &o, &h, NULL), KEEL_INVALID_ARGUMENT);
        assert_null(h);
    }
    o.tick = 0.1;
    assert_int_equal(keel_net_host_new(f->w, &o, &h, NULL), KEEL_OK);
    keel_net_client *c = join(h, "p");
    for (int i = 1; i <= 10; i++) {
        set_x(f, e, 10 + i);
        uint64_t before = keel__net_host_stats(h).packets;
        assert_int_equal(keel_step(f->w, 0.05, NULL), KEEL_OK);
        uint64_t sent = keel__net_host_stats(h).packets - before;
        if (i % 2) assert_int_equal(sent, 0);
        else assert_true(sent > 0);
        keel_net_client_service(c, NULL);
    }
    keel_net_client_free(c);
    keel_net_host_free(h);
}

static void net_sync_interval_is_bounded(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { .key = "test:toofast", .version = 1, .sync_interval = 1201 };
    assert_diag(keel_kind_declare(&kd, NULL, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "sync interval");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(net_converges_through_loss_and_keeps_unsynced_home),
        T(net_late_joiner_and_reconnect_get_one_snapshot),
        T(net_interest_entry_and_exit_give_one_spawn_and_one_removal),
        T(net_interest_offers_entities_without_a_position),
        T(net_interest_measures_world_positions),
        T(net_lift_is_no_removal_and_restore_no_respawn),
        T(net_lift_is_no_removal_with_interest),
        T(net_lifted_child_outlives_its_parent_on_the_client),
        T(net_full_host_and_taken_name_refuse_with_a_reason),
        T(net_silent_peers_are_dropped_and_hold_no_player_slot),
        T(net_stale_incarnation_delta_changes_nothing),
        T(net_malformed_packet_disconnects_and_changes_nothing),
        T(net_host_drops_a_malformed_peer_with_a_reason),
        T(net_refused_client_receives_no_entity),
        T(net_budget_spreads_the_snapshot),
        T(net_mirror_refuses_synced_writes),
        T(net_tick_paces_the_steps),
        T(net_sync_interval_is_bounded),
    };
    return KEEL_TEST_RUN(tests, net_group_setup, group_teardown);
}
