/**
 * A benchmark script's command line, read with node:util's parseArgs. Every option is declared, so a mistyped
 * one stops the script with a message naming the options it takes instead of running with a silent default,
 * and a number that is not one is an error, not NaN in a table.
 *
 * Options take their value as `--name value` or `--name=value`; a value may start with a dash
 * (`--node-options --max-semi-space-size=8`). Kinds:
 *   - 'string': one value (the last one given wins);
 *   - 'list': repeatable (`--env A=1 --env B=2`);
 *   - 'flag': no value;
 *   - 'optional': a value when one follows (`--semi-space-curve` or `--semi-space-curve 8,16`).
 */
import { parseArgs } from 'node:util';

export type OptionKind = 'string' | 'list' | 'flag' | 'optional';
type Named<S, K> = { [N in keyof S]: S[N] extends K ? N : never }[keyof S] & string;

export interface BenchArgs<S extends Record<string, OptionKind>> {
  /** The arguments as given: the command line a script prints beside its figures. */
  readonly argv: readonly string[];
  /** Was the option given at all? */
  has(name: keyof S & string): boolean;
  flag(name: Named<S, 'flag'>): boolean;
  str(name: Named<S, 'string' | 'optional'>, dflt: string): string;
  /** The value as a finite number; throws naming the option when it is not one. */
  num(name: Named<S, 'string'>, dflt: number): number;
  list(name: Named<S, 'list'>): string[];
}

/** `script` names the script in errors (e.g. 'bench/envoy.ts'). */
export function benchArgs<const S extends Record<string, OptionKind>>(script: string, spec: S, argv: readonly string[] = process.argv.slice(2)): BenchArgs<S> {
  const takes = Object.keys(spec)
    .map((n) => `--${n}${spec[n] === 'flag' ? '' : spec[n] === 'optional' ? ' [value]' : ' <value>'}`)
    .join(' ');
  const fail = (message: string): never => {
    throw new Error(`${script}: ${message} (options: ${takes})`);
  };
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const kind = a.startsWith('--') && !a.includes('=') ? spec[a.slice(2)] : undefined;
    const next = argv[i + 1];
    if ((kind === 'string' || kind === 'list') && next !== undefined) joined.push(`${a}=${argv[++i]!}`);
    else if (kind === 'optional') joined.push(next === undefined || next.startsWith('--') ? `${a}=` : `${a}=${argv[++i]!}`);
    else joined.push(a);
  }
  const options = Object.fromEntries(
    Object.entries(spec).map(([n, k]) => [n, k === 'flag' ? { type: 'boolean' as const } : { type: 'string' as const, multiple: k === 'list' }]),
  );
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: joined, options, strict: true, allowPositionals: false }));
  } catch (err) {
    return fail((err as Error).message);
  }
  const one = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  return {
    argv,
    has: (name) => values[name] !== undefined,
    flag: (name) => values[name] === true,
    str: (name, dflt) => one(name) ?? dflt,
    num: (name, dflt) => {
      const text = one(name);
      if (text === undefined) return dflt;
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : fail(`--${name} wants a number, got "${text}"`);
    },
    list: (name) => {
      const v = values[name];
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    },
  };
}

/** `K=V` items as an environment (a value may contain '='); items without '=' are left out. */
export function envPairs(items: readonly string[]): Record<string, string> {
  const pairs = items.filter((kv) => kv.includes('='));
  return Object.fromEntries(pairs.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}
