// Loaded with `node --import` by tests/clients/run.sh: the npm packages live in the work dir
// that install.sh filled ($MCPQ_CLIENTS_DEPS/node_modules), outside the source tree, and ESM
// ignores NODE_PATH. Bare specifiers that do not resolve from the test file are resolved
// again as if imported from the work dir.
import { register } from 'node:module';

if (process.env.MCPQ_CLIENTS_DEPS) register('./resolve-hook.mjs', import.meta.url);
