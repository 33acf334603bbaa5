/*
 * cfgwatch.c - watching the config file for a change (cfgwatch.h).
 */
#include "cfgwatch.h"

#include "cfg.h"
#include "regstore.h"

#include <stdio.h>
#include <string.h>

void ing_cfgwatch_init(ing_cfgwatch_t *w, const mcpq_settings_t *set)
{
    memset(w, 0, sizeof(*w));
    w->set = set;
}

cJSON *ing_cfgwatch_load(ing_cfgwatch_t *w, char *err, size_t err_size)
{
    char sha[65];
    cJSON *cfg = cfg_load_file_sha256(w->set->config, sha, err, err_size);
    if (sha[0]) { /* read: this content is seen, whatever it holds */
        memcpy(w->seen, sha, sizeof(w->seen));
        w->unreadable[0] = '\0';
    }
    if (!cfg)
        return NULL;
    char why[384];
    if (ing_regstore_config_check(cfg, w->set, why, sizeof(why)) < 0) {
        snprintf(err, err_size, "%s: %s", w->set->config, why);
        cJSON_Delete(cfg);
        return NULL;
    }
    return cfg;
}

int ing_cfgwatch_poll(ing_cfgwatch_t *w, cJSON **cfg, char *err, size_t err_size)
{
    char sha[65];
    *cfg = NULL;
    if (cfg_file_sha256(w->set->config, sha, err, err_size) < 0) {
        if (strcmp(err, w->unreadable) == 0)
            return ING_CFGWATCH_SAME; /* reported already */
        snprintf(w->unreadable, sizeof(w->unreadable), "%s", err);
        return ING_CFGWATCH_REFUSED;
    }
    w->unreadable[0] = '\0';
    if (strcmp(sha, w->seen) == 0)
        return ING_CFGWATCH_SAME; /* unchanged, or back as it was before it could not be read */
    *cfg = ing_cfgwatch_load(w, err, err_size);
    return *cfg ? ING_CFGWATCH_CHANGED : ING_CFGWATCH_REFUSED;
}
