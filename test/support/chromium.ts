/**
 * A real headless Chromium (Debian's package, /usr/bin/chromium, or CHROMIUM_BIN) for the pages the service
 * serves: the DOM as the browser built it, and a screenshot. Each call runs its own browser with its own
 * profile directory, so parallel test files never share one. Under CI=true a missing Chromium throws: CI never
 * skips silently (.ci/run installs it).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

export function chromiumBinary(): string | undefined {
  const given = process.env['CHROMIUM_BIN'];
  for (const path of given ? [given] : CANDIDATES) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // next candidate
    }
  }
  if (process.env['CI'] === 'true') throw new Error(`CI=true and no Chromium at ${given ?? CANDIDATES.join(', ')} (set CHROMIUM_BIN)`);
  return undefined;
}

/** describe() when Chromium is there; a visible skip otherwise (outside CI). */
export function describeChromium(name: string, body: () => void): void {
  if (chromiumBinary() === undefined) {
    process.stderr.write(`skipping "${name}": no Chromium (set CHROMIUM_BIN)\n`);
    describe.skip(`${name} [skipped: no Chromium]`, body);
  } else describe(name, body);
}

function run(args: readonly string[]): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'rl-chromium-'));
  const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions', `--user-data-dir=${profile}`];
  return new Promise<string>((resolve, reject) => {
    execFile(chromiumBinary()!, [...flags, ...args], { timeout: 60_000, maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      rmSync(profile, { recursive: true, force: true });
      if (err) reject(new Error(`chromium ${args.join(' ')}: ${err.message}\n${stderr.slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

/** The DOM after the page loaded, serialised by the browser (scripts would have run; none should). */
export function dumpDom(url: string): Promise<string> {
  return run(['--dump-dom', url]);
}

/** A PNG of the page at `width`×`height` written to `file`. */
export async function screenshot(url: string, file: string, width = 1280, height = 1400): Promise<void> {
  await run([`--screenshot=${file}`, `--window-size=${width},${height}`, '--hide-scrollbars', url]);
}
