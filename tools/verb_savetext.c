/* verb_savetext.c — save games as text in the file verbs (design/saving.md): `keel dump
 * SLOT.save` prints the slot's text, `keel cook SLOT.yaml -o SLOT.save` writes the slot back
 * (the same bytes as the slot dumped), `keel fmt [--check] SLOT.yaml` keeps the text canonical.
 * verb_files.c asks here first whether a file is a slot or a save game's text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool keel_cli_is_save_text(const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end && (*p == '#' || *p == '\n' || *p == '\r')) { /* comments and blank lines first */
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    return (size_t)(end - p) >= 10 && memcmp(p, "keel_save:", 10) == 0;
}

static char *read_head(const char *path, size_t *len)
{
    char *text = NULL;
    if (keel_read_file(path, (size_t)64 << 20, &text, len, NULL) != KEEL_OK) return NULL;
    return text;
}

bool keel_cli_file_is_slot(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[8];
    bool is = f && fread(magic, 1, 8, f) == 8 && memcmp(magic, "KEELSAVE", 8) == 0;
    if (f) fclose(f);
    return is;
}

bool keel_cli_file_is_save_text(const char *path)
{
    size_t len = 0;
    char *text = read_head(path, &len);
    bool is = text && keel_cli_is_save_text(text, len);
    free(text);
    return is;
}

static int exit_of(keel_status s)
{
    return s == KEEL_IO_ERROR ? KEEL_EXIT_USAGE : KEEL_EXIT_INPUT;
}

int keel_cli_dump_slot(keel_cli *cli, const char *path, const char *out)
{
    keel_diags d;
    keel_diags_init(&d);
    char *text = NULL;
    size_t len = 0;
    int code = KEEL_EXIT_OK;
    keel_status s = keel_persist_dump_slot(path, &text, &len, &d);
    if (s != KEEL_OK) code = exit_of(s);
    else if (out) {
        if (keel_write_atomic(out, text, len, &d) != KEEL_OK) code = KEEL_EXIT_USAGE;
    } else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
        fprintf(stderr, "%s: dump: cannot write to standard output\n", cli->progname);
        code = KEEL_EXIT_USAGE;
    }
    keel_cli_print_diags(&d, path);
    keel_diags_free(&d);
    free(text);
    return code;
}

int keel_cli_cook_save_text(keel_cli *cli, const char *path, const char *out)
{
    (void)cli;
    keel_diags d;
    keel_diags_init(&d);
    size_t len = 0;
    char *text = NULL;
    keel_status s = keel_read_file(path, (size_t)1 << 30, &text, &len, &d);
    if (s == KEEL_OK) s = keel_persist_cook_text(text, len, path, out, &d);
    if (s == KEEL_OK) printf("wrote %s: a save game\n", out);
    keel_cli_print_diags(&d, path);
    keel_diags_free(&d);
    free(text);
    return s == KEEL_OK ? KEEL_EXIT_OK : exit_of(s);
}

int keel_cli_fmt_save_text(const char *path, const char *old, size_t oldlen, bool check, keel_diags *d)
{
    char *text = NULL;
    size_t len = 0;
    keel_status s = keel_persist_format_text(old, oldlen, path, &text, &len, d);
    int code = KEEL_EXIT_OK;
    if (s != KEEL_OK) code = exit_of(s);
    else if (oldlen != len || memcmp(old, text, len) != 0) {
        if (check) {
            if (!keel_cli_print_diff(path, old, oldlen, text, len))
                printf("%s: not in canonical form (install diffutils to see the difference)\n", path);
            code = KEEL_EXIT_INPUT;
        } else if (keel_write_atomic(path, text, len, d) != KEEL_OK) {
            code = KEEL_EXIT_USAGE;
        }
    }
    free(text);
    return code;
}
