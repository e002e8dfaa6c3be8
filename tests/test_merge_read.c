/* test_merge_read.c — the scene merge's reading of ours and theirs by text spans (only what is
 * not byte-for-byte base's is parsed) against reading every side whole: the same merged bytes,
 * the same conflicts and the same diagnostics, on changes, conflicts, moved, reparented,
 * removed and added entities, comments, odd layouts, broken sides and random line edits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "keel.h"
#include "files/merge.h"

/* ---- scenes as text, laid out by hand ---- */

typedef struct ent {
    int id;             /* the UUID's number */
    int parent;         /* an id, or -1 */
    char name[48];      /* written as is (quotes included, if any) */
    int x, level;       /* core:transform's position.x, mod:tag's level */
    const char *extra;  /* lines after the name, written for items at column 1; NULL: none */
    const char *before; /* lines put before the item as they are (comments, blanks); NULL: none */
} ent;

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list again;
    va_copy(again, ap);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, again);
    va_end(again);
    b->n += (size_t)k;
}

/* Each line of `lines` with `indent` more spaces. */
static void put_indented(buf *b, const char *lines, int indent)
{
    for (const char *p = lines; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        put(b, "%*s%.*s", n > 1 ? indent : 0, "", (int)n, p);
        p += n;
    }
}

static const char *uuid(int id)
{
    static char s[8][40];
    static int at;
    at = (at + 1) % 8;
    snprintf(s[at], sizeof s[at], "5ce9e000-0000-4000-8000-%012d", id);
    return s[at];
}

/* A scene: `indent` spaces before each item's "- "; `tail` (or NULL) after the list. */
static char *scene(const ent *e, size_t n, int indent, const char *tail)
{
    buf b = { 0 };
    put(&b, "keel: 1\nscene:\n  uuid: %s\n  name: Spans\nroot: []\nentities:\n", uuid(999999));
    for (size_t i = 0; i < n; i++) {
        if (e[i].before) put(&b, "%s", e[i].before);
        put(&b, "%*s- uuid: %s\n%*s  name: %s\n", indent, "", uuid(e[i].id), indent, "", e[i].name);
        if (e[i].parent >= 0) put(&b, "%*s  parent: %s\n", indent, "", uuid(e[i].parent));
        if (e[i].extra) put_indented(&b, e[i].extra, indent);
        put(&b,
            "%*s  components:\n"
            "%*s  - kind: core:transform\n%*s    version: 1\n%*s    slot: 0\n"
            "%*s    body:\n%*s      position: [%d, 0, 0]\n"
            "%*s  - kind: mod:tag\n%*s    version: 1\n%*s    slot: 0\n"
            "%*s    body:\n%*s      level: %d\n",
            indent, "", indent, "", indent, "", indent, "", indent, "", indent, "", e[i].x, indent, "", indent, "",
            indent, "", indent, "", indent, "", e[i].level);
    }
    if (tail) put(&b, "%s", tail);
    if (!b.s) put(&b, "");
    return b.s;
}

/* 12 groups of 10: the first of each a parent of the other nine. */
#define NE 120
static void base_ents(ent *e)
{
    for (int i = 0; i < NE; i++) {
        e[i] = (ent){ .id = i + 1, .parent = i % 10 ? i - i % 10 + 1 : -1, .x = i, .level = i % 5 };
        snprintf(e[i].name, sizeof e[i].name, "Entity %d", i);
    }
}

/* ---- the two reads compared ---- */

static void same_diags(const keel_diags *a, const keel_diags *b)
{
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->errors, b->errors);
    assert_int_equal(a->warnings, b->warnings);
    for (size_t i = 0; i < a->count; i++) {
        const keel_diag *x = &a->items[i], *y = &b->items[i];
        assert_int_equal(x->code, y->code);
        assert_int_equal(x->severity, y->severity);
        assert_string_equal(x->message, y->message);
        assert_string_equal(x->path, y->path);
        assert_int_equal(x->file == NULL, y->file == NULL);
        if (x->file) assert_string_equal(x->file, y->file);
        assert_int_equal(x->line, y->line);
        assert_int_equal(x->col, y->col);
    }
}

typedef struct outcome {
    keel_status st;
    size_t conflicts;
    char *text; /* the merged text (NULL on failure) */
    keel__merge_reads how;
    keel_diags d;
} outcome;

