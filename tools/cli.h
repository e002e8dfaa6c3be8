/* cli.h — what the files of the `keel` program share (tools/, not bench/). */
#ifndef KEEL_TOOLS_CLI_H
#define KEEL_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <lua.h>
#include "keel.h"

/* Exit codes (DESIGN.md): 0 ok, 1 the input has errors, 2 usage or environment. */
enum { KEEL_EXIT_OK = 0, KEEL_EXIT_INPUT = 1, KEEL_EXIT_USAGE = 2 };

/* Options shared by every verb. */
typedef struct keel_cli {
    const char *progname;
    const char **kinds_dirs;   /* --kinds, in order given */
    size_t kinds_count;        /* 0: the defaults apply */
    const char *assets;        /* --assets FILE, or NULL */
    const char *scene;         /* the verb's scene, set before keel_cli_setup: its nearest kinds/ is looked at */
    bool watch;                /* --watch (run, serve): the scene file and kind files are polled between frames */
} keel_cli;

/* ---- tools/embed.c ---- */

/* Opens the standard libraries, preloads keel.core and puts keel's Lua directory
 * ahead of the default package.path: the source tree's for the program in the
 * build tree, else the installed one (found from the program's own directory,
 * then the configured install directory). */
void keel_embed_open(lua_State *L);
/* A bundled file or directory: `src_rel` under the source tree for the program
 * in the build tree ("lua/kinds"), else `inst_rel` under the installed data
 * directory ("kinds"). Returns a malloc'd, resolved path, or NULL when absent. */
char *keel_embed_data_path(const char *src_rel, const char *inst_rel);

/* ---- the verbs: each takes the arguments after the verb, returns an exit code ---- */

/* tools/verb_files.c */
int keel_cli_check(lua_State *L, keel_cli *cli, int argc, char **argv);
int keel_cli_fmt(lua_State *L, keel_cli *cli, int argc, char **argv);
int keel_cli_cook(lua_State *L, keel_cli *cli, int argc, char **argv);
int keel_cli_dump(lua_State *L, keel_cli *cli, int argc, char **argv);
/* An asset manifest rather than a scene: named assets.yaml, or the --assets file. */
bool keel_cli_is_manifest(const keel_cli *cli, const char *path);

/* tools/verb_kinds.c */
int keel_cli_kinds(lua_State *L, keel_cli *cli, int argc, char **argv);

/* tools/verb_merge.c */
int keel_cli_merge(lua_State *L, keel_cli *cli, int argc, char **argv);
/* tools/verb_mcp.c */
int keel_cli_mcp(lua_State *L, keel_cli *cli, int argc, char **argv);

/* tools/verb_run.c */
int keel_cli_run(lua_State *L, keel_cli *cli, int argc, char **argv);
/* Pushes the bundled demo scene's path (`keel run` without a SCENE) and returns it, kept on the
 * stack for the rest of the verb; NULL after saying it is not installed. */
const char *keel_cli_push_demo(lua_State *L, keel_cli *cli);
/* verb_net.c: `keel run [SCENE] --host [PORT]` / `keel run --connect ADDR:PORT` (argv as keel_cli_run's);
 * returns -1 when neither flag is there (an ordinary run) */
int keel_cli_run_net(lua_State *L, keel_cli *cli, int argc, char **argv);
/* argv is the program's whole argv; argv[script_index] names the script. */
int keel_cli_script(lua_State *L, keel_cli *cli, int argc, char **argv, int script_index);

/* tools/verb_serve.c */
int keel_cli_serve(lua_State *L, keel_cli *cli, int argc, char **argv);
/* Serves the World at stack index `world` (the live channel) until ctrl-c, or `frames` frames of `dt`
 * seconds when >= 0; `paused`: nothing steps until a client asks. Returns an exit code. */
int keel_cli_serve_world(lua_State *L, keel_cli *cli, int world, const char *scene, lua_Integer port,
                         const char *bind, bool paused, lua_Integer frames, double dt);
/* A port number 0..65535 (0: any free one); false after a usage error. */
bool keel_cli_parse_port(keel_cli *cli, const char *s, lua_Integer *port);

/* tools/verb_replay.c */
int keel_cli_replay(lua_State *L, keel_cli *cli, int argc, char **argv);

/* tools/verb_uuid.c */
int keel_cli_uuid(lua_State *L, keel_cli *cli, int argc, char **argv);

/* tools/verb_new.c */
int keel_cli_new(lua_State *L, keel_cli *cli, int argc, char **argv);

/* tools/repl.c */
int keel_cli_repl(lua_State *L, keel_cli *cli, int argc, char **argv);

