/**
 * Runs the first steps of newly accepted payments right after the request answered, with bounded
 * concurrency and a bounded queue, under the lease the hold took. When the queue is full the lease is
 * released at once and the worker picks the payment up; after a crash the lease expires and the
 * worker resumes it. Either way each payment is advanced by one process at a time.
 */
import type { AppContext } from "../../context.ts";
import { StaleStepError } from "../../chain/relayer.ts";
import type { PaymentRow } from "../../ledger/store.ts";

export type Dispatcher = { submit(p: PaymentRow): void; drain(): Promise<void> };

export function createDispatcher(ctx: AppContext, opts: { concurrency?: number; queueMax?: number; onIdle?: () => void } = {}): Dispatcher {
  const concurrency = opts.concurrency ?? 16;
  const queueMax = opts.queueMax ?? 10_000;
  const queue: PaymentRow[] = [];
  let active = 0;
  let idle: (() => void)[] = [];

  const release = (id: string, inMs: number) => ctx.ledger.releaseLease(id, ctx.instanceId, new Date(ctx.clock().getTime() + inMs).toISOString());

  async function run(p: PaymentRow): Promise<void> {
    let retryInMs = 0;
    try {
      const rail = p.rail === "x402" ? ctx.rails?.x402 : ctx.rails?.byName[p.rail];
      if (!rail) throw new Error(`no ${p.rail} rail`);
      const r = await rail.advance(p);
      retryInMs = r.done ? 0 : (r.retryInMs ?? 0);
    } catch (err) {
      if (!(err instanceof StaleStepError)) ctx.logger.warn({ err, payment_id: p.id }, "first payment step failed; the worker will retry");
      retryInMs = 500;
    }
    await release(p.id, retryInMs).catch((err) => ctx.logger.warn({ err, payment_id: p.id }, "lease release failed; it expires on its own"));
  }

  function pump(): void {
    while (active < concurrency && queue.length) {
      const p = queue.shift()!;
      active++;
      void run(p).finally(() => {
        active--;
        pump();
      });
    }
    if (active === 0 && queue.length === 0) {
      const waiting = idle;
      idle = [];
      for (const w of waiting) w();
      opts.onIdle?.();
    }
  }

  return {
    submit(p) {
      if (queue.length >= queueMax) {
        void release(p.id, 0);
        return;
      }
      queue.push(p);
      pump();
    },
    drain() {
      if (active === 0 && queue.length === 0) return Promise.resolve();
      return new Promise((r) => idle.push(r));
    },
  };
}