static void outcome_free(outcome *o)
{
    free(o->text);
    keel_diags_free(&o->d);
}

/* Merges both ways, checks that they agree in every output, and returns the span read's. */
static outcome both_ways_lim(const char *b, const char *o, const char *t, const keel_limits *lim)
{
    const char *texts[3] = { b, o, t };
    size_t lens[3] = { strlen(b), strlen(o), strlen(t) };
    const char *names[3] = { "base.yaml", "ours.yaml", "theirs.yaml" };
    outcome r[2];
    for (int fast = 0; fast < 2; fast++) {
        memset(&r[fast], 0, sizeof r[fast]);
        keel_diags_init(&r[fast].d);
        size_t len = 0;
        r[fast].st = keel__merge_scenes_read(texts, lens, names, lim, fast, &r[fast].how, &r[fast].text, &len,
                                             &r[fast].conflicts, &r[fast].d);
        if (r[fast].text) assert_int_equal(len, strlen(r[fast].text));
    }
    assert_false(r[0].how.by_spans[1] || r[0].how.by_spans[2]);
    assert_int_equal(r[0].st, r[1].st);
    assert_int_equal(r[0].conflicts, r[1].conflicts);
    assert_int_equal(r[0].text == NULL, r[1].text == NULL);
    if (r[0].text) assert_string_equal(r[0].text, r[1].text);
    same_diags(&r[0].d, &r[1].d);
    outcome_free(&r[0]);
    return r[1];
}

static outcome both_ways(const char *b, const char *o, const char *t)
{
    return both_ways_lim(b, o, t, NULL);
}

/* ---- cases ---- */

/* Both sides edit, move, reparent, remove and add; some edits conflict. Only the items a side
 * changed are parsed. */
static void merge_read_edits_and_conflicts(void **state)
{
    (void)state;
    ent b[NE], o[NE + 2], t[NE + 2];
    base_ents(b);
    memcpy(o, b, sizeof b);
    memcpy(t, b, sizeof b);
    /* ours: fields, a rename, a reparent, a removal (of a leaf), an addition under a parent */
    o[3].x = 1000;
    o[15].level = 4;
    snprintf(o[22].name, sizeof o[22].name, "Renamed");
    o[37].parent = 51;
    size_t no = NE;
    memmove(&o[45], &o[46], (no - 46) * sizeof *o); /* entity 46 (index 45) removed */
    no--;
    o[no++] = (ent){ .id = 5001, .parent = 61, .x = 7, .level = 1, .name = "Added by ours" };
    /* theirs: other fields, the same field as ours differently (a conflict), a sibling moved to
     * the front of its group, an edit of what ours removed (a conflict), an addition */
    t[8].x = 88;
    t[3].x = 2000;
    t[45].level = 3;
    ent moved = t[77];
    memmove(&t[71], &t[70], 7 * sizeof *t); /* index 77 to the front of its siblings (index 71) */
    t[71] = moved;
    t[92].parent = -1;
    size_t nt = NE;
    t[nt++] = (ent){ .id = 6001, .parent = -1, .x = 9, .level = 2, .name = "Added by theirs" };
    char *bt = scene(b, NE, 0, NULL), *ot = scene(o, no, 0, NULL), *tt = scene(t, nt, 0, NULL);
    outcome r = both_ways(bt, ot, tt);
    assert_int_equal(r.st, KEEL_OK);
    assert_int_equal(r.conflicts, 2); /* 4's position.x; 46 edited against removed */
    assert_true(r.how.by_spans[1] && r.how.by_spans[2]);
    assert_in_range(r.how.parsed[1], 5, 8);
    assert_in_range(r.how.parsed[2], 5, 12);
    assert_non_null(strstr(r.text, "Added by ours"));
    assert_non_null(strstr(r.text, "Added by theirs"));
    outcome_free(&r);
    /* nothing changed on either side: nothing parsed, the merge is base */
    r = both_ways(bt, bt, bt);
    assert_int_equal(r.st, KEEL_OK);
    assert_int_equal(r.conflicts, 0);
    assert_true(r.how.by_spans[1] && r.how.by_spans[2]);
    assert_int_equal(r.how.parsed[1], 0);
    assert_int_equal(r.how.parsed[2], 0);
    outcome_free(&r);
    free(bt);
    free(ot);
    free(tt);
}

