#include "stages.h"

const char *const ing_stages_names[ING_STAGE_COUNT] = {
    "http_auth", "validate", "produce", "queue", "execute", "result_write", "wake", "respond"};

int ing_stages_split(const ing_stamps_t *s, int64_t us[ING_STAGE_COUNT])
{
    /* The bounds of the stages, in order. */
    const int64_t at[ING_STAGE_COUNT + 1] = {s->start_us,  s->door_us, s->sent_us,
                                             s->acked_us,  s->exec_us, s->finished_us,
                                             s->stored_us, s->woke_us, s->end_us};
    for (int i = 0; i <= ING_STAGE_COUNT; i++)
        if (at[i] <= 0)
            return 0;
    for (int i = 0; i < ING_STAGE_COUNT; i++)
        us[i] = at[i + 1] > at[i] ? at[i + 1] - at[i] : 0;
    return 1;
}
