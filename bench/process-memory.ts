import { readFileSync } from 'node:fs';

/** Resident memory of a process: peak (VmHWM), and the current anonymous and file-backed parts. */
export function memory(pid: number): { peak: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { peak: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** Samples a process's memory every 500 ms: the highest anonymous and file-backed parts seen. */
export class MemoryWatch {
  peakAnon = 0;
  peakFile = 0;
  peakTotal = 0;
  private timer: NodeJS.Timeout;
  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 500);
  }
  sample() {
    const m = memory(this.pid);
    this.peakAnon = Math.max(this.peakAnon, m.anon);
    this.peakFile = Math.max(this.peakFile, m.file);
    this.peakTotal = Math.max(this.peakTotal, m.anon + m.file);
  }
  stop() {
    clearInterval(this.timer);
    this.sample();
  }
}