/* Comments and blank lines between and inside items, at column 1 too; quoted names, block and
 * flow scalars; an indented list; keys after the list. */
static void merge_read_comments_and_layouts(void **state)
{
    (void)state;
    static const char *const tails[3] = { NULL, "settings:\n  grid:\n    enabled: false\n", "# the end\n" };
    for (int indent = 0; indent <= 4; indent += 2)
        for (int k = 0; k < 3; k++) {
            ent b[NE], o[NE], t[NE];
            base_ents(b);
            b[2].extra = "  # a comment inside\n  enabled: true\n";
            b[5].before = "# a comment at column 1\n\n";
            b[6].extra = "  # x\n# at column 1, inside an item\n\n";
            snprintf(b[9].name, sizeof b[9].name, "\"quoted: name\"");
            b[11].extra = "  enabled: false # trailing\n";
            memcpy(o, b, sizeof b);
            memcpy(t, b, sizeof b);
            o[2].extra = "  # a comment changed\n  enabled: true\n"; /* a comment alone changes the bytes */
            o[6].x = 66;
            snprintf(o[9].name, sizeof o[9].name, "'single quoted'");
            t[5].before = "# another comment\n";
            t[11].level = 0;
            t[30].extra = "  enabled: false\n";
            char *bt = scene(b, NE, indent, tails[k]), *ot = scene(o, NE, indent, tails[k]),
                 *tt = scene(t, NE, indent, tails[k]);
            outcome r = both_ways(bt, ot, tt);
            assert_int_equal(r.st, KEEL_OK);
            assert_int_equal(r.conflicts, 0);
            assert_true(r.how.by_spans[1] && r.how.by_spans[2]);
            assert_in_range(r.how.parsed[1], 1, 3);
            assert_in_range(r.how.parsed[2], 1, 3);
            outcome_free(&r);
            free(bt);
            free(ot);
            free(tt);
        }
}

/* Layouts the cut guesses wrong or cannot take: the sides are read whole, or the guess is
 * caught; the results are those of reading whole. */
static void merge_read_layouts_not_cut(void **state)
{
    (void)state;
    ent b[12], o[12];
    for (int i = 0; i < 12; i++) {
        b[i] = (ent){ .id = i + 1, .parent = -1, .x = i, .level = 1 };
        snprintf(b[i].name, sizeof b[i].name, "E%d", i);
    }
    memcpy(o, b, sizeof b);
    o[4].x = 44;
    char *bt = scene(b, 12, 0, NULL), *ot = scene(o, 12, 0, NULL);
    /* a quoted name over lines whose second line looks like an item and a key at column 1 */
    static const char *const names[] = { "\"two\n- uuid: x\n  lines\"", "\"two\nroot: []\"", "'a\n# b'",
                                         "\"a\n  - b\"" };
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        ent t[12];
        memcpy(t, b, sizeof b);
        snprintf(t[7].name, sizeof t[7].name, "%s", names[k]);
        char *tt = scene(t, 12, 0, NULL);
        outcome r = both_ways(bt, ot, tt);
        outcome_free(&r);
        r = both_ways(tt, ot, tt); /* the same in base */
        outcome_free(&r);
        r = both_ways(tt, tt, bt);
        outcome_free(&r);
        free(tt);
    }
    /* an item at a different indent, a tab, a \r, a list that is not a block list */
    static const char *const edits[][2] = {
        { "- uuid: 5ce9e000-0000-4000-8000-000000000003", " - uuid: 5ce9e000-0000-4000-8000-000000000003" },
        { "  name: E5", "\tname: E5" },
        { "  name: E6", "  name: E6\r" },
        { "  name: E7", "  name: \"E\\u00857\"" },
        { "entities:\n", "entities: # listed\n" },
        { "entities:\n", "entities: !!seq\n" },
        { "root: []\n", "root: []\nconflicts: []\n" },
        { "root: []\n", "" },
        { "keel: 1\n", "" },
        { "entities:\n", "entities:\n- - nested\n" },
    };
    for (size_t k = 0; k < sizeof edits / sizeof *edits; k++) {
        const char *at = strstr(ot, edits[k][0]);
        assert_non_null(at);
        size_t pre = (size_t)(at - ot), cut = strlen(edits[k][0]), add = strlen(edits[k][1]);
        char *e = malloc(strlen(ot) - cut + add + 1);
        memcpy(e, ot, pre);
        memcpy(e + pre, edits[k][1], add);
        strcpy(e + pre + add, ot + pre + cut);
        outcome r = both_ways(bt, e, bt);
        outcome_free(&r);
        r = both_ways(e, ot, e);
        outcome_free(&r);
        free(e);
    }
    /* an empty base (a file both sides added), and a base that repeats a UUID */
    outcome r = both_ways("", ot, bt);
    assert_int_equal(r.st, KEEL_OK);
    outcome_free(&r);
    ent d[12];
    memcpy(d, b, sizeof b);
    d[8].id = d[3].id;
    char *dt = scene(d, 12, 0, NULL);
    r = both_ways(dt, ot, bt);
    assert_int_not_equal(r.st, KEEL_OK);
    outcome_free(&r);
    free(dt);
    free(bt);
    free(ot);
}

