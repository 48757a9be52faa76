/**
 * Calls `onGone` once the process that started this one has exited. A wrapper killed hard (an
 * `npm start` sent SIGKILL, a supervisor that crashed) forwards no signal, and Linux only tells a
 * child by reparenting it, so the parent pid is polled: when it changes, the parent is gone.
 * A process started by init (parent pid 0 or 1) has no parent to lose and is not watched.
 * Returns a function that stops the watch.
 */
export function watchParent(onGone: () => void, intervalMs = 1000, parentAtStart = process.ppid): () => void {
  if (parentAtStart <= 1) return () => undefined;
  const timer = setInterval(() => {
    if (process.ppid === parentAtStart) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  // The watch alone must not keep a process alive that has nothing else left to do.
  timer.unref();
  return () => clearInterval(timer);
}
