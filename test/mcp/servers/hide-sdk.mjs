// A module hook for no-sdk.test.ts: @modelcontextprotocol/sdk cannot be found, as in a project that did not install
// it, and every attempt to resolve it is written to the file HIDE_SDK_LOG names.
import { register } from 'node:module';

const hook = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@modelcontextprotocol/sdk')) {
    if (${JSON.stringify(process.env.HIDE_SDK_LOG ?? '')}) appendFileSync(${JSON.stringify(process.env.HIDE_SDK_LOG ?? '')}, specifier + '\\n');
    const error = new Error('Cannot find package ' + specifier);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
