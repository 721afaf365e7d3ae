/**
 * What must hold after every fault scenario, once the faults stop, within bounded time:
 *   every payment final (a bank payment to the return account: reversed); one payment per key;
 *   no recipient paid twice and none paid for a payment the ledger failed (on-chain balances of the
 *   recipients against the ledger); every completed payment's transaction on the chain; nothing held;
 *   the relayer's nonce on the chain caught up with the transactions it stored; `verify-ledger` passes;
 *   `reconcile --json` exits 0 with zero drift on every project; and a new payment of a new project
 *   completes (the relayer is not wedged).
 * A failure throws one message with everything needed to see what stuck and why: the seed, the
 * scenario's events, each problem, and the open payments with their rail state and relayer nonces.
 */
import type { Address, Hex } from "viem";
import type { FaultWorld } from "./faultWorld.ts";
import { type Answer, pay, type Spec } from "./stream.ts";
import { runCli as runCommandLine } from "../../../src/cli/run.ts";
import { balanceRows, paymentRows, relayerTxs, type Row } from "../../../src/ledger/testing.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Payment = Pick<Row<"payments">, "id" | "project_id" | "rail" | "status" | "amount_micros" | "fee_micros" | "recipient" | "recipient_json" | "idempotency_key" | "tx_hash" | "provider_ref" | "rail_state" | "failure_reason" | "attempts" | "next_attempt_at" | "lease_owner" | "refund_tx_hash">;

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** The operator's command, run by the CLI's own code in this process against the world's database and chain. */
export async function runCli(world: FaultWorld, args: string[]): Promise<CliResult> {
  const out = { stdout: "", stderr: "" };
  const code = await runCommandLine([...args, "--data-dir", world.dir], {
    env: { ...process.env, ...world.env },
    stdout: { write: (s: string) => (out.stdout += s) },
    stderr: { write: (s: string) => (out.stderr += s) },
  });
  return { code, ...out };
}

async function payments(world: FaultWorld): Promise<Payment[]> {
  return paymentRows(world.ledger);
}

/** The kind a payment was planned as, by its key (a bank account number is kept masked, so it cannot tell). */
const kindOf = (specs: Spec[], p: Payment) => specs.find((s) => s.key === p.idempotency_key)?.kind;
/** A payment to the account the sandbox off-ramp returns: it must end reversed. */
const isReturnAccount = (specs: Spec[], p: Payment) => p.rail === "fiat" && kindOf(specs, p) === "fiat_return";

/** Problems that settle by themselves once the service catches up; checked until none or the deadline. */
async function settledProblems(world: FaultWorld, specs: Spec[]): Promise<{ problems: string[]; rows: Payment[] }> {
  const problems: string[] = [];
  const rows = await payments(world);
  const open = rows.filter((p) => p.status === "pending" || p.status === "processing" || (isReturnAccount(specs, p) && p.status === "completed"));
  for (const p of open) problems.push(`payment ${p.id} (${p.rail}) still ${p.status}${isReturnAccount(specs, p) ? " (return account: expected reversed)" : ""}`);
  for (const b of (await balanceRows(world.ledger)).filter((b) => b.held_micros !== 0)) {
    problems.push(`project ${b.project_id} still holds ${b.held_micros} micros`);
  }
  // Each usdc recipient is fresh: its balance is exactly what the ledger completed to it.
  const byRecipient = new Map<string, number>();
  for (const p of rows) if (p.rail === "usdc_transfer" && p.status === "completed") byRecipient.set(p.recipient.toLowerCase(), (byRecipient.get(p.recipient.toLowerCase()) ?? 0) + p.amount_micros);
  for (const s of specs) {
    if (!s.to) continue;
    const onchain = Number(await world.chain.balanceOf(s.to));
    const ledger = byRecipient.get(s.to.toLowerCase()) ?? 0;
    if (onchain !== ledger) problems.push(`recipient ${s.to} (key ${s.key}) holds ${onchain} on-chain, the ledger completed ${ledger} to it${onchain > ledger ? " — PAID MORE THAN RECORDED" : ""}`);
  }
  for (const [name, m] of Object.entries(world.merchants)) {
    const ledger = rows.filter((p) => p.rail === "x402" && p.status === "completed" && p.recipient.startsWith(m.url)).reduce((s, p) => s + p.amount_micros, 0);
    const onchain = Number(await world.chain.balanceOf(m.payTo));
    if (onchain !== ledger) problems.push(`x402 merchant ${name} (${m.payTo}) holds ${onchain} on-chain, the ledger completed ${ledger} to it`);
  }
  // The off-ramp keeps the USDC of completed payouts and sends back that of failed and returned ones.
  const fiatLedger = rows.filter((p) => p.rail === "fiat" && p.status === "completed").reduce((s, p) => s + p.amount_micros, 0);
  const fiatOnchain = Number(await world.chain.balanceOf(world.offramp));
  if (fiatOnchain !== fiatLedger) problems.push(`off-ramp ${world.offramp} holds ${fiatOnchain} on-chain, the ledger's completed bank payments total ${fiatLedger}`);
  // A completed payment's transaction must be on the chain (a rollback or a lost transaction removes it).
  for (const p of rows) {
    if (p.status !== "completed" || !p.tx_hash) continue;
    const receipt = await world.chain.receipt(p.tx_hash as Hex);
    if (!receipt) problems.push(`payment ${p.id} (${p.rail}) is completed but its transaction ${p.tx_hash} is not on the chain`);
    else if (receipt !== "success") problems.push(`payment ${p.id} (${p.rail}) is completed but its transaction ${p.tx_hash} reverted`);
  }
  const nonces = await relayerNonces(world);
  if (nonces.unmined.length) problems.push(`relayer nonce on chain ${nonces.chain.latest} (pending ${nonces.chain.pending}), stored up to ${nonces.storedMax}: ${nonces.unmined.length} stored transaction(s) not mined`);
  return { problems, rows };
}

