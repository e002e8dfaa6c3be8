/* fuzz_merge.c — libFuzzer target: three documents (split at "\n#--\n") through the scene merge
 * and, when it lists conflicts, --take ours and theirs; no crash, no leak, same bytes twice, and
 * the same result and diagnostics whether ours and theirs are read by spans or whole. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "files/merge.h"
#include "keel_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        keel_init();
        ready = 1;
    }
    keel_limits lim = keel_limits_default();
    lim.document_size = 1 << 20;
    lim.entities = 64;
    lim.components_per_entity = 16;
    lim.body_size = 4096;
    lim.string_length = 1024;
    lim.nesting_depth = 16;
    lim.hierarchy_depth = 16;
    lim.collection_length = 256;
    /* the three parts, each a NUL-terminated copy (the readers' texts are) */
    char *texts[3];
    size_t lens[3];
    const char *p = (const char *)data, *end = p + size;
    for (int s = 0; s < 3; s++) {
        const char *cut = NULL;
        for (const char *q = p; s < 2 && q + 5 <= end && !cut; q++)
            if (memcmp(q, "\n#--\n", 5) == 0) cut = q;
        const char *stop = cut ? cut : (s < 2 ? p : end);
        if (s < 2 && !cut) stop = end;
        lens[s] = (size_t)(stop - p);
        texts[s] = malloc(lens[s] + 1);
        if (!texts[s]) abort();
        memcpy(texts[s], p, lens[s]);
        texts[s][lens[s]] = '\0';
        p = cut ? cut + 5 : end;
    }
    const char *names[3] = { "base", "ours", "theirs" };
    char *out = NULL, *again = NULL;
    size_t len = 0, len2 = 0, n = 0, n2 = 0;
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_merge_scenes((const char *const *)texts, lens, names, &lim, &out, &len, &n, &d);
    {
        char *whole = NULL;
        size_t wlen = 0, wn = 0;
        keel_diags wd;
        keel_diags_init(&wd);
        keel_status wst = keel__merge_scenes_read((const char *const *)texts, lens, names, &lim, false, NULL,
                                                  &whole, &wlen, &wn, &wd);
        if (wst != st || wn != n || (whole == NULL) != (out == NULL) ||
            (whole && (wlen != len || memcmp(whole, out, len))))
            abort(); /* the span read differs from the whole read */
        if (wd.count != d.count) abort();
        for (size_t i = 0; i < d.count; i++)
            if (wd.items[i].code != d.items[i].code || wd.items[i].line != d.items[i].line ||
                wd.items[i].col != d.items[i].col || strcmp(wd.items[i].message, d.items[i].message) != 0 ||
                strcmp(wd.items[i].path, d.items[i].path) != 0)
                abort();
        free(whole);
        keel_diags_free(&wd);
    }
    if (st == KEEL_OK) {
        if (keel_merge_scenes((const char *const *)texts, lens, names, &lim, &again, &len2, &n2, NULL) != KEEL_OK ||
            len != len2 || memcmp(out, again, len) != 0 || n != n2)
            abort(); /* deterministic */
        for (int theirs = 0; n && theirs < 2; theirs++) {
            char *taken = NULL;
            size_t tlen = 0, left = 0;
            if (keel_merge_take(out, len, "merged", theirs, NULL, 0, &taken, &tlen, &left, NULL) == KEEL_OK &&
                left != 0)
                abort(); /* taking all leaves none */
            free(taken);
        }
    }
    free(out);
    free(again);
    keel_diags_free(&d);
    for (int s = 0; s < 3; s++) free(texts[s]);
    return 0;
}
