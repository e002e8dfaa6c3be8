/* lua_http.c — the channel's HTTP server: libmicrohttpd driven from the caller's loop (no thread
 * of its own), each complete request handed to a Lua function on the thread that polls.
 * keel.core.channel.http_open{ port, bind, handler } -> server | nil, message;
 * server:poll(seconds) runs the daemon (waiting at most that long); server:port(); server:push(id, text)
 * queues text on an event stream; server:pending(id); server:drop(id); server:close().
 * The handler gets { method, path, query = {}, headers = {} (lowercase names), body } and returns
 * status, content type, body text (or { stream = id } to open an event stream), extra headers. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "lua_internal.h"
#include "channel/lua_http.h"

#define HTTP_MAX_BODY (1024 * 1024) /* larger request bodies: 413 */
#define HTTP_MAX_CONNECTIONS 256 /* open connections in all (FD_SETSIZE is 1,024) */
#define HTTP_PER_IP 64           /* from one address: a page and its event stream need a few */
#define HTTP_HEADER_TIMEOUT 5    /* seconds a connection may take to send its request's headers */
#define HTTP_REQUEST_TIMEOUT 120 /* seconds a connection may stay idle once its request began */
static const keel_lua_type mt_http = { "keel.Server" };

typedef struct msg {
    struct msg *next;
    size_t len, off;
    char data[];
} msg;

typedef struct http http;

/* One event stream: messages queued by push, drained by MHD through stream_read. */
typedef struct stream {
    http *h;
    lua_Integer id;
    struct MHD_Connection *conn;
    bool suspended;
    bool gone; /* its client closed the connection while it waited (see streams_reap) */
    msg *head, *tail;
    size_t count; /* messages queued, the one being sent included */
    struct stream *prev, *next;
} stream;

struct http {
    struct MHD_Daemon *d;
    lua_State *L; /* during poll: where the handler runs */
    int handler_ref;
    bool polling, closing;
    uint16_t port;
    stream *streams;
    keel_lua_ctx *ctx; /* the state that opened it (its http_open counts it) */
};

/* A request's body as it arrives. */
typedef struct upload {
    char *body;
    size_t len, cap;
    bool too_large;
} upload;


static http *check_http(lua_State *L, int idx, bool open)
{
    http **p = keel__lua_checkudata(L, idx, &mt_http);
    if (open && !*p) keel__lua_raisef(L, KEEL_INVALID_OPERATION, "the server is closed");
    return *p;
}

static void msg_free_all(stream *s)
{
    while (s->head) {
        msg *m = s->head;
        s->head = m->next;
        free(m);
    }
    s->tail = NULL;
    s->count = 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *s = cls;
    if (s->gone) return MHD_CONTENT_READER_END_WITH_ERROR; /* MHD closes it and frees the stream */
    if (!s->head) {
        if (s->h->closing) return MHD_CONTENT_READER_END_OF_STREAM;
        /* nothing to send: out of the event loop until push resumes it (no busy polling) */
        MHD_suspend_connection(s->conn);
        s->suspended = true;
        return 0;
    }
    msg *m = s->head;
    size_t n = m->len - m->off < max ? m->len - m->off : max;
    memcpy(buf, m->data + m->off, n);
    m->off += n;
    if (m->off == m->len) {
        s->head = m->next;
        if (!s->head) s->tail = NULL;
        s->count--;
        free(m);
    }
    return (ssize_t)n;
}

/* The response is gone (client left, or the daemon stops): so is the stream. */
static void stream_free(void *cls)
{
    stream *s = cls;
    if (s->prev) s->prev->next = s->next;
    else s->h->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    msg_free_all(s);
    free(s);
}

static lua_Integer check_id(lua_State *L, int idx)
{
    if (!lua_isinteger(L, idx)) keel__lua_argerror(L, idx, "a stream id expected, got %s", luaL_typename(L, idx));
    return lua_tointeger(L, idx);
}

static stream *find_stream(http *h, lua_Integer id)
{
    for (stream *s = h->streams; s; s = s->next)
        if (s->id == id) return s;
    return NULL;
}

static enum MHD_Result header_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    lua_State *L = cls;
    if (!key) return MHD_YES;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (const char *k = key; *k; k++) luaL_addchar(&b, (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k));
    luaL_pushresult(&b);
    lua_pushstring(L, value ? value : "");
    lua_rawset(L, -3);
    return MHD_YES;
}

