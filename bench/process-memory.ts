import { readFileSync } from 'node:fs';

/** Resident memory of a process: peak (VmHWM), and the current anonymous and file-backed parts. */
export function memory(pid: number): { peak: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { peak: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/**
 * Samples a process's memory every 500 ms: the highest anonymous and file-backed parts seen, overall
 * and per `label` (what the process was doing when sampled, set by the caller), with how long each
 * label was seen.
 */
export class MemoryWatch {
  peakAnon = 0;
  peakFile = 0;
  peakTotal = 0;
  label = '';
  readonly byLabel = new Map<string, { anon: number; file: number; samples: number }>();
  private timer: NodeJS.Timeout;
  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 500);
  }
  sample() {
    const m = memory(this.pid);
    this.peakAnon = Math.max(this.peakAnon, m.anon);
    this.peakFile = Math.max(this.peakFile, m.file);
    this.peakTotal = Math.max(this.peakTotal, m.anon + m.file);
    if (this.label) {
      const seen = this.byLabel.get(this.label) ?? { anon: 0, file: 0, samples: 0 };
      seen.anon = Math.max(seen.anon, m.anon);
      seen.file = Math.max(seen.file, m.file);
      seen.samples += 1;
      this.byLabel.set(this.label, seen);
    }
  }
  /** One line per label, in the order first seen: peaks in MiB and about how long (500 ms samples). */
  labelLines(): string[] {
    const mib = (b: number) => Math.round(b / 2 ** 20).toLocaleString('en');
    return [...this.byLabel].map(
      ([label, p]) =>
        `${label}: anon ${mib(p.anon)} MiB, file-backed ${mib(p.file)} MiB, ~${Math.round(p.samples / 2)} s`,
    );
  }
  stop() {
    clearInterval(this.timer);
    this.sample();
  }
}
