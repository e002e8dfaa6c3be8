/* verb_merge.c — `keel merge`: the git merge driver for scenes (design/merge.md), its --install
 * and --take; the merge itself is core/files/merge.c (keel_merge.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "keel_merge.h"
#include "lua_host.h"

/* Runs `argv` (a git command) with stdout into *out (malloc'd, NUL-terminated) when `out` is
 * given; returns its exit status, or -1 when it could not run. */
static int run_git(char *const argv[], char **out, size_t *outlen)
{
    int fds[2] = { -1, -1 };
    if (out && pipe(fds) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        if (out) {
            close(fds[0]);
            close(fds[1]);
        }
        return -1;
    }
    if (pid == 0) {
        if (out) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "keel: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(255);
    }
    size_t len = 0, cap = 0;
    char *buf = NULL;
    if (out) {
        close(fds[1]);
        for (;;) {
            if (len + 4096 + 1 > cap) {
                cap = cap ? 2 * cap : 65536;
                buf = realloc(buf, cap);
                if (!buf) abort(); /* keel treats OOM as fatal */
            }
            ssize_t r = read(fds[0], buf + len, 4096);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            len += (size_t)r;
        }
        close(fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            free(buf);
            return -1;
        }
    if (out) {
        if (!buf) buf = malloc(1);
        if (!buf) abort();
        buf[len] = '\0';
        *out = buf;
        *outlen = len;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- --install ---- */

static int install(keel_cli *cli, int npat, char **pats)
{
    char *set_name[] = { "git", "config", "merge.keel.name", "keel scene merge (entities, components, fields)",
                         NULL };
    char *set_driver[] = { "git", "config", "merge.keel.driver", "keel merge %O %A %B", NULL };
    if (run_git(set_name, NULL, NULL) != 0 || run_git(set_driver, NULL, NULL) != 0) {
        fprintf(stderr, "%s: merge --install: git config failed (is this a git repository?)\n", cli->progname);
        return KEEL_EXIT_USAGE;
    }
    char *top_argv[] = { "git", "rev-parse", "--show-toplevel", NULL };
    char *top = NULL;
    size_t toplen = 0;
    if (run_git(top_argv, &top, &toplen) != 0) {
        free(top);
        fprintf(stderr, "%s: merge --install: not in a git work tree\n", cli->progname);
        return KEEL_EXIT_USAGE;
    }
    while (toplen > 0 && (top[toplen - 1] == '\n' || top[toplen - 1] == '\r')) top[--toplen] = '\0';
    size_t plen = toplen + 32;
    char *path = malloc(plen);
    if (!path) abort();
    snprintf(path, plen, "%s/.gitattributes", top);
    free(top);
    keel_diags d;
    keel_diags_init(&d);
    char *old = NULL;
    size_t oldlen = 0;
    if (access(path, F_OK) == 0 && keel_read_file(path, (size_t)16 << 20, &old, &oldlen, &d) != KEEL_OK) {
        keel_cli_print_diags(&d, path);
        keel_diags_free(&d);
        free(path);
        return KEEL_EXIT_USAGE;
    }
    /* the old text, then each pattern's line that is not there yet */
    size_t cap = oldlen + 2, len = oldlen;
    char *text = malloc(cap);
    if (!text) abort();
    if (oldlen) memcpy(text, old, oldlen);
    if (len && text[len - 1] != '\n') text[len++] = '\n';
    static char *const default_pat[] = { "*.yaml" };
    char *const *p = npat ? pats : default_pat;
    int n = npat ? npat : 1;
    for (int i = 0; i < n; i++) {
        char line[1024];
        int ll = snprintf(line, sizeof line, "%s merge=keel\n", p[i]);
        if (ll <= 0 || (size_t)ll >= sizeof line) continue;
        text[len] = '\0';
        bool present = false;
        for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
            if (strncmp(s, line, (size_t)ll) == 0) present = true;
        if (present) continue;
        cap += (size_t)ll + 1;
        text = realloc(text, cap);
        if (!text) abort();
        memcpy(text + len, line, (size_t)ll);
        len += (size_t)ll;
    }
    int code = KEEL_EXIT_OK;
    if (keel_write_atomic(path, text, len, &d) != KEEL_OK) code = KEEL_EXIT_USAGE;
    keel_cli_print_diags(&d, path);
    keel_diags_free(&d);
    free(old);
    free(text);
    free(path);
    return code;
}

/* ---- the merge ---- */

/* A file git hands over, whole; `missing_ok`: an absent file reads as empty. */
static bool read_all(const char *path, char **out, size_t *len, keel_diags *d)
{
    keel_limits lim = keel_limits_default();
    return keel_read_file(path, lim.document_size, out, len, d) == KEEL_OK;
}

/* Not a scene: git merge-file's text merge, its markers and all. */
static int text_merge(const keel_cli *cli, char **paths, const char *out)
{
    char *argv[] = { "git", "merge-file", "-p", paths[1], paths[0], paths[2], NULL };
    char *text = NULL;
    size_t len = 0;
    int rc = run_git(argv, &text, &len);
    if (rc < 0 || rc > 127) {
        free(text);
        fprintf(stderr, "%s: merge: git merge-file failed\n", cli->progname);
        return KEEL_EXIT_USAGE;
    }
    keel_diags d;
    keel_diags_init(&d);
    int code = rc == 0 ? KEEL_EXIT_OK : KEEL_EXIT_INPUT;
    if (keel_write_atomic(out, text, len, &d) != KEEL_OK) code = KEEL_EXIT_USAGE;
    keel_cli_print_diags(&d, out);
    keel_diags_free(&d);
    free(text);
    return code;
}

/* keel_merge_scenes and keel_merge_take check what they read and write as keel check does: run
 * from the program's Lua state (keel_lua_host_call), so the game's Lua kinds migrate and validate
 * there too. */
typedef struct merge_call {
    const char *const *texts;
    const size_t *lens;
    const char *const *names;
    char **out;
    size_t *outlen, *count;
    keel_diags *d;
    /* --take */
    const char *text, *name;
    size_t len;
    bool theirs;
    const char *const *paths;
    size_t npaths;
} merge_call;

static int run_merge(void *ud)
{
    merge_call *m = ud;
    return (int)keel_merge_scenes(m->texts, m->lens, m->names, NULL, m->out, m->outlen, m->count, m->d);
}

static int run_take(void *ud)
{
    merge_call *m = ud;
    return (int)keel_merge_take(m->text, m->len, m->name, m->theirs, m->paths, m->npaths, m->out, m->outlen,
                                m->count, m->d);
}

static int scene_merge(lua_State *L, keel_cli *cli, char **paths, const char *out, char *texts[3], size_t lens[3])
{
    keel_cli_setup(L, cli, true); /* kinds are optional here: those that load make the result canonical */
    keel_diags d;
    keel_diags_init(&d);
    char *merged = NULL;
    size_t mlen = 0, nconf = 0;
    const char *names[3] = { paths[0], paths[1], paths[2] };
    merge_call mc = { .texts = (const char *const *)texts, .lens = lens, .names = names, .out = &merged,
                      .outlen = &mlen, .count = &nconf, .d = &d };
    keel_status st = (keel_status)keel_lua_host_call(L, run_merge, &mc);
    int code = KEEL_EXIT_OK;
    if (st != KEEL_OK) {
        keel_cli_print_diags(&d, NULL);
        fprintf(stderr, "%s: merge: nothing written\n", cli->progname);
        code = KEEL_EXIT_USAGE;
    } else if (keel_write_atomic(out, merged, mlen, &d) != KEEL_OK) {
        keel_cli_print_diags(&d, out);
        code = KEEL_EXIT_USAGE;
    } else if (nconf) {
        /* git's %A is a temporary name: the message names no file */
        fprintf(stderr,
                "%s: merge: %zu conflict%s listed under conflicts: in the merged scene, ours' value "
                "kept at each (keel merge --take ours|theirs FILE [PATH...] resolves them)\n",
                cli->progname, nconf, nconf == 1 ? "" : "s");
        code = KEEL_EXIT_INPUT;
    }
    keel_diags_free(&d);
    free(merged);
    return code;
}

static int take(lua_State *L, keel_cli *cli, const char *which, int n, char **args)
{
    bool theirs = strcmp(which, "theirs") == 0;
    if (!theirs && strcmp(which, "ours") != 0) {
        keel_cli_usage_error(cli, "merge: --take takes ours or theirs, not '%s'", which);
        return KEEL_EXIT_USAGE;
    }
    if (n < 1) {
        keel_cli_usage_error(cli, "merge: --take %s needs FILE [PATH...]", which);
        return KEEL_EXIT_USAGE;
    }
    keel_cli_setup(L, cli, true);
    keel_diags d;
    keel_diags_init(&d);
    char *text = NULL, *out = NULL;
    size_t len = 0, outlen = 0, remaining = 0;
    int code = KEEL_EXIT_OK;
    if (!read_all(args[0], &text, &len, &d)) {
        code = KEEL_EXIT_USAGE;
    } else if (keel_lua_host_call(L, run_take,
                                  &(merge_call){ .text = text, .len = len, .name = args[0], .theirs = theirs,
                                                 .paths = (const char *const *)args + 1, .npaths = (size_t)(n - 1),
                                                 .out = &out, .outlen = &outlen, .count = &remaining, .d = &d })
               != KEEL_OK) {
        code = KEEL_EXIT_INPUT;
    } else if (keel_write_atomic(args[0], out, outlen, &d) != KEEL_OK) {
        code = KEEL_EXIT_USAGE;
    } else if (remaining) {
        fprintf(stderr, "%s: %zu conflict%s still listed in %s\n", cli->progname, remaining,
                remaining == 1 ? "" : "s", args[0]);
    }
    keel_cli_print_diags(&d, args[0]);
    keel_diags_free(&d);
    free(text);
    free(out);
    return code;
}

int keel_cli_merge(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    const char *out = NULL, *which = NULL;
    bool inst = false;
    const keel_cli_opt opts[] = {
        { "-o", &out, NULL }, { "--output", &out, NULL }, { "--take", &which, NULL }, { "--install", NULL, &inst }
    };
    int n = keel_cli_parse(cli, argc, argv, opts, 4);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (inst) return install(cli, n, argv);
    if (which) return take(L, cli, which, n, argv);
    if (n != 3) {
        keel_cli_usage_error(cli, "merge: expected BASE OURS THEIRS");
        return KEEL_EXIT_USAGE;
    }
    if (!out) out = argv[1];
    char *texts[3] = { NULL, NULL, NULL };
    size_t lens[3] = { 0, 0, 0 };
    keel_diags d;
    keel_diags_init(&d);
    bool ok = true;
    for (int s = 0; s < 3; s++) ok = read_all(argv[s], &texts[s], &lens[s], &d) && ok;
    int code;
    if (!ok) {
        keel_cli_print_diags(&d, NULL);
        code = KEEL_EXIT_USAGE;
    } else if (!keel_merge_looks_like_scene(texts[1], lens[1]) &&
               !keel_merge_looks_like_scene(texts[2], lens[2])) {
        code = text_merge(cli, argv, out);
    } else {
        code = scene_merge(L, cli, argv, out, texts, lens);
    }
    keel_diags_free(&d);
    for (int s = 0; s < 3; s++) free(texts[s]);
    return code;
}
