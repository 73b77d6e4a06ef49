/** `cairn <argv>` from the sources, for the CLI test's child processes. */
import { main } from '../../src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
