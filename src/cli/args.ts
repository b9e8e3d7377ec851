/** The command-line walk the subcommands share. */

/** Calls `take(arg, value)` for each argument in order; `value()` consumes the next argument (an error naming `arg` when there is none). */
export function eachArg(argv: readonly string[], take: (arg: string, value: () => string) => void): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    take(arg, () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    });
  }
}
