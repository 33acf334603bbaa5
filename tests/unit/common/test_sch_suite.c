/* Runs the official JSON Schema Test Suite for draft 2020-12 (the tests/draft2020-12/ files (each
 * .json) files, not optional/) against common/sch.c: every group's schema through sch_schema_check
 * and sch_compile, every case through sch_validate and sch_compiled_validate (both must give
 * the suite's answer). A case that fails is an error unless its group (or the case) is in
 * tests/unit/common/sch-suite-exclusions.txt with a reason; an excluded group whose cases all
 * pass is an error too, so the list stays honest. Prints the counts.
 *
 *   test_sch_suite [SUITE_DIR [EXCLUSIONS]]
 *
 * SUITE_DIR defaults to Debian's copy of the suite (package libtest-json-schema-acceptance-perl,
 * installed by scripts/deps.sh; docs/tools.md "Input schemas" says why not npm's). */
#include "check.h"
#include "err.h"
#include "sch.h"

#include <dirent.h>
#include <errno.h>

#define SUITE_DIR "/usr/share/perl5/auto/share/dist/Test-JSON-Schema-Acceptance/tests/draft2020-12"
#define EXCLUSIONS "tests/unit/common/sch-suite-exclusions.txt"
#define MAX_EXCL 256

typedef struct excl {
    char file[64], group[256], kase[256]; /* kase "" for the whole group */
    int failed, passed;
} excl_t;

static excl_t excl[MAX_EXCL];
static int nexcl;

/* Lines "<file> | <group description> | <reason>" or "<file> | <group> | <case> | <reason>". */
static void read_exclusions(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    while (fgets(line, sizeof(line), f)) {
        char *field[4] = {0};
        int n = 0;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, "\n")] = '\0';
        for (char *p = line; p && n < 4; n++) {
            field[n] = p;
            p = strstr(p, " | ");
            if (p) {
                *p = '\0';
                p += 3;
            }
        }
        CHECK(n >= 3 && nexcl < MAX_EXCL);
        snprintf(excl[nexcl].file, sizeof(excl[nexcl].file), "%s", field[0]);
        snprintf(excl[nexcl].group, sizeof(excl[nexcl].group), "%s", field[1]);
        if (n == 4)
            snprintf(excl[nexcl].kase, sizeof(excl[nexcl].kase), "%s", field[2]);
        nexcl++;
    }
    fclose(f);
}

static excl_t *excluded(const char *file, const char *group, const char *kase)
{
    for (int i = 0; i < nexcl; i++)
        if (!strcmp(excl[i].file, file) && !strcmp(excl[i].group, group) &&
            (!excl[i].kase[0] || !strcmp(excl[i].kase, kase)))
            return &excl[i];
    return NULL;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    CHECK(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    text[n] = '\0';
    cJSON *doc = cJSON_Parse(text);
    free(text);
    CHECK(doc != NULL);
    return doc;
}

static int npassed, nexcluded, nfailed;

/* 1 when sch.c gives the suite's answer for case t of a group whose schema is s. */
static int run_case(const cJSON *s, sch_compiled_t *comp, const cJSON *t, char *why, size_t size)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(t, "data");
    int want = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "valid"));
    char e1[512] = "", e2[512] = "";
    if (!comp) {
        snprintf(why, size, "schema refused");
        return 0;
    }
    int r1 = sch_validate(s, data, "$", e1, sizeof(e1));
    int r2 = sch_compiled_validate(comp, data, "$", e2, sizeof(e2));
    if ((r1 != 0 && r1 != MCPQ_EINVAL) || r1 != r2 || strcmp(e1, e2) != 0) {
        snprintf(why, size, "sch_validate %d (%s), sch_compiled_validate %d (%s)", r1, e1, r2, e2);
        return 0;
    }
    snprintf(why, size, "%s%s", want ? "expected valid: " : "expected invalid", e1);
    return (r1 == 0) == want;
}

static void run_group(const char *file, const cJSON *g)
{
    const char *gd = cJSON_GetObjectItemCaseSensitive(g, "description")->valuestring;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(g, "schema");
    char err[512] = "", why[1200];
    sch_compiled_t *comp = NULL;
    if (sch_schema_check(s, "$", err, sizeof(err)) == 0)
        comp = sch_compile(s, "$", err, sizeof(err));
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(g, "tests"), *t;
    cJSON_ArrayForEach(t, tests)
    {
        const char *td = cJSON_GetObjectItemCaseSensitive(t, "description")->valuestring;
        int ok = run_case(s, comp, t, why, sizeof(why));
        excl_t *x = excluded(file, gd, td);
        if (x) {
            x->failed += !ok;
            x->passed += ok;
            nexcluded++;
        } else if (ok) {
            npassed++;
        } else {
            nfailed++;
            fprintf(stderr, "FAIL %s | %s | %s: %s%s%s\n", file, gd, td, why, comp ? "" : ": ",
                    comp ? "" : err);
        }
    }
    sch_compiled_free(comp);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : SUITE_DIR;
    char *files[128], path[1024];
    int nfiles = 0, stale = 0;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr,
                "needs the JSON Schema Test Suite in %s (Debian package "
                "libtest-json-schema-acceptance-perl, installed by scripts/deps.sh)\n",
                dir);
        return 1;
    }
    read_exclusions(argc > 2 ? argv[2] : EXCLUSIONS);
    for (struct dirent *e; (e = readdir(d)) && nfiles < 128;)
        if (strlen(e->d_name) > 5 && !strcmp(e->d_name + strlen(e->d_name) - 5, ".json"))
            files[nfiles++] = strdup(e->d_name);
    closedir(d);
    qsort(files, (size_t)nfiles, sizeof(*files), cmp_str);
    for (int i = 0; i < nfiles; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        cJSON *doc = read_json(path), *g;
        cJSON_ArrayForEach(g, doc) run_group(files[i], g);
        cJSON_Delete(doc);
        free(files[i]);
    }
    for (int i = 0; i < nexcl; i++)
        if (!excl[i].failed) {
            fprintf(stderr, "STALE exclusion %s | %s%s%s: %s\n", excl[i].file, excl[i].group,
                    excl[i].kase[0] ? " | " : "", excl[i].kase,
                    excl[i].passed ? "every case passes now" : "matches no case");
            stale++;
        }
    printf("JSON Schema Test Suite draft2020-12: %d files, %d cases passed, %d excluded, %d "
           "failed, %d stale exclusions\n",
           nfiles, npassed, nexcluded, nfailed, stale);
    CHECK_INT_EQ(nfailed, 0);
    CHECK_INT_EQ(stale, 0);
    TEST_PASS("JSON Schema Test Suite draft2020-12");
    return 0;
}