async function relayerNonces(world: FaultWorld) {
  const chain = await world.chain.nonces(world.relayer);
  const stored = await relayerTxs(world.ledger, { relayers: [world.relayer, world.relayer.toLowerCase()] });
  const storedMax = stored.length ? stored[stored.length - 1]!.nonce : -1;
  const unmined = stored.filter((r) => r.nonce >= chain.latest);
  return { chain, storedMax, unmined };
}

function describePayment(p: Payment): string {
  const state = p.rail_state && p.rail_state.length > 400 ? `${p.rail_state.slice(0, 400)}…` : p.rail_state;
  return `  ${p.id} ${p.rail} ${p.status} amount=${p.amount_micros} fee=${p.fee_micros} key=${p.idempotency_key} attempts=${p.attempts} next=${p.next_attempt_at} lease=${p.lease_owner ?? "-"} tx=${p.tx_hash ?? "-"} ref=${p.provider_ref ?? "-"} reason=${p.failure_reason ?? "-"}\n    rail_state=${state ?? "-"}`;
}

export type CheckOptions = { seed: number; scenario: string; specs: Spec[]; answers: Answer[]; finalMs?: number };

export async function checkInvariants(world: FaultWorld, o: CheckOptions): Promise<{ summary: string }> {
  const problems: string[] = [];
  for (const a of o.answers) {
    if (a.status === 0 || a.status >= 500) problems.push(`key ${a.spec.key} (${a.spec.kind}) got no answer: ${a.error}`);
    else if (a.status >= 400 && a.spec.kind !== "x402_v1" && a.spec.kind !== "x402_v2") problems.push(`key ${a.spec.key} (${a.spec.kind}) was refused ${a.status}: ${a.error}`);
  }
  // Phase 1: the service catches up (bounded).
  const over = world.within(o.finalMs ?? 90_000);
  let settled = await settledProblems(world, o.specs);
  while (settled.problems.length && !over()) {
    await sleep(500);
    settled = await settledProblems(world, o.specs);
  }
  problems.push(...settled.problems);
  world.log(`settled: ${settled.problems.length} problem(s) left`);
  const rows = settled.rows;
  // One payment per key, and every answered id is a stored payment.
  const byKey = new Map<string, number>();
  for (const p of rows) if (p.idempotency_key) byKey.set(`${p.project_id}/${p.idempotency_key}`, (byKey.get(`${p.project_id}/${p.idempotency_key}`) ?? 0) + 1);
  for (const a of o.answers) {
    const n = byKey.get(`${a.spec.project.id}/${a.spec.key}`) ?? 0;
    if (n > 1) problems.push(`key ${a.spec.key} has ${n} payments`);
    if (a.status >= 200 && a.status < 300 && a.id && !rows.some((p) => p.id === a.id)) problems.push(`key ${a.spec.key} was answered with id ${a.id}, which the ledger does not have`);
  }
  // Phase 2: the operator's tools agree.
  // Read-only both: run side by side.
  let [verify, rec] = await Promise.all([runCli(world, ["verify-ledger", "--json"]), runCli(world, ["reconcile", "--json"])]);
  if (verify.code !== 0) problems.push(`verify-ledger exited ${verify.code}: ${verify.stdout.slice(0, 2_000)} ${verify.stderr.slice(0, 1_000)}`);
  // A refund or a fee in flight moves a wallet for a moment: ask again a few times (bounded).
  for (let i = 0; i < 3 && rec.code !== 0; i++) {
    await sleep(2_000);
    rec = await runCli(world, ["reconcile", "--json"]);
  }
  world.log(`verify-ledger exited ${verify.code}, reconcile ${rec.code}`);
  let driftRows: unknown[] = [];
  let lostLegs: unknown[] = [];
  try {
    const report = JSON.parse(rec.stdout) as { rows: { drift_micros: number; ok?: boolean }[]; lost_legs?: unknown[] };
    driftRows = report.rows.filter((r) => r.drift_micros !== 0 || r.ok === false);
    lostLegs = report.lost_legs ?? [];
  } catch {
    problems.push(`reconcile --json printed no JSON: ${rec.stdout.slice(0, 500)} ${rec.stderr.slice(0, 1_000)}`);
  }
  if (rec.code !== 0 || driftRows.length || lostLegs.length) problems.push(`reconcile exited ${rec.code}; rows with drift: ${JSON.stringify(driftRows)}; lost legs: ${JSON.stringify(lostLegs)}`);
  // Phase 3: the relayer is not wedged — a new project's payment completes.
  const live = await liveness(world);
  if (live) problems.push(live);

  if (problems.length === 0) return { summary: summarize(rows) };
  const nonces = await relayerNonces(world).catch((e: Error) => ({ error: e.message }));
  const open = rows.filter((p) => !["completed", "failed", "reversed"].includes(p.status) || isReturnAccount(o.specs, p));
  const bank = rows.filter((p) => p.rail === "fiat");
  const offrampTransfers = await world.chain.transfersOf(world.offramp).catch((e: Error) => e.message);
  throw new Error(
    [
      `fault scenario "${o.scenario}" on ${world.dialect} (replay: FAULT_SEED=${o.seed}) left ${problems.length} problem(s):`,
      ...problems.map((p) => `- ${p}`),
      `relayer ${world.relayer}: ${JSON.stringify(nonces)}`,
      `open or unreturned payments (${open.length}):`,
      ...open.slice(0, 30).map(describePayment),
      `all payments: ${summarize(rows)}`,
      `bank payments (${bank.length}):`,
      ...bank.slice(0, 30).map((p) => `  ${kindOf(o.specs, p) ?? "?"} ${p.id} ${p.status} amount=${p.amount_micros} ref=${p.provider_ref ?? "-"} refund_tx=${p.refund_tx_hash ?? "-"}`),
      `off-ramp USDC transfers (block tx from → to value):`,
      ...(typeof offrampTransfers === "string" ? [`  ${offrampTransfers}`] : offrampTransfers.slice(0, 60).map((t) => `  ${t.block} ${t.tx} ${t.from} → ${t.to} ${t.value}`)),
      `proxy injected: ${JSON.stringify(world.proxy.injected())}`,
      `events:`,
      ...world.events().map((e) => `  ${e}`),
      `server output (tail):`,
      world.server().output().slice(-4_000),
    ].join("\n"),
  );
}

