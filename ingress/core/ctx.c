/* ctx.c - the accessors of the process context (ctx.h); in the library, so that
 * tests and the whole-request fuzzer (tests/fuzz/fuzz_http.c) build a context as mcpq_ingress.c
 * does. */
#include "ctx.h"

ing_registry_t *ing_ctx_registry(ing_ctx_t *ctx)
{
    pthread_mutex_lock(&ctx->reg_lock);
    ing_registry_t *reg = ctx->reg;
    if (reg)
        ing_registry_ref(reg);
    pthread_mutex_unlock(&ctx->reg_lock);
    return reg;
}
