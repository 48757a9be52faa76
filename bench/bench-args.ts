/** A benchmark's command line: `--name` switches and `--name N` whole numbers (N >= 1). */
export function benchArgs(args: readonly string[] = process.argv.slice(2)) {
  return {
    flag: (name: string) => args.includes(`--${name}`),
    count(name: string, fallback: number): number {
      const i = args.indexOf(`--${name}`);
      if (i < 0) return fallback;
      const n = Number(args[i + 1]);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`--${name} takes a whole number, not ${args[i + 1]}`);
      return n;
    },
  };
}
