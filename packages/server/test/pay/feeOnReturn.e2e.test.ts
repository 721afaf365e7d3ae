/**
 * An ACH return after completion: the amount comes back on-chain from the off-ramp and in the ledger; the
 * fee, swept to the treasury when the payout completed, stays earned. So the wallet on-chain equals
 * available + held once nothing is in flight, a payment of the whole available completes, and
 * `agentwallet reconcile` judges every project and exits non-zero on drift.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Balance, PayResponse, TransactionList } from "@agentwallet/api";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { commands } from "../../src/cli/commands.ts";
import { loadConfig } from "../../src/config.ts";
import { SANDBOX_RETURN_ACCOUNT } from "../../src/rails/fiat/sandboxProvider.ts";
import { type TestServer, startTestServer } from "../../src/testing/harness.ts";
import { createPgSchema, dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";
import { openPayments, shiftAvailable } from "../../src/ledger/testing.ts";
import { agentwalletBin } from "../support/testBuild.ts";

const run = promisify(execFile);
// The run's bundle of the service (support/testBuild.ts).
const bin = agentwalletBin();
const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe.each(dialects)("fee on an ACH return (%s)", (dialect) => {
  let s: TestServer;
  let pg: Awaited<ReturnType<typeof createPgSchema>> | undefined;
  let call: (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>;
  beforeAll(async () => {
    pg = dialect === "postgres" ? await createPgSchema() : undefined;
    s = await startTestServer({ database: dialect, databaseUrl: pg?.url, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
    await s.fund(20_000_000n);
    call = async (method, path, body) => {
      const res = await fetch(`${s.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, json: await res.json() };
    };
  });
  afterAll(async () => {
    await s?.stop();
    await pg?.drop();
  });

  const ledger = () => s.server.ctx.ledger;
  const settled = (id: string, statuses = ["completed", "failed", "reversed"]) =>
    poll(`payment ${id} in ${statuses.join("/")}`, async () => {
      const p = await ledger().payments.getPayment(id);
      return p && statuses.includes(p.status) ? p : undefined;
    });
  const nothingOpen = () =>
    poll("no open payment", async () => ((await openPayments(ledger())).length === 0 ? true : undefined));
  /** The `reconcile` command in this process (the binary costs seconds to start): its exit code and output. */
  const reconcileNow = async (json: boolean) => {
    const config = loadConfig({ AGENTWALLET_DATA_DIR: s.dataDir, ...(pg ? { DATABASE_URL: pg.url } : {}) });
    let stdout = "";
    const code = await commands.reconcile!({ config, args: [], options: {}, io: { json, out: (human, data) => void (stdout = json ? JSON.stringify(data) : human) } });
    return { code, stdout };
  };
  /** The `agentwallet reconcile` binary itself. */
  const reconcileCli = async (json: boolean) => {
    const args = [bin, "reconcile", "--data-dir", s.dataDir, ...(json ? ["--json"] : [])];
    const env = { ...process.env, DATABASE_URL: pg?.url ?? "" };
    try {
      const { stdout } = await run(process.execPath, args, { env, timeout: 60_000 });
      return { code: 0, stdout, stderr: "" };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      if (typeof e.code !== "number") throw err;
      // stdout alone: the CLI names its database on stderr, and JSON output must parse as it is.
      return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
    }
  };

  test("behavior: a return credits the amount back and keeps the fee; the wallet on-chain equals available + held", async () => {
    const before = Balance.parse((await call("GET", "/v1/balance")).json);
    const res = await call("POST", "/v1/pay", { recipient: { name: "Returns Co", account_number: SANDBOX_RETURN_ACCOUNT, routing_number: "021000021" }, amount_usd: 4 });
    expect(res.status).toBe(201);
    const paid = PayResponse.parse(res.json);
    expect(paid).toMatchObject({ amount_charged: 400, fee: 8 });
    const reversed = await settled(paid.id, ["reversed"]);
    expect(reversed.failureReason).toMatch(/R01/);
    await nothingOpen();
    const after = Balance.parse((await call("GET", "/v1/balance")).json);
    // 4.00 USD came back; the 0.08 USD fee (80,000 micro-USDC) paid for the rail's work and stays spent.
    expect(before.available - after.available).toBe(80_000);
    expect(after.total_spent - before.total_spent).toBe(80_000);
    const onChain = await s.server.chain!.client.usdcBalance(after.wallet_address as Address);
    const b = (await ledger().balances.get(s.projectId))!;
    expect(Number(onChain)).toBe(b.available_micros + b.held_micros);
    const list = TransactionList.parse((await call("GET", "/v1/transactions?limit=2")).json);
    expect(list.transactions.map((t) => [t.type, t.status, t.amount])).toEqual([
      ["payment", "reversed", 400],
      ["platform_fee", "completed", 8],
    ]);
    expect((await ledger().verify()).problems).toEqual([]);
  });

  test("behavior: after a return, a payment of the whole available completes", async () => {
    await nothingOpen();
    const available = (await ledger().balances.get(s.projectId))!.available_micros;
    // The largest amount whose amount + fee (2%, rounded up) the available balance covers.
    let amount = Math.floor((available * 10_000) / 10_200);
    while (amount + 1 + Math.ceil(((amount + 1) * 200) / 10_000) <= available) amount++;
    const res = await call("POST", "/v1/pay", { recipient, amount_usd: amount / 1_000_000 });
    expect(res.status).toBe(201);
    const done = await settled(res.json.id);
    expect([done.status, done.failureReason]).toEqual(["completed", null]);
    await nothingOpen();
    const b = (await ledger().balances.get(s.projectId))!;
    expect(b.available_micros).toBeLessThanOrEqual(1);
    expect(Number(await s.server.chain!.client.usdcBalance(b.wallet_address as Address))).toBe(b.available_micros + b.held_micros);
  });

  test("behavior: reconcile judges every project after a return and reports zero drift, in JSON and in text", async () => {
    await nothingOpen();
    const other = await ledger().projects.create({ name: "no wallet yet", plan: "free" });
    const json = await reconcileCli(true);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.ok).toBe(true);
    const ids = report.rows.map((r: { project_id: string }) => r.project_id);
    expect(ids).toEqual(expect.arrayContaining([s.projectId, other.id]));
    for (const r of report.rows) expect(r).toMatchObject({ drift_micros: 0, ok: true, judged: "exact" });
    const text = await reconcileNow(false);
    expect(text.code).toBe(0);
    // Text carries every figure the JSON carries.
    for (const r of report.rows) {
      const line = text.stdout.split("\n").find((l) => l.includes(r.project_id))!;
      for (const [k, v] of Object.entries(r)) if (k !== "project_id" && v !== null) expect(line, `${k} in ${line}`).toContain(String(v));
    }
  });

  test("error: reconcile exits non-zero on a drift, also for a project with a payment open", async () => {
    await s.fund(1_000_000n);
    await nothingOpen();
    // A payment held and leased far ahead, so no worker moves it: the project is judged by range.
    const far = new Date(Date.now() + 3_600_000).toISOString();
    const held = await ledger().payments.hold({
      projectId: s.projectId, rail: "usdc_transfer", railTxnType: "usdc_transfer", amountUnits: 1, feeUnits: 0, amountMicros: 1, feeMicros: 0, currency: "usdc",
      recipient, recipientJson: null, merchantName: null, description: "open", idempotencyKey: null, railState: null, inFlightUntil: far, leaseOwner: "reconcile-test",
    });
    expect(held.kind).toBe("held");
    const open = JSON.parse((await reconcileNow(true)).stdout);
    const row = open.rows.find((r: { project_id: string }) => r.project_id === s.projectId);
    expect(row).toMatchObject({ judged: "range", open_payments: 1, drift_micros: 0, ok: true });
    // The open payment may or may not have left the wallet: on-chain must lie in [available, available + held].
    // The ledger now claims one micro-USDC more than the wallet can hold whatever the payment did.
    await shiftAvailable(ledger(), s.projectId, 2);
    const drifted = await reconcileCli(true);
    expect(drifted.code).not.toBe(0);
    const report = JSON.parse(drifted.stdout);
    expect(report.ok).toBe(false);
    expect(report.rows.find((r: { project_id: string }) => r.project_id === s.projectId)).toMatchObject({ ok: false, drift_micros: -1 });
    const text = await reconcileNow(false);
    expect(text.code).not.toBe(0);
    expect(text.stdout).toMatch(/drift/i);
  });
});
