/**
 * Runs newly accepted payments right after the request answered (on the next turn of the event loop), under the lease the hold took, and
 * follows each one to its final state (re-reading its row between steps, so watching a receipt
 * costs no writes). Bounded: at most `concurrency` steps at once, at most `queueMax` payments waiting
 * (more go straight to the worker, so nothing waits here past its lease), and a payment followed for
 * longer than `followMs` is handed to the worker. After a crash the lease expires and the worker
 * resumes; the compare-and-set in the relayer keeps any overlap harmless.
 */
import { StaleStepError } from "../../chain/relayer.ts";
import type { AppContext } from "../../context.ts";
import type { PaymentRow } from "../../ledger/store.ts";

export type Dispatcher = { submit(p: PaymentRow): void; drain(): Promise<void> };

export type DispatcherOptions = { concurrency?: number; queueMax?: number; followMs?: number };

export function createDispatcher(ctx: AppContext, opts: DispatcherOptions = {}): Dispatcher {
  const concurrency = opts.concurrency ?? 16;
  const queueMax = opts.queueMax ?? 256;
  // Well inside the hold's lease, so the worker never takes over a payment this process still follows.
  const followMs = opts.followMs ?? Math.floor(ctx.config.workers.paymentRequestLeaseMs / 2);
  type Item = { p: PaymentRow; since: number };
  const queue: Item[] = [];
  /** Submitted during the current turn of the event loop; admitted to `queue` on the next. */
  const incoming: Item[] = [];
  const waiting = new Map<NodeJS.Timeout, string>();
  let active = 0;
  let closing = false;
  let idle: (() => void)[] = [];

  const handOver = (id: string, inMs: number) =>
    ctx.ledger.releaseLease(id, ctx.instanceId, new Date(ctx.clock().getTime() + inMs).toISOString()).catch((err) => ctx.logger.warn({ err, payment_id: id }, "lease release failed; it expires on its own"));

  async function step(item: Item): Promise<void> {
    let retryInMs: number | undefined;
    try {
      const rail = item.p.rail === "x402" ? ctx.rails?.x402 : ctx.rails?.byName[item.p.rail];
      if (!rail) throw new Error(`no ${item.p.rail} rail`);
      const r = await rail.advance(item.p);
      if (r.done) return; // final: resolving it cleared its lease
      retryInMs = r.retryInMs ?? 250;
    } catch (err) {
      if (err instanceof StaleStepError) return; // another process holds it now
      ctx.logger.warn({ err, payment_id: item.p.id }, "payment step failed; the worker will retry");
      return void (await handOver(item.p.id, 500));
    }
    if (closing || Date.now() - item.since + retryInMs > followMs) return void (await handOver(item.p.id, retryInMs));
    // Look again later without holding a slot; the row is re-read, never re-claimed.
    const timer = setTimeout(async () => {
      waiting.delete(timer);
      const fresh = await ctx.ledger.getPayment(item.p.id).catch(() => undefined);
      if (!fresh || fresh.lease_owner !== ctx.instanceId || !["pending", "processing"].includes(fresh.status)) return settle();
      enqueue({ p: fresh, since: item.since });
    }, retryInMs);
    waiting.set(timer, item.p.id);
  }

  function admit(): void {
    const items = incoming.splice(0);
    if (closing) for (const item of items) void handOver(item.p.id, 0);
    else for (const item of items) queue.push(item);
    pump();
  }

  function enqueue(item: Item): void {
    queue.push(item);
    pump();
  }

  function pump(): void {
    while (active < concurrency && queue.length) {
      const item = queue.shift()!;
      active++;
      void step(item).finally(() => {
        active--;
        pump();
      });
    }
    settle();
  }

  function settle(): void {
    if (active === 0 && queue.length === 0 && incoming.length === 0 && waiting.size === 0) {
      const done = idle;
      idle = [];
      for (const w of done) w();
    }
  }

  return {
    submit(p) {
      if (closing || queue.length + incoming.length >= queueMax) return void handOver(p.id, 0);
      // Taken up on the next turn of the event loop, once the request that accepted it has answered:
      // its first step (signing, a commit) must not delay that answer.
      incoming.push({ p, since: Date.now() });
      if (incoming.length === 1) setImmediate(admit);
    },
    /** Stops following payments (the worker takes them) and waits for the steps under way. */
    drain() {
      closing = true;
      for (const [t, id] of waiting) {
        clearTimeout(t);
        waiting.delete(t);
        void handOver(id, 0);
      }
      for (const item of [...queue.splice(0), ...incoming.splice(0)]) void handOver(item.p.id, 0);
      if (active === 0) return Promise.resolve();
      return new Promise((r) => idle.push(r));
    },
  };
}
