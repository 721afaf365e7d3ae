/**
 * Runs newly accepted payments right after the request answered (on the next turn of the event loop), under the lease the hold took, and
 * follows each one to its final state (re-reading its row between steps, so watching a receipt
 * costs no writes). Bounded: at most `concurrency` steps at once, at most `queueMax` payments waiting
 * (more go straight to the worker), and a payment waiting or followed for longer than `followMs` is
 * handed to the worker, so nothing is worked here past its lease. After a crash the lease expires and
 * the worker resumes; the compare-and-set in the relayer keeps any overlap harmless.
 *
 * The queue is long on purpose: a payment handed to the worker costs a write (its lease released)
 * while a burst is still being accepted, and waiting here costs memory only (its id, its row too
 * while the queue is short). A burst accepted faster than it settles thus waits in order here and
 * settles after, instead of filling the write path with releases (in the pay benchmark they were nine
 * in ten of settlement's writes); a payment taken from the queue without its row is read again.
 */
import { MAX_BATCH_PAYMENTS } from "../chain/relayer.ts";
import type { LeaseRelease } from "../ledger/payments.ts";
import type { Payment } from "../domain/payment.ts";
import type { RailDeps } from "../rails/railDeps.ts";
import { type Rails, railFor } from "../rails/rails.ts";
import { handleStepError } from "./settlementRetry.ts";

export type Dispatcher = { submit(p: Payment): void; drain(): Promise<void> };

export type DispatcherOptions = { concurrency?: number; queueMax?: number; followMs?: number; rowsMax?: number };

/**
 * Steps under way at once: two relayer transactions' worth (the relayer carries up to
 * MAX_BATCH_PAYMENTS in one while the next fills). With 16, a drained backlog settled 141–160 payments
 * a second in the pay benchmark; with 64, 169–220.
 */
export const DISPATCH_CONCURRENCY = 2 * MAX_BATCH_PAYMENTS;
/** Payments waiting for a step slot: ids (~100 bytes each), 6.5 MB at most. */
export const DISPATCH_QUEUE_MAX = 65_536;
/** Waiting payments keep their row (~1 KB) while fewer than this many wait; the others are read again when their turn comes. */
const QUEUE_ROWS_MAX = 256;
/** Lease releases of one turn go in one write, at most this many rows each. */
const RELEASES_PER_WRITE_MAX = 256;

