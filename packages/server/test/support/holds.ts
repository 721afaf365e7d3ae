// A small USDC hold for ledger-level tests of the dispatcher and the worker: a funded project and a
// held payment of 1,000 micro-USDC (+ 20 fee) to a fixed recipient, leased as the caller says.
import type { AppContext } from "../../src/context.ts";
import type { NewPayment, PaymentRow } from "../../src/ledger/store.ts";

export async function fundedProject(ctx: AppContext): Promise<string> {
  const project = await ctx.ledger.createProject({ name: "p", plan: "free" });
  await ctx.ledger.db.updateTable("balances").set({ available_micros: 1_000_000_000 }).where("project_id", "=", project.id).execute();
  return project.id;
}

export async function holdSmall(ctx: AppContext, projectId: string, lease: Pick<NewPayment, "inFlightUntil" | "leaseOwner" | "leaseUntil" | "status">): Promise<PaymentRow> {
  const r = await ctx.ledger.hold({
    projectId,
    rail: "usdc_transfer",
    railTxnType: "usdc_transfer",
    amountUnits: 1_000,
    feeUnits: 20,
    amountMicros: 1_000,
    feeMicros: 20,
    currency: "usdc",
    recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    recipientJson: null,
    merchantName: null,
    description: null,
    idempotencyKey: null,
    railState: null,
    ...lease,
  });
  if (r.kind !== "held") throw new Error(`not held: ${r.kind}`);
  return r.payment;
}