/* ---- tools/call.c: calling Lua from the program ---- */

/* A frame loop's stop request: keel_cli_loop_signals(L, true, term) routes ctrl-c (and SIGTERM when
 * `term`) to a flag, and interrupts a served request L is answering; (L, false, term) restores
 * them; keel_cli_l_loop_stopped is its Lua reader. */
void keel_cli_loop_signals(lua_State *L, bool on, bool term);
bool keel_cli_loop_stopped(void);
int keel_cli_l_loop_stopped(lua_State *L);
double keel_cli_now(void); /* monotonic seconds: frame loops, the load progress line */
int keel_cli_l_now(lua_State *L); /* keel_cli_now for Lua: a frame loop's clock */

/* lua_pcall of the function under its `narg` arguments, with a handler that
 * adds a traceback (or, for an error object, the user's line that raised it).
 * `interruptible`: ctrl-c stops the Lua code instead of the program. */
int keel_cli_call(lua_State *L, int narg, int nres, bool interruptible);
/* Whether ctrl-c reached the last interruptible keel_cli_call. */
bool keel_cli_interrupted(void);
/* Prints the error message on top of the stack as "keel: message" and pops it. */
void keel_cli_report(const keel_cli *cli, lua_State *L);
/* require(name) into a global; false (after reporting) when it fails. */
bool keel_cli_require(const keel_cli *cli, lua_State *L, const char *name, const char *global);
/* Pushes keel.load(path)'s world and returns -1, its warnings printed as `keel check` prints
 * them; on failure prints why (the error object's own diagnostics) and returns the exit code. */
int keel_cli_load_world(lua_State *L, keel_cli *cli, const char *path);

/* ---- tools/kinds_find.c ---- */

/* Without --kinds: loads the bundled kinds, ./kinds and the nearest kinds/ from
 * cli->scene's folder upward (each directory once) through keel.kindfiles at
 * stack index `mod`, and sets its `searched` list. Returns the files that failed. */
int keel_cli_default_kinds(lua_State *L, int mod, const keel_cli *cli);
/* One stderr line when the warnings table at `warnings` says the scene at
 * `path` holds unknown kinds: how many components of which, where kinds were looked for. */
void keel_cli_unknown_summary(lua_State *L, const keel_cli *cli, const char *path, int warnings);

/* ---- tools/textdiff.c ---- */

/* Prints a unified diff from `old` to `text` under `label` by running `diff -u`
 * (diffutils); false when it could not be shown (no diff program, no temp file). */
bool keel_cli_print_diff(const char *label, const char *old, size_t oldlen, const char *text, size_t len);

/* ---- tools/progress.c ---- */

/* The program's load progress hook (keel_load_progress_default, set by main): on stderr, for a
 * scene of 10 MB or more when stderr is a terminal (KEEL_PROGRESS=1: every load; 0: none). */
void keel_cli_progress(void *ctx, const keel_load_progress *p);

/* ---- tools/keel.c ---- */

/* A verb's own option: with `arg` it takes a value, else it sets `flag`. */
typedef struct keel_cli_opt {
    const char *name;   /* "--frames", "-o" */
    const char **arg;
    bool *flag;
} keel_cli_opt;
/* Parses a verb's arguments in place: common options go to `cli`, the verb's
 * to `opts`, positional arguments are moved to the front of argv. Returns
 * their count, or -1 after printing a usage error. */
int keel_cli_parse(keel_cli *cli, int argc, char **argv, const keel_cli_opt *opts, size_t nopts);
/* Loads the kinds directories (given, or the defaults) through the Lua
 * module keel.kindfiles (which reload() uses too) and freezes the registry.
 * Returns -1 when all went well, else the exit code; `lenient` (the REPL)
 * reports failures and goes on. */
int keel_cli_setup(lua_State *L, keel_cli *cli, bool lenient);
void keel_cli_usage_error(const keel_cli *cli, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints every diagnostic as FILE:LINE:COL: error: CODE: message; `file` is
 * used when a diagnostic has none. Returns the number of errors. */
size_t keel_cli_print_diags(const keel_diags *d, const char *file);

/* ---- verb_savetext.c: save games as text in dump, cook and fmt ---- */
bool keel_cli_is_save_text(const char *text, size_t len);
bool keel_cli_file_is_slot(const char *path);
bool keel_cli_file_is_save_text(const char *path);
int keel_cli_dump_slot(keel_cli *cli, const char *path, const char *out);
int keel_cli_cook_save_text(keel_cli *cli, const char *path, const char *out);
int keel_cli_fmt_save_text(const char *path, const char *old, size_t oldlen, bool check, keel_diags *d);

#endif