function summarize(rows: Payment[]): string {
  const c = new Map<string, number>();
  for (const p of rows) {
    const k = `${p.rail}:${p.status}${p.failure_reason ? ` (${p.failure_reason.slice(0, 60)})` : ""}`;
    c.set(k, (c.get(k) ?? 0) + 1);
  }
  return [...c.entries()].sort().map(([k, v]) => `${k}=${v}`).join("; ");
}

async function liveness(world: FaultWorld): Promise<string | undefined> {
  try {
    const project = await world.newProject("liveness", 1_000_000n);
    const to = `0x${"1a".repeat(20)}` as Address;
    const answer = await pay(world, { key: "liveness", kind: "usdc", project, to, body: { recipient: to, amount_usd: 0.01, idempotency_key: "liveness" } }, 30_000);
    if (!answer.id) return `liveness: a new project's payment was not accepted: ${answer.status} ${answer.error}`;
    const over = world.within(45_000);
    for (;;) {
      const p = await world.ledger.payments.getPayment(answer.id);
      if (p?.status === "completed") return undefined;
      if (p && p.status !== "pending" && p.status !== "processing") return `liveness: a new project's payment ${answer.id} ended ${p.status} (${p.failureReason})`;
      if (over()) return `liveness: the relayer is wedged — a new project's payment ${answer.id} is still ${p?.status} after 45 s`;
      await sleep(200);
    }
  } catch (err) {
    return `liveness: ${(err as Error).message}`;
  }
}
