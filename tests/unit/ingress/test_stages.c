/* Tests ingress/core/stages.c: a call's stamps split into its eight stages (each from one stamp
 * to the next, a stamp earlier than the one before it clamped at 0: clock skew between the
 * worker and the ingress), and no split at all when a stamp is missing. */
#include "check.h"
#include "stages.h"

#include <string.h>

int main(void)
{
    ing_stamps_t s = {.start_us = 1000,
                      .door_us = 1010,
                      .sent_us = 1050,
                      .acked_us = 1300,
                      .exec_us = 2300,
                      .finished_us = 2310,
                      .stored_us = 2400,
                      .woke_us = 2450,
                      .end_us = 2500};
    int64_t us[ING_STAGE_COUNT];
    CHECK_INT_EQ(ing_stages_split(&s, us), 1);
    const int64_t want[ING_STAGE_COUNT] = {10, 40, 250, 1000, 10, 90, 50, 50};
    int64_t sum = 0;
    for (int i = 0; i < ING_STAGE_COUNT; i++) {
        CHECK_INT_EQ(us[i], want[i]);
        sum += us[i];
    }
    CHECK_INT_EQ(sum, s.end_us - s.start_us);
    CHECK_STR_EQ(ing_stages_names[ING_STAGE_HTTP_AUTH], "http_auth");
    CHECK_STR_EQ(ing_stages_names[ING_STAGE_RESPOND], "respond");
    TEST_PASS("the stamps of a call split into its eight stages, which add up to its duration");

    s.exec_us = 1200; /* the worker's clock behind: picked up "before" the ack */
    CHECK_INT_EQ(ing_stages_split(&s, us), 1);
    CHECK_INT_EQ(us[ING_STAGE_QUEUE], 0);
    CHECK_INT_EQ(us[ING_STAGE_EXECUTE], 1110);
    TEST_PASS("a stage whose end stamp is earlier than its start (clock skew) is 0, not negative");

    s.stored_us = 0; /* an older worker: no stored_us in its reply entry */
    memset(us, 0x7f, sizeof(us));
    CHECK_INT_EQ(ing_stages_split(&s, us), 0);
    CHECK_INT_EQ(us[0], 0x7f7f7f7f7f7f7f7fLL);
    TEST_PASS("a call missing a stamp has no stages");
    return TEST_EXIT();
}