/* A side that does not load: a YAML error in a changed item, a repeated UUID, a parent that is
 * not there, a limit passed. Refused with the same words and positions either way. */
static void merge_read_broken_sides(void **state)
{
    (void)state;
    ent b[NE], o[NE];
    base_ents(b);
    char *bt = scene(b, NE, 0, NULL);
    for (int k = 0; k < 5; k++) {
        memcpy(o, b, sizeof b);
        if (k == 0) snprintf(o[30].name, sizeof o[30].name, "[unclosed");
        if (k == 1) o[40].id = o[41].id;
        if (k == 2) o[50].parent = 4242;
        if (k == 3) o[60].extra = "  name: twice\n";
        if (k == 4) snprintf(o[70].name, sizeof o[70].name, "%s", "\"x\\q\"");
        char *ot = scene(o, NE, 0, NULL);
        outcome r = both_ways(bt, ot, bt);
        assert_int_not_equal(r.st, KEEL_OK);
        assert_true(r.d.errors > 0);
        outcome_free(&r);
        free(ot);
    }
    /* limits: a string too long in a changed item, more entities than allowed */
    keel_limits lim = keel_limits_default();
    lim.string_length = 20;
    memcpy(o, b, sizeof b);
    snprintf(o[30].name, sizeof o[30].name, "a name longer than twenty bytes");
    char *ot = scene(o, NE, 0, NULL);
    outcome r = both_ways_lim(bt, ot, bt, &lim);
    assert_int_equal(r.st, KEEL_LIMIT_EXCEEDED);
    outcome_free(&r);
    lim = keel_limits_default();
    lim.entities = NE - 1;
    lim.collection_length = 64;
    r = both_ways_lim(bt, ot, bt, &lim);
    assert_int_not_equal(r.st, KEEL_OK);
    outcome_free(&r);
    free(ot);
    free(bt);
}

/* Random line edits on both sides (deleted, repeated, swapped, re-indented lines, digits
 * changed, comments put in): whatever the merge makes of them, both reads make the same. */
static void merge_read_random_line_edits(void **state)
{
    (void)state;
    ent b[40];
    for (int i = 0; i < 40; i++) {
        b[i] = (ent){ .id = i + 1, .parent = i % 8 ? i - i % 8 + 1 : -1, .x = i, .level = i % 3 };
        snprintf(b[i].name, sizeof b[i].name, "E%d", i);
    }
    char *bt = scene(b, 40, 0, NULL);
    /* the base's lines */
    char *lines[1024];
    size_t nl = 0;
    for (char *p = bt; *p && nl < 1024;) {
        char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) + 1 : strlen(p);
        lines[nl] = malloc(n + 1);
        memcpy(lines[nl], p, n);
        lines[nl++][n] = '\0';
        p += n;
    }
    unsigned seed = 12345;