/* A request's handler runs (keel_lua_answering, for a host's signal handler). */
static volatile sig_atomic_t g_answering;

int keel_lua_answering(void) { return g_answering > 0; }

/* Counts the headers the server's checks rest on: Host, Origin, Authorization. */
static enum MHD_Result guarded_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    static const char *const names[] = { "host", "origin", "authorization" };
    int *count = cls;
    for (int i = 0; key && i < 3; i++)
        if (strcasecmp(key, names[i]) == 0) count[i]++;
    return MHD_YES;
}

static enum MHD_Result queue_text(struct MHD_Connection *conn, unsigned status, const char *ctype,
                                  const char *text, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Builds the request table, calls the handler (in protected mode) and queues what it returns. */
static enum MHD_Result answer(http *h, struct MHD_Connection *conn, const char *url, const char *method, upload *u)
{
    lua_State *L = h->L;
    if (!L || !lua_checkstack(L, 12)) return queue_text(conn, 503, "text/plain", "busy\n", 5);
    /* a header the checks rest on, given twice, is ambiguous (RFC 7230 3.2.2): which one a check
     * reads must never be the client's choice */
    int guarded[3] = { 0, 0, 0 };
    MHD_get_connection_values(conn, MHD_HEADER_KIND, guarded_cb, guarded);
    if (guarded[0] > 1 || guarded[1] > 1 || guarded[2] > 1) {
        static const char text[] = "bad request: a repeated Host, Origin or Authorization header\n";
        return queue_text(conn, 400, "text/plain; charset=utf-8", text, sizeof text - 1);
    }
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->handler_ref);
    lua_createtable(L, 0, 6);
    lua_pushstring(L, method);
    lua_setfield(L, -2, "method");
    lua_pushstring(L, url);
    lua_setfield(L, -2, "path");
    lua_newtable(L);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, header_cb, L);
    lua_setfield(L, -2, "headers");
    lua_newtable(L);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, header_cb, L);
    lua_setfield(L, -2, "query");
    lua_pushlstring(L, u && u->body ? u->body : "", u ? u->len : 0);
    lua_setfield(L, -2, "body");
    g_answering++;
    int called = lua_pcall(L, 1, 4, 0);
    g_answering--;
    if (called != LUA_OK) {
        size_t len;
        const char *m = lua_tolstring(L, -1, &len);
        if (!m) m = "the request handler failed", len = strlen(m);
        enum MHD_Result r = queue_text(conn, 500, "text/plain; charset=utf-8", m, len);
        lua_settop(L, top);
        return r;
    }
    unsigned status = lua_isinteger(L, top + 1) ? (unsigned)lua_tointeger(L, top + 1)
                                                : 200; /* nothing here may raise */
    const char *ctype = lua_isstring(L, top + 2) ? lua_tostring(L, top + 2) : "text/plain; charset=utf-8";
    struct MHD_Response *r = NULL;
    stream *st = NULL;
    if (lua_istable(L, top + 3)) {
        lua_getfield(L, top + 3, "stream");
        st = calloc(1, sizeof *st);
        if (st) {
            st->h = h, st->id = lua_tointeger(L, -1), st->conn = conn;
            r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_free);
            if (!r) free(st);
            else {
                st->next = h->streams;
                if (st->next) st->next->prev = st;
                h->streams = st;
            }
        }
        lua_pop(L, 1);
    } else {
        size_t len = 0;
        const char *body = lua_isstring(L, top + 3) ? lua_tolstring(L, top + 3, &len) : "";
        r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    }
    if (!r) {
        lua_settop(L, top);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    if (lua_istable(L, top + 4)) {
        lua_pushnil(L);
        while (lua_next(L, top + 4)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_isstring(L, -1))
                MHD_add_response_header(r, lua_tostring(L, -2), lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    lua_settop(L, top);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **con_cls)
{
    http *h = cls;
    upload *u = *con_cls;
    if (!u) {
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > HTTP_MAX_BODY) {
            static const char m[] = "request body over 1 MiB\n";
            return queue_text(conn, 413, "text/plain", m, sizeof m - 1);
        }
        u = calloc(1, sizeof *u);
        if (!u) return MHD_NO;
        *con_cls = u;
        /* the headers are in: from here a slow body or an event stream has the long timeout */
        MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)HTTP_REQUEST_TIMEOUT);
        return MHD_YES;
    }
    if (*data_size) {
        if (!u->too_large && u->len + *data_size > HTTP_MAX_BODY) {
            u->too_large = true;
            free(u->body);
            u->body = NULL;
            u->len = u->cap = 0;
        }
        if (!u->too_large) {
            if (u->len + *data_size > u->cap) {
                size_t cap = u->cap ? u->cap : 4096;
                while (cap < u->len + *data_size) cap *= 2;
                char *b = realloc(u->body, cap);
                if (!b) return MHD_NO;
                u->body = b, u->cap = cap;
            }
            memcpy(u->body + u->len, data, *data_size);
            u->len += *data_size;
        }
        *data_size = 0;
        return MHD_YES;
    }
    if (u->too_large) {
        static const char m[] = "request body over 1 MiB\n";
        return queue_text(conn, 413, "text/plain", m, sizeof m - 1);
    }
    return answer(h, conn, url, method, u);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    upload *u = *con_cls;
    if (u) {
        free(u->body);
        free(u);
        *con_cls = NULL;
    }
}

