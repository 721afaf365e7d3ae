/**
 * A small pool of worker threads that make the project wallets' EIP-712 signatures. Signing is CPU
 * work of a fraction of a millisecond to a few; on the event loop it would delay every request. Each
 * call has a deadline; a pool that is closed refuses new work.
 */
import { Worker } from "node:worker_threads";
import type { Hex, TypedDataDefinition } from "viem";

export type SigningPool = {
  signTypedData(index: number, def: TypedDataDefinition): Promise<Hex>;
  close(): Promise<void>;
};

const SIGN_TIMEOUT_MS = 10_000;

/** The signer refused what it was asked to sign (e.g. an address that fails its checksum): asking again gets the same answer. */
export class SigningRefusedError extends Error {
  override name = "SigningRefusedError";
}

export function createSigningPool(mnemonic: string, threads = 1): SigningPool {
  type Pending = { resolve: (s: Hex) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };
  const pending = new Map<number, Pending>();
  let seq = 0;
  let closed = false;
  const workers = Array.from({ length: Math.max(1, threads) }, () => {
    const w = new Worker(new URL("./signingWorker.mjs", import.meta.url), { workerData: { mnemonic } });
    w.on("message", (m: { id: number; signature?: Hex; error?: string }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.error) p.reject(new SigningRefusedError(`signing failed: ${m.error}`));
      else p.resolve(m.signature!);
    });
    w.on("error", (err) => {
      for (const [id, p] of pending) {
        pending.delete(id);
        clearTimeout(p.timer);
        p.reject(err);
      }
    });
    w.unref();
    return w;
  });
  const send = (message: Record<string, unknown>): Promise<Hex> => {
    if (closed) return Promise.reject(new Error("signing pool is closed"));
    const id = ++seq;
    return new Promise<Hex>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`signing timed out after ${SIGN_TIMEOUT_MS} ms`));
      }, SIGN_TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
      workers[id % workers.length]!.postMessage({ id, ...message });
    });
  };
  return {
    signTypedData: (index, def) => send({ op: "typedData", index, def }),
    async close() {
      closed = true;
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
