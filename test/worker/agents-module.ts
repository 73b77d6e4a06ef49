/**
 * The `--agents` module `cairn worker` loads in the CLI test: the fixture
 * agents, on the schemas named by CAIRN_WORKER_TEST (JSON: url, opsSchema,
 * effectsSchema). `close` ends its pool when the worker stops.
 */
import pg from 'pg';
import { fixtureAgents } from './fixture.js';

const config = JSON.parse(process.env.CAIRN_WORKER_TEST ?? '{}') as { url: string; opsSchema: string; effectsSchema: string };
const pool = new pg.Pool({ connectionString: config.url, max: 2 });
pool.on('error', () => undefined);

export const agents = fixtureAgents({ effectsSchema: config.effectsSchema, opsSchema: config.opsSchema, pool, by: 'cli', toolDelayMs: 300 });

export const close = () => pool.end();