static void http_stop(lua_State *L, http *h)
{
    h->closing = true;
    for (stream *s = h->streams; s; s = s->next)
        if (s->suspended) { /* MHD must not stop with suspended connections */
            s->suspended = false;
            MHD_resume_connection(s->conn);
        }
    MHD_run(h->d);
    MHD_stop_daemon(h->d);
    if (h->handler_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, h->handler_ref);
    h->ctx->http_open--;
    keel__lua_ctx_release(h->ctx);
    free(h);
}

static int s_close(lua_State *L)
{
    http **p = keel__lua_checkudata(L, 1, &mt_http);
    if (*p && (*p)->polling)
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "the server cannot close while it answers a request");
    if (*p) http_stop(L, *p);
    *p = NULL;
    return 0;
}

/* server:poll([seconds]) -> true; false when this server is already polling (a request's own work
 * reached it again: it waits for the outer poll). */
/* Suspended streams are out of MHD's event loop, so a client that went away (killed, its
 * network gone) would keep its socket until the next change is pushed: each poll looks at their
 * sockets and hands the closed ones back to MHD, which closes them at once. */
static void streams_reap(http *h)
{
    for (stream *s = h->streams; s; s = s->next) {
        if (!s->suspended) continue;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(s->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci) continue;
        struct pollfd p = { .fd = ci->connect_fd, .events = POLLIN };
        if (poll(&p, 1, 0) <= 0) continue;
        char c;
        bool closed = (p.revents & (POLLHUP | POLLERR)) ||
                      ((p.revents & POLLIN) && recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0);
        if (!closed) continue;
        s->gone = true;
        s->suspended = false;
        MHD_resume_connection(s->conn);
    }
}

/* server:streams() -> the event streams open (a test's view of the reaping above). */
static int s_streams(lua_State *L)
{
    http *h = check_http(L, 1, true);
    lua_Integer n = 0;
    for (stream *s = h->streams; s; s = s->next) n++;
    lua_pushinteger(L, n);
    return 1;
}

static int s_poll(lua_State *L)
{
    http *h = check_http(L, 1, true);
    if (!lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TNUMBER)
        return keel__lua_argerror(L, 2, "seconds expected, got %s", luaL_typename(L, 2));
    double wait = lua_isnumber(L, 2) ? lua_tonumber(L, 2) : 0;
    if (!(wait < 86400)) wait = 86400;
    if (h->polling) {
        lua_pushboolean(L, 0);
        return 1;
    }
    h->polling = true;
    streams_reap(h);
    lua_State *saved = h->L;
    h->L = L;
    if (wait > 0) MHD_run_wait(h->d, (int32_t)(wait * 1000 + 0.5));
    else MHD_run(h->d);
    h->L = saved;
    h->polling = false;
    lua_pushboolean(L, 1);
    return 1;
}

static int s_port(lua_State *L)
{
    lua_pushinteger(L, check_http(L, 1, true)->port);
    return 1;
}

