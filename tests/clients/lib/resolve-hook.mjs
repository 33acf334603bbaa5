// Module resolve hook (see register.mjs).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const depsParent = pathToFileURL(path.join(process.env.MCPQ_CLIENTS_DEPS, 'package.json')).href;
const BARE = /^(?!\.{0,2}\/|file:|node:|data:)/;

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    if (!BARE.test(specifier)) throw err;
    if (err.code !== 'ERR_MODULE_NOT_FOUND' && err.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw err;
    return nextResolve(specifier, { ...context, parentURL: depsParent });
  }
}