#define RAND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    size_t by_spans = 0, merged = 0;
    for (int round = 0; round < 150; round++) {
        char *side[2];
        for (int s = 0; s < 2; s++) {
            char *l[1100];
            size_t n = nl;
            for (size_t i = 0; i < n; i++) l[i] = lines[i];
            char made[8][64];
            int edits = 1 + (int)(RAND() % 3);
            for (int k = 0; k < edits; k++) {
                size_t i = 6 + RAND() % (n - 6); /* inside the list */
                switch (RAND() % 16) {           /* a quarter of them likely to break the side */
                case 0:
                    memmove(&l[i], &l[i + 1], (n - i - 1) * sizeof *l);
                    n--;
                    break;
                case 1:
                    memmove(&l[i + 1], &l[i], (n - i) * sizeof *l);
                    n++;
                    break;
                case 2:
                    if (i + 1 < n) {
                        char *x = l[i];
                        l[i] = l[i + 1];
                        l[i + 1] = x;
                    }
                    break;
                case 3:
                    snprintf(made[k], sizeof made[k], " %s", l[i]);
                    l[i] = made[k];
                    break;
                case 4:
                case 5:
                case 6:
                case 7:
                case 8:
                case 9: { /* a value: the next position or level line */
                    while (i + 1 < n && !strstr(l[i], "position:") && !strstr(l[i], "level:")) i++;
                    snprintf(made[k], sizeof made[k], "%s", l[i]);
                    char *dg = strpbrk(made[k], "0123456789");
                    if (dg) *dg = (char)('0' + RAND() % 10);
                    l[i] = made[k];
                    break;
                }
                default:
                    memmove(&l[i + 1], &l[i], (n - i) * sizeof *l);
                    l[i] = RAND() % 2 ? "# a comment\n" : "\n";
                    n++;
                }
            }
            buf o = { 0 };
            for (size_t i = 0; i < n; i++) put(&o, "%s", l[i]);
            side[s] = o.s;
        }
        outcome r = both_ways(bt, side[0], side[1]);
        by_spans += r.how.by_spans[1] + r.how.by_spans[2];
        merged += r.st == KEEL_OK;
        outcome_free(&r);
        free(side[0]);
        free(side[1]);
    }
    /* some edits break a side (read whole, refused), but not most */
    assert_true(by_spans > 150);
    assert_true(merged > 50);
    for (size_t i = 0; i < nl; i++) free(lines[i]);
    free(bt);
}

/* A merged scene that does not load (an entity field naming what ours removed): the merged
 * load's diagnostics point into theirs' text, where the span read must put them too. */
static void merge_read_merged_scene_refused(void **state)
{
    (void)state;
    ent b[NE], o[NE], t[NE];
    base_ents(b);
    memcpy(o, b, sizeof b);
    memcpy(t, b, sizeof b);
    memmove(&o[54], &o[55], (NE - 55) * sizeof *o); /* entity 55, a leaf, removed */
    char link[160];
    snprintf(link, sizeof link,
             "  enabled: true\n  # the link is put in the extra lines, a component of its own below\n");
    t[100].extra = link;
    char *bt = scene(b, NE, 0, NULL), *ot = scene(o, NE - 1, 0, NULL), *tt0 = scene(t, NE, 0, NULL);
    /* theirs: entity 101 gets a test:link naming entity 55 */
    char comp[256];
    snprintf(comp, sizeof comp, "  - kind: test:link\n    version: 1\n    slot: 0\n    body:\n      to: %s\n",
             uuid(55));
    const char *at = strstr(tt0, "the link is put");
    assert_non_null(at);
    at = strstr(at, "  components:\n");
    assert_non_null(at);
    at += strlen("  components:\n");
    size_t pre = (size_t)(at - tt0);
    char *tt = malloc(strlen(tt0) + strlen(comp) + 1);
    memcpy(tt, tt0, pre);
    strcpy(tt + pre, comp);
    strcat(tt, tt0 + pre);
    outcome r = both_ways(bt, ot, tt);
    assert_int_not_equal(r.st, KEEL_OK);
    assert_true(r.how.by_spans[1] && r.how.by_spans[2]);
    bool placed = false;
    for (size_t i = 0; i < r.d.count; i++) placed = placed || r.d.items[i].line > 1000;
    assert_true(placed); /* a line deep in theirs */
    outcome_free(&r);
    free(bt);
    free(ot);
    free(tt0);
    free(tt);
}

static const keel_field_desc link_fields[] = { { .key = "to", .type = KEEL_T_ENTITY } };

static int setup(void **state)
{
    (void)state;
    keel_init();
    keel_kind_desc kd = { .key = "test:link", .version = 1, .fields = link_fields, .field_count = 1 };
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    keel_shutdown();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merge_read_edits_and_conflicts), cmocka_unit_test(merge_read_comments_and_layouts),
        cmocka_unit_test(merge_read_layouts_not_cut),     cmocka_unit_test(merge_read_broken_sides),
        cmocka_unit_test(merge_read_random_line_edits),   cmocka_unit_test(merge_read_merged_scene_refused),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