/* server:push(id, text) -> true; false when the stream is gone. */
static int s_push(lua_State *L)
{
    http *h = check_http(L, 1, true);
    stream *s = find_stream(h, check_id(L, 2));
    if (lua_type(L, 3) != LUA_TSTRING)
        return keel__lua_argerror(L, 3, "a string expected, got %s", luaL_typename(L, 3));
    size_t len;
    const char *text = lua_tolstring(L, 3, &len);
    if (!s) {
        lua_pushboolean(L, 0);
        return 1;
    }
    msg *m = malloc(sizeof *m + len);
    if (!m) return luaL_error(L, "out of memory");
    m->next = NULL, m->len = len, m->off = 0;
    memcpy(m->data, text, len);
    if (s->tail) s->tail->next = m;
    else s->head = m;
    s->tail = m;
    s->count++;
    if (s->suspended) {
        s->suspended = false;
        MHD_resume_connection(s->conn);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* server:pending(id) -> messages queued and not yet sent whole, or nil when the stream is gone. */
static int s_pending(lua_State *L)
{
    stream *s = find_stream(check_http(L, 1, true), check_id(L, 2));
    if (!s) return 0;
    lua_pushinteger(L, (lua_Integer)s->count);
    return 1;
}

/* server:drop(id): forgets the queued messages not yet begun (the one being sent finishes). */
static int s_drop(lua_State *L)
{
    stream *s = find_stream(check_http(L, 1, true), check_id(L, 2));
    if (!s || !s->head) return 0;
    msg *keep = s->head->off ? s->head : NULL;
    msg *m = keep ? keep->next : s->head;
    while (m) {
        msg *n = m->next;
        free(m);
        m = n;
    }
    if (keep) keep->next = NULL;
    s->head = s->tail = keep;
    s->count = keep ? 1 : 0;
    return 0;
}

static int s_tostring(lua_State *L)
{
    http *h = check_http(L, 1, false);
    if (h) lua_pushfstring(L, "keel.Server (port %d)", (int)h->port);
    else lua_pushliteral(L, "keel.Server (closed)");
    return 1;
}

/* Option `key` of the table at 1: an integer in lo..hi, or `def` when absent (the stack as it was). */
static lua_Integer opt_count(lua_State *L, const char *key, lua_Integer def, lua_Integer lo, lua_Integer hi)
{
    lua_getfield(L, 1, key);
    lua_Integer v = def;
    if (!lua_isnil(L, -1)) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo || lua_tointeger(L, -1) > hi)
            return keel__lua_argerror(L, 1, "%s must be an integer in %d..%d", key, (int)lo, (int)hi);
        v = lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

/* keel.core.channel.http_open{ port = n, bind = "127.0.0.1", handler = fn, max_connections = n,
 * per_ip = n, header_timeout = seconds } */
static int m_http_open(lua_State *L)
{
    if (!lua_istable(L, 1))
        return keel__lua_argerror(L, 1, "an options table expected, got %s", luaL_typename(L, 1));
    lua_getfield(L, 1, "port");
    if (!lua_isnil(L, -1) && !lua_isinteger(L, -1)) return keel__lua_argerror(L, 1, "port must be an integer");
    lua_Integer port = lua_isnil(L, -1) ? 27760 : lua_tointeger(L, -1);
    lua_getfield(L, 1, "bind");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
        return keel__lua_argerror(L, 1, "bind must be an address string");
    const char *bind = lua_isnil(L, -1) ? "127.0.0.1" : lua_tostring(L, -1);
    lua_getfield(L, 1, "handler");
    if (!lua_isfunction(L, -1)) return keel__lua_argerror(L, 1, "handler must be a function");
    if (port < 0 || port > 65535) return keel__lua_argerror(L, 1, "port must be 0..65535, got %d", (int)port);
    /* a flood of idle connections must not lock clients out: a cap in all and per address, and
     * a connection that has not sent its request's headers within header_timeout seconds is
     * closed (a request under way gets HTTP_REQUEST_TIMEOUT, see on_request) */
    lua_Integer max_conn = opt_count(L, "max_connections", HTTP_MAX_CONNECTIONS, 1, 65536);
    lua_Integer per_ip = opt_count(L, "per_ip", HTTP_PER_IP, 1, 65536);
    lua_Integer header_timeout = opt_count(L, "header_timeout", HTTP_HEADER_TIMEOUT, 1, 3600);
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    const struct sockaddr *sa;
    unsigned flags = MHD_ALLOW_SUSPEND_RESUME;
    if (inet_pton(AF_INET, bind, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET, a4.sin_port = htons((uint16_t)port);
        sa = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, bind, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6, a6.sin6_port = htons((uint16_t)port);
        sa = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else return keel__lua_argerror(L, 1, "bind must be a numeric IPv4 or IPv6 address, got '%s'", bind);
    http **p = lua_newuserdatauv(L, sizeof *p, 0); /* closed until the daemon runs: nothing leaks on a raise */
    *p = NULL;
    keel__lua_setmt(L, &mt_http);
    http *h = calloc(1, sizeof *h);
    if (!h) return luaL_error(L, "out of memory");
    h->handler_ref = LUA_NOREF;
    errno = 0;
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)header_timeout, MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conn,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)per_ip, MHD_OPTION_END);
    if (!h->d) {
        int e = errno;
        free(h);
        lua_pushnil(L);
        lua_pushfstring(L, "cannot listen on %s port %d: %s", bind, (int)port,
                        e ? strerror(e) : "the HTTP server did not start");
        return 2;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : (uint16_t)port;
    lua_pushvalue(L, 4); /* the handler */
    h->handler_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    *p = h;
    h->ctx = keel__lua_upctx(L);
    h->ctx->http_open++;
    h->ctx->refs++; /* a server collected after its state closed still counts itself out */
    return 1;
}

/* keel.core.channel.realpath(path) -> the path with every symbolic link, "." and ".." resolved
 * (realpath(3)), or nil and why: world.save judges where a file really lands by it. */
static int m_realpath(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char *r = realpath(path, NULL);
    if (!r) {
        lua_pushnil(L);
        lua_pushstring(L, strerror(errno));
        return 2;
    }
    lua_pushstring(L, r);
    free(r);
    return 1;
}

/* keel.core.channel.random_token() -> 32 hex digits from the system's random source. */
static int m_random_token(lua_State *L)
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return keel__lua_raisef(L, KEEL_IO_ERROR, "no random source: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    char hex[33];
    for (size_t i = 0; i < sizeof b; i++) snprintf(hex + 2 * i, 3, "%02x", b[i]);
    lua_pushlstring(L, hex, 32);
    return 1;
}

static const char step_key = 0; /* registry: the function servers run at each step's start */

void keel__lua_http_step(lua_State *L, keel_lua_ctx *ctx, keel_world *w)
{
    if (!lua_checkstack(L, 4)) return;
    int top = lua_gettop(L);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &step_key) == LUA_TFUNCTION) {
        keel__lua_push_world_of(L, ctx, w);
        (void)lua_pcall(L, 1, 0, 0); /* a request's failure is answered to its client, not raised here */
    }
    lua_settop(L, top);
}

