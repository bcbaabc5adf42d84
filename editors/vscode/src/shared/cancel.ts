/**
 * A request handler's work raced against the server's `$/cancelRequest`: VS Code's execute
 * commands take no cancellation token, so a cancelled request is answered at once (with the
 * error `cancelled()` makes) and the work's late result is dropped. Pure: unit-tested with a
 * stand-in token.
 */

export interface CancelToken { isCancellationRequested: boolean; onCancellationRequested(listener: () => void): { dispose(): void } }

export function raceCancellation<T>(work: Promise<T>, token: CancelToken, cancelled: () => Error): Promise<T> {
  if (token.isCancellationRequested) {
    work.catch(() => undefined); // nobody waits for it any more
    return Promise.reject(cancelled());
  }
  return new Promise<T>((resolve, reject) => {
    const sub = token.onCancellationRequested(() => { sub.dispose(); reject(cancelled()); });
    work.then((v) => { sub.dispose(); resolve(v); }, (e: unknown) => { sub.dispose(); reject(e); });
  });
}
