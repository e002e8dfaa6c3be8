/* test_lua_states.c — two Lua states in one process, each with its own world, system, timer and
 * served channel, stepped interleaved: what attaches to a world is the world's own (model/ext.h),
 * never whichever state ran last. The Lua half is tests/lua/two_states.lua. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua_state.h"

#include "keel_test.h"

typedef struct half {
    lua_State *L;
    int port;
    char token[128];
} half;

static void half_open(half *h, const char *name)
{
    h->L = keel_test_lua_new();
    lua_State *L = h->L;
    if (luaL_loadfile(L, KEEL_SOURCE_DIR "/tests/lua/two_states.lua") != LUA_OK) fail_msg("%s", lua_tostring(L, -1));
    lua_pushstring(L, name);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) fail_msg("%s", lua_tostring(L, -1));
    lua_getfield(L, -1, "port");
    h->port = (int)lua_tointeger(L, -1);
    lua_getfield(L, -2, "token");
    snprintf(h->token, sizeof h->token, "%s", lua_tostring(L, -1));
    lua_pop(L, 2);
    lua_setfield(L, LUA_REGISTRYINDEX, "two_states");
    assert_true(h->port > 0);
}

static void half_call(half *h, const char *fn, int nres)
{
    lua_getfield(h->L, LUA_REGISTRYINDEX, "two_states");
    lua_getfield(h->L, -1, fn);
    lua_remove(h->L, -2);
    if (lua_pcall(h->L, 0, nres, 0) != LUA_OK) fail_msg("%s: %s", fn, lua_tostring(h->L, -1));
}

static void half_counts(half *h, long *system, long *timer, long *foreign)
{
    half_call(h, "counts", 3);
    *system = (long)lua_tointeger(h->L, -3);
    *timer = (long)lua_tointeger(h->L, -2);
    *foreign = (long)lua_tointeger(h->L, -1);
    lua_pop(h->L, 3);
}

static void half_close(half *h)
{
    half_call(h, "close", 0);
    lua_close(h->L);
}

/* A JSON-RPC world.info request sent on a new non-blocking socket to h's server. */
static int rpc_send(const half *h)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)h->port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.info\"}";
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     h->port, h->token, strlen(body), body);
    assert_int_equal(send(fd, req, (size_t)n, 0), n);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* What has arrived on fd so far, appended to buf; true once the server closed the connection. */
static bool rpc_read(int fd, char *buf, size_t cap)
{
    size_t len = strlen(buf);
    for (;;) {
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r > 0) {
            len += (size_t)r;
            buf[len] = 0;
            continue;
        }
        if (r == 0) return true;
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        return false;
    }
}

static void lua_states_each_world_runs_its_own_systems_and_timers(void **state)
{
    half a, b;
    half_open(&a, "A");
    half_open(&b, "B");
    for (int i = 0; i < 30; i++) {
        half_call(&a, "step", 0);
        half_call(&b, "step", 0);
        half_call(&b, "step", 0); /* B runs twice as many frames */
    }
    long sys, timer, foreign;
    half_counts(&a, &sys, &timer, &foreign);
    assert_int_equal(sys, 30);
    assert_int_equal(foreign, 0);
    assert_in_range(timer, 4, 5); /* every 0.1 s over 0.5 s of world time */
    half_counts(&b, &sys, &timer, &foreign);
    assert_int_equal(sys, 60);
    assert_int_equal(foreign, 0);
    assert_in_range(timer, 9, 10);
    half_close(&a);
    half_close(&b);
}

static void lua_states_each_server_answers_between_its_own_worlds_frames(void **state)
{
    half a, b;
    half_open(&a, "A");
    half_open(&b, "B");
    int fa = rpc_send(&a), fb = rpc_send(&b);
    char ra[8192] = "", rb[8192] = "";
    /* only B steps: A's request waits, B's is answered */
    bool b_done = false;
    for (int i = 0; i < 200 && !b_done; i++) {
        half_call(&b, "step", 0);
        b_done = rpc_read(fb, rb, sizeof rb);
        if (!b_done) usleep(2000);
    }
    assert_true(b_done);
    assert_non_null(strstr(rb, "200 OK"));
    assert_non_null(strstr(rb, "\"name\":\"B\""));
    assert_false(rpc_read(fa, ra, sizeof ra));
    assert_string_equal(ra, "");
    bool a_done = false;
    for (int i = 0; i < 200 && !a_done; i++) {
        half_call(&a, "step", 0);
        a_done = rpc_read(fa, ra, sizeof ra);
        if (!a_done) usleep(2000);
    }
    assert_true(a_done);
    assert_non_null(strstr(ra, "\"name\":\"A\""));
    close(fa);
    close(fb);
    half_close(&a);
    half_close(&b);
}

#define T(f) cmocka_unit_test(f)
int main(void)
{
    const struct CMUnitTest tests[] = {
        T(lua_states_each_world_runs_its_own_systems_and_timers),
        T(lua_states_each_server_answers_between_its_own_worlds_frames),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
