/**
 * The `ratelimit` executable (bin/ratelimit.mjs in a checkout, `node dist/cli.js` in the image): runs the command
 * line of cli/ with the process's arguments. Imported (by the bundle's code-cache maker) it only exports.
 */
import { main } from './cli/main.js';

export { main, serveHelp } from './cli/main.js';

const invokedDirectly = process.argv[1] !== undefined && /ratelimit(\.mjs)?$|cli\.[jt]s$/.test(process.argv[1]);
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
