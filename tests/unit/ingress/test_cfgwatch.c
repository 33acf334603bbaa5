/*
 * Tests ingress/core/cfgwatch.c on a directory laid out as kubelet mounts a ConfigMap
 * (<dir>/mcpq.json -> ..data/mcpq.json, ..data -> ..<timestamp>/), no Redis: the start-up load;
 * a symlink swap to a new file is one change, with the new config; nothing changed is nothing;
 * a bad file and an unreadable one (..data pointing nowhere) are refused once each, then quiet
 * until they change; the file coming back as it was is no change; an edit in place of the same
 * size is a change; a config the process's settings refuse (a short app secret) is refused.
 */
#include "check.h"

#include "cfgwatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG(tool)                                                                               \
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"t-key\"}]}],"        \
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}], \"tools\": [{\"tenant\": \"t\","  \
    " \"server\": \"default\", \"name\": \"" tool "\", \"versions\": [{\"version\": \"1\","        \
    " \"inputSchema\": {\"type\": \"object\"}, \"executor\": {\"type\": \"builtin\", \"name\":"    \
    " \"echo\"}}]}]}"

static char dir[256];
static int generation;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK_INT_EQ(fputs(text, f) >= 0, 1);
    CHECK_INT_EQ(fclose(f), 0);
}

/* Kubelet's update: a new ..<timestamp> directory, a symlink renamed over ..data (target NULL:
 * a directory without the file). */
static void swap(const char *text)
{
    char sub[300], file[400], tmp[300], data[300];
    snprintf(sub, sizeof(sub), "%s/..2026_11_28_17_00_%02d.000000001", dir, ++generation);
    CHECK_INT_EQ(mkdir(sub, 0755), 0);
    if (text) {
        snprintf(file, sizeof(file), "%s/mcpq.json", sub);
        write_file(file, text);
    }
    snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
    snprintf(data, sizeof(data), "%s/..data", dir);
    CHECK_INT_EQ(symlink(strrchr(sub, '/') + 1, tmp), 0);
    CHECK_INT_EQ(rename(tmp, data), 0);
}

/* The one tool's name in a loaded config. */
static const char *tool_of(const cJSON *cfg)
{
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(cfg, "tools");
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 0), "name"));
}

static int poll_once(ing_cfgwatch_t *w, char *tool, size_t size, char *err, size_t err_size)
{
    cJSON *cfg = (cJSON *)1;
    int rc = ing_cfgwatch_poll(w, &cfg, err, err_size);
    CHECK(rc == ING_CFGWATCH_CHANGED ? cfg != NULL : cfg == NULL);
    snprintf(tool, size, "%s", cfg ? tool_of(cfg) : "");
    cJSON_Delete(cfg);
    return rc;
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/mcpq-cfgwatch-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char path[300], err[512], tool[64];
    snprintf(path, sizeof(path), "%s/mcpq.json", dir);
    swap(CONFIG("one"));
    CHECK_INT_EQ(symlink("..data/mcpq.json", path), 0);
    mcpq_settings_t set = {.config = path, .app_secret_min_bytes = 32};
    ing_cfgwatch_t w;
    ing_cfgwatch_init(&w, &set);

    cJSON *cfg = ing_cfgwatch_load(&w, err, sizeof(err));
    CHECK(cfg != NULL);
    CHECK_STR_EQ(tool_of(cfg), "one");
    cJSON_Delete(cfg);
    CHECK_INT_EQ(strlen(w.seen), 64);
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_SAME);
    TEST_PASS("start-up load; nothing changed is no change");

    swap(CONFIG("two"));
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_CHANGED);
    CHECK_STR_EQ(tool, "two");
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_SAME);
    TEST_PASS("a symlink swap to a new file is one change");

    swap(CONFIG("two") "x");
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_REFUSED);
    CHECK_CONTAINS(err, path);
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_SAME);
    TEST_PASS("a bad file is refused once");

    swap(NULL); /* ..data points at a directory without the file */
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_REFUSED);
    CHECK_CONTAINS(err, "cannot open");
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_SAME);
    TEST_PASS("an unreadable file is refused once");

    swap(CONFIG("two") "x"); /* back as it was last read: nothing new to refuse or apply */
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_SAME);
    swap(CONFIG("two"));
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_CHANGED);
    CHECK_STR_EQ(tool, "two");
    TEST_PASS("a file back as it was is no change; the good file after a bad one is a change");

    char real[400];
    snprintf(real, sizeof(real), "%s/..data/mcpq.json", dir);
    write_file(real, CONFIG("six")); /* same size, edited in place */
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_CHANGED);
    CHECK_STR_EQ(tool, "six");
    TEST_PASS("an edit in place of the same size is a change");

    swap("{\"tenants\": [{\"id\": \"t\", \"apps\": [{\"app_id\": \"a\", \"secret\": \"short\"}]}],"
         " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}]}");
    CHECK_INT_EQ(poll_once(&w, tool, sizeof(tool), err, sizeof(err)), ING_CFGWATCH_REFUSED);
    CHECK_CONTAINS(err, "MCPQ_APP_SECRET_MIN_BYTES");
    TEST_PASS("a config the settings refuse is refused");

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_INT_EQ(system(cmd), 0);
    return 0;
}
