/**
 * Moves every open payment forward: claims due payments with a lease (two processes never work one
 * payment at once), calls its rail's `advance`, and schedules the next look. After a crash, expired
 * leases make every `pending`/`processing` payment claimable again, so each reaches a final state.
 */
import type { RailDeps } from "../rails/railDeps.ts";
import type { LeaseRelease } from "../ledger/payments.ts";
import { type Rails, railFor } from "../rails/rails.ts";
import { handleStepError } from "./settlementRetry.ts";
import type { Logger } from "pino";
import { type Loop, startLoop } from "../workers/loop.ts";

export type PaymentWorkerOptions = { leaseMs?: number; batchMax?: number; backoffMaxMs?: number };

export function createPaymentWorker(ctx: RailDeps, rails: Rails, o: PaymentWorkerOptions = {}) {
  const leaseMs = o.leaseMs ?? 30_000;
  const batchMax = o.batchMax ?? 50;
  const backoffMaxMs = o.backoffMaxMs ?? 30_000;
  const owner = `worker:${ctx.instanceId}`;

  /**
   * One pass; returns how many payments it touched. A payment that reached its final state needs no
   * release (resolving it cleared its lease); the others' leases are released together, each with
   * its next attempt, in one write at the end of the pass.
   */
  async function runOnce(): Promise<number> {
    const claimed = await ctx.ledger.payments.claimDuePayments(owner, leaseMs, batchMax);
    const releases: LeaseRelease[] = [];
    await Promise.all(
      claimed.map(async (p) => {
        const rail = railFor(rails, p.rail);
        let retryInMs = Math.min(backoffMaxMs, 500 * 2 ** Math.min(p.attempts, 6));
        let stepErrors: number | undefined;
        try {
          // A payment waiting for a person: nothing to do until it is decided or its time runs out.
          const approval = await ctx.ledger.payments.settleApproval(p);
          if (approval.handled) {
            if (approval.payment?.status === "failed") return rails.onFinal?.(approval.payment, "failed");
            retryInMs = Math.max(1_000, Date.parse(p.approvalUntil ?? "") - ctx.clock().getTime());
            throw new ApprovalWait();
          }
          if (!rail) throw new Error(`no ${p.rail} rail configured`);
          const r = await rail.advance(p);
          if (r.done) return;
          retryInMs = r.retryInMs ?? retryInMs;
        } catch (err) {
          if (err instanceof ApprovalWait) {
            releases.push({ id: p.id, nextAttemptAt: new Date(ctx.clock().getTime() + retryInMs).toISOString(), stepErrors: undefined });
            return;
          }
          // One rule for every failed step (settlementRetry.ts): fail it now, or back off and count.
          const o = await handleStepError(ctx, p, err, rails.onFinal).catch((e: unknown) => {
            ctx.logger.warn({ err: e, payment_id: p.id }, "payment step failed; will retry");
            return { kind: "retry" as const, inMs: retryInMs, stepErrors: undefined };
          });
          if (o.kind === "final") return;
          if (o.kind === "stale") ctx.logger.debug({ payment_id: p.id }, "payment advanced elsewhere; looking again later");
          else ({ inMs: retryInMs, stepErrors } = o);
        }
        releases.push({ id: p.id, nextAttemptAt: new Date(ctx.clock().getTime() + retryInMs).toISOString(), stepErrors });
      }),
    );
    await ctx.ledger.payments.releaseLeases(releases, owner);
    return claimed.length;
  }

  /** Runs passes until nothing is due (bounded), for the CLI and tests. */
  async function drain(maxPasses = 100): Promise<void> {
    for (let i = 0; i < maxPasses; i++) if ((await runOnce()) === 0) return;
  }

  return { runOnce, drain, batchMax };
}

/**
 * Runs the worker every `intervalMs`; a full pass means more may be due, so the next one starts at
 * once instead of after the interval (a backlog drains at the rails' pace, not one batch per interval).
 */
export function startPaymentWorkerLoop(worker: ReturnType<typeof createPaymentWorker>, intervalMs: number, logger: Logger): Loop {
  const loop: Loop = startLoop("payments", intervalMs, async () => {
    if ((await worker.runOnce()) >= worker.batchMax) loop.kick();
  }, logger);
  return loop;
}

/** Thrown to leave a payment that waits for approval untouched until its time runs out. */
class ApprovalWait extends Error {}