export function createDispatcher(ctx: RailDeps, rails: Rails, opts: DispatcherOptions = {}): Dispatcher {
  const concurrency = opts.concurrency ?? DISPATCH_CONCURRENCY;
  const queueMax = opts.queueMax ?? DISPATCH_QUEUE_MAX;
  const rowsMax = opts.rowsMax ?? QUEUE_ROWS_MAX;
  // Well inside the hold's lease, so the worker never takes over a payment this process still follows.
  const followMs = opts.followMs ?? Math.floor(ctx.config.workers.paymentRequestLeaseMs / 2);
  type Item = { id: string; since: number; p?: Payment };
  /** Waiting for a step slot, oldest first: `queue[head…]`. */
  let queue: Item[] = [];
  let head = 0;
  const queued = () => queue.length - head;
  /** Submitted during the current turn of the event loop; admitted to `queue` on the next. */
  const incoming: Item[] = [];
  const waiting = new Map<NodeJS.Timeout, string>();
  /** Leases to release, with each payment's next attempt: written together at the end of the turn. */
  let releases: LeaseRelease[] = [];
  let released: Promise<void> | undefined;
  let active = 0;
  let closing = false;
  let idle: (() => void)[] = [];

  /** Gives the payment to the worker: its lease released, due in `inMs`. Resolves once written (or given up: it expires on its own). */
  function handOver(id: string, inMs: number, stepErrors?: number): Promise<void> {
    releases.push({ id, nextAttemptAt: new Date(ctx.clock().getTime() + inMs).toISOString(), stepErrors });
    released ??= new Promise<void>((r) => setImmediate(r)).then(async () => {
      const all = releases;
      releases = [];
      released = undefined;
      for (let i = 0; i < all.length; i += RELEASES_PER_WRITE_MAX) {
        const chunk = all.slice(i, i + RELEASES_PER_WRITE_MAX);
        await ctx.ledger.payments.releaseLeases(chunk, ctx.instanceId).catch((err) => ctx.logger.warn({ err, payments: chunk.length }, "lease release failed; the leases expire on their own"));
      }
    });
    return released;
  }

  /** The payment as it stands, if this process still leads it (a queued id is read again). */
  async function current(item: Item): Promise<Payment | undefined> {
    if (item.p) return item.p;
    const p = await ctx.ledger.payments.getPayment(item.id);
    return p && p.leaseOwner === ctx.instanceId && (p.status === "pending" || p.status === "processing") ? p : undefined;
  }

  async function step(item: Item): Promise<void> {
    let retryInMs: number | undefined;
    let p: Payment | undefined;
    try {
      p = await current(item);
      if (!p) return;
      const rail = railFor(rails, p.rail);
      if (!rail) throw new Error(`no ${p.rail} rail`);
      const r = await rail.advance(p);
      if (r.done) return; // final: resolving it cleared its lease
      retryInMs = r.retryInMs ?? 250;
    } catch (err) {
      if (!p) return void (await handOver(item.id, 500));
      // One rule for every failed step (settlementRetry.ts): fail it now (nothing sent, no retry can
      // cure it), or give it to the worker after a growing delay, counted.
      const o = await handleStepError(ctx, p, err, rails.onFinal).catch((e: unknown) => {
        ctx.logger.warn({ err: e, payment_id: item.id }, "payment step failed; the worker will retry");
        return { kind: "retry" as const, inMs: 500, stepErrors: undefined };
      });
      if (o.kind === "stale" || o.kind === "final") return; // another process holds it, or it is final
      return void (await handOver(item.id, o.inMs, o.stepErrors));
    }
    if (closing || Date.now() - item.since + retryInMs > followMs) return void (await handOver(item.id, retryInMs));
    // Look again later without holding a slot; the row is re-read, never re-claimed.
    const timer = setTimeout(async () => {
      waiting.delete(timer);
      const fresh = await ctx.ledger.payments.getPayment(item.id).catch(() => undefined);
      if (!fresh || fresh.leaseOwner !== ctx.instanceId || !["pending", "processing"].includes(fresh.status)) return settle();
      enqueue({ id: fresh.id, p: fresh, since: item.since });
    }, retryInMs);
    waiting.set(timer, item.id);
  }

  function admit(): void {
    const items = incoming.splice(0);
    if (closing) for (const item of items) void handOver(item.id, 0);
    else for (const item of items) queue.push(queued() < rowsMax ? item : { id: item.id, since: item.since });
    pump();
  }

  function enqueue(item: Item): void {
    queue.push(item);
    pump();
  }

  function take(): Item | undefined {
    const item = queue[head++];
    // Drop the taken prefix now and then, so a long queue is not shifted one item at a time.
    if (head > 1_024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
    return item;
  }

  function pump(): void {
    while (active < concurrency && queued() > 0) {
      const item = take()!;
      // Waited past the time it may be followed here: the worker takes it, before its lease runs out.
      if (Date.now() - item.since > followMs) {
        void handOver(item.id, 0);
        continue;
      }
      active++;
      void step(item).finally(() => {
        active--;
        pump();
      });
    }
    settle();
  }

  function settle(): void {
    if (active === 0 && queued() === 0 && incoming.length === 0 && waiting.size === 0) {
      const done = idle;
      idle = [];
      for (const w of done) w();
    }
  }

  return {
    submit(p) {
      if (closing || queued() + incoming.length >= queueMax) return void handOver(p.id, 0);
      // Taken up on the next turn of the event loop, once the request that accepted it has answered:
      // its first step (signing, a commit) must not delay that answer.
      incoming.push({ id: p.id, p, since: Date.now() });
      if (incoming.length === 1) setImmediate(admit);
    },
    /** Stops following payments (the worker takes them), waits for the steps under way and the releases. */
    async drain() {
      closing = true;
      for (const [t, id] of waiting) {
        clearTimeout(t);
        waiting.delete(t);
        void handOver(id, 0);
      }
      for (const item of [...queue.slice(head), ...incoming.splice(0)]) void handOver(item.id, 0);
      queue = [];
      head = 0;
      if (active > 0) await new Promise<void>((r) => idle.push(r));
      await released;
    },
  };
}
