// Payments for the pay tests: a USDC payment to hold (`usdcPayment`), a funded project (in place, or by a
// deposit) and a small held USDC payment (1,000 micro-USDC + 20 fee) for ledger-level tests of the dispatcher
// and the worker; a paying principal for holds made directly; and a bounded wait until a payment is final.
import type { AppContext } from "../../src/context.ts";
import type { Principal } from "../../src/domain/principal.ts";
import type { NewPayment } from "../../src/ledger/payments.ts";
import type { Payment } from "../../src/domain/payment.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { holdControlsOf } from "../../src/domain/spending.ts";
import { tokenControls } from "../../src/services/spendingControls.ts";
import { setAvailable } from "../../src/ledger/testing.ts";

/** A project funded with `micros` by a confirmed deposit, so the journal verifies; the deposit's hash is `0x<project id>`. */
export async function depositFundedProject(ledger: Ledger, micros: number): Promise<string> {
  const p = await ledger.projects.create({ name: "p", plan: "free" });
  const key = { chain: "base", txHash: `0x${p.id}`, logIndex: 0 };
  await ledger.deposits.recordSeen({ ...key, projectId: p.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: micros, blockNumber: 1, blockHash: "0xh" });
  await ledger.deposits.credit(key);
  return p.id;
}

export async function fundedProject(ctx: AppContext): Promise<string> {
  const project = await ctx.ledger.projects.create({ name: "p", plan: "free" });
  await setAvailable(ctx.ledger, project.id, 1_000_000_000);
  return project.id;
}

/** A USDC payment of `amountMicros` + `feeMicros` to hold, with no key, leased to "test" unless `more` says otherwise. */
export function usdcPayment(projectId: string, amountMicros: number, feeMicros: number, more: Partial<NewPayment> = {}): NewPayment {
  return {
    projectId,
    rail: "usdc_transfer",
    railTxnType: "usdc_transfer",
    amountUnits: amountMicros,
    feeUnits: feeMicros,
    amountMicros,
    feeMicros,
    currency: "usdc",
    recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    recipientJson: null,
    merchantName: null,
    description: null,
    idempotencyKey: null,
    railState: null,
    inFlightUntil: new Date().toISOString(),
    leaseOwner: "test",
    ...more,
  };
}

export async function holdSmall(ctx: AppContext, projectId: string, lease: Pick<NewPayment, "inFlightUntil" | "leaseOwner" | "leaseUntil" | "status">): Promise<Payment> {
  const r = await ctx.ledger.payments.hold(usdcPayment(projectId, 1_000, 20, lease));
  if (r.kind !== "held") throw new Error(`not held: ${r.kind}`);
  return r.payment;
}

/**
 * A principal with `read` and `pay` on a free-plan project, for holds made without a request. It names no wallet
 * (custody refuses a negative index): a hold never signs, and nothing may sign for it from another project's wallet.
 */
export function payingPrincipal(projectId: string): Principal {
  return { tokenId: "t", projectId, permissions: new Set(["read", "pay"]), paused: false, plan: "free", walletIndex: -1, balance: { availableMicros: 0, pendingMicros: 0, totalFundedMicros: 0, totalSpentMicros: 0, walletAddress: null, walletFrozenAt: null } };
}

/** Polls the payment until it is completed or failed (at most ~20 s), and returns that row. */
export async function untilFinal(ctx: AppContext, id: string): Promise<Payment> {
  for (let i = 0; i < 400; i++) {
    const p = (await ctx.ledger.payments.getPayment(id))!;
    if (p.status === "completed" || p.status === "failed") return p;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`payment ${id} not final: ${(await ctx.ledger.payments.getPayment(id))?.status}`);
}

/** A hold of `usd` (no fee) to an address by `tokenId`, judged by the controls authentication reads for it (its own, its ancestors', its project's), as its payment's would be. */
export async function holdByToken(ctx: AppContext, tokenId: string, usd: number, recipient = "0x90F79bf6EB2c4f870365E785982E1f101E93b906") {
  return ctx.ledger.payments.hold(await paymentByToken(ctx, tokenId, usd, recipient));
}

/** holdByToken's payment, to hold later. */
export async function paymentByToken(ctx: AppContext, tokenId: string, usd: number, recipient = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"): Promise<NewPayment> {
  const { projectId, controls } = await tokenControls(ctx, tokenId);
  const hold = holdControlsOf({ tokenId, controls }, { rail: "usdc_transfer", address: recipient }, { bankKey: new Uint8Array(32), approvalTimeoutMs: 60_000 });
  return usdcPayment(projectId, usd * 1_000_000, 0, { feeMicros: 0, feeUnits: 0, tokenId, ...(hold ? { controls: hold } : {}) });
}
