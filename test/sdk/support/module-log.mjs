// Registers module-log-hooks.mjs: every module URL this process resolves is appended to $CAIRN_MODULE_LOG.
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url);