/* keel.core.channel.http_on_step(fn): fn(world) runs at the start of each step while a server is open. */
static int m_on_step(lua_State *L)
{
    if (!lua_isnoneornil(L, 1) && !lua_isfunction(L, 1))
        return keel__lua_argerror(L, 1, "a function expected, got %s", luaL_typename(L, 1));
    lua_settop(L, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &step_key);
    return 0;
}

/* keel.core.channel.clock() -> seconds on a monotonic clock (the serve loop's frame pacing). */
static int m_clock(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

void keel__lua_open_http(lua_State *L, keel_lua_ctx *ctx)
{
    lua_pushcfunction(L, m_clock);
    lua_setfield(L, -2, "clock");
    lua_pushcfunction(L, m_on_step);
    lua_setfield(L, -2, "http_on_step");
    static const luaL_Reg methods[] = { { "poll", s_poll }, { "port", s_port },   { "push", s_push }, { "streams", s_streams },
                                        { "pending", s_pending }, { "drop", s_drop }, { "close", s_close },
                                        { NULL, NULL } };
    static const luaL_Reg meta[] = {
        { "__gc", s_close }, { "__close", s_close }, { "__tostring", s_tostring }, { NULL, NULL }
    };
    keel__lua_newmt(L, &mt_http);
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushlightuserdata(L, ctx);
    lua_pushcclosure(L, m_http_open, 1);
    lua_setfield(L, -2, "http_open");
    lua_pushcfunction(L, m_random_token);
    lua_setfield(L, -2, "random_token");
    lua_pushcfunction(L, m_realpath);
    lua_setfield(L, -2, "realpath");
}
