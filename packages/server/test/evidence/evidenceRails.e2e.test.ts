// Evidence of real payments on the real chain, on both databases: an x402 payment to a real @x402/express
// merchant, a USDC transfer and a sandbox bank payment each leave records that verify-evidence accepts —
// signatures and on-chain Transfer logs included — from the database and from an exported file; and the
// API returns a payment's records. The operator's commands, run as command lines against the same database and
// chain: exit 0 on the clean project, exit 1 naming the record after an edit, a deletion or a reordering.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { exportPayments, recordsOfExport } from "../../src/services/evidence/exportPayments.ts";
import { type EvidenceRecord, recordsOf, verifyEvidence } from "../../src/services/evidence/verifyEvidence.ts";
import { evidenceHash } from "../../src/ledger/evidenceHash.ts";
import { dialects } from "../support/db.ts";
import { runCommand } from "../support/deployment.ts";
import { iterate, rechained } from "./support/rechain.ts";
import { type X402World, startX402World } from "../x402/support/x402World.ts";
import { deleteEvidence, evidenceRows, insertEvidence, setEvidence } from "../../src/ledger/testing.ts";

describe.each(dialects)("evidence of each rail on the real chain (%s)", (database) => {
  let w: X402World;
  let projectId: string;
  const dir = mkdtempSync(join(tmpdir(), "aw-evidence-"));
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 50_000_000n });
    projectId = w.server.projectId;
  });
  afterAll(async () => {
    await w?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const chain = () => w.server.server.chain!.client;
  const options = () => ({ domain: { chainId: chain().settings.chainId, usdc: chain().usdcAddress }, receipt: (h: `0x${string}`) => chain().receipt(h) as never });

  test("x402, USDC and bank payments verify from the database and from an export; the API shows each payment's records", async () => {
    const merchant = await w.startMerchant(2, 10_000n);
    const x402 = await w.post("/v1/pay", { recipient: `${merchant.url}/paid`, idempotency_key: "ev-x402" });
    expect(x402.status).toBe(200);
    const usdc = await w.post("/v1/pay", { recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", amount_usd: 1.5 });
    const bank = await w.post("/v1/pay", { recipient: { name: "Payee", account_number: "12345678", routing_number: "021000021" }, amount_usd: 2 });
    for (const p of [x402, usdc, bank]) expect(await w.settle(p.body.id as string, 60_000)).toBe("completed");

    const evidence = await w.get(`/v1/transactions/${x402.body.id}/evidence`);
    expect(evidence.status).toBe(200);
    const records = evidence.body.records as { kind: string; body: string }[];
    expect(records.map((r) => r.kind)).toEqual(expect.arrayContaining(["created", "completed"]));
    const settled = records.map((r) => JSON.parse(r.body).rail_state).find((s) => s?.stage === "settled");
    expect(settled.paymentRequired).toMatchObject({ x402Version: 2 });
    expect(settled.sent.name).toBe("PAYMENT-SIGNATURE");
    expect(settled.settlement).toMatchObject({ source: "receipt", response: expect.any(String), log: { blockNumber: expect.any(Number), logIndex: expect.any(Number) } });
    const bankRecords = (await w.get(`/v1/transactions/${bank.body.id}/evidence`)).body.records as { body: string }[];
    expect(bankRecords.some((r) => JSON.parse(r.body).provider_ref)).toBe(true);
    // USDC and bank transfers record where each relayed transfer's Transfer log is, as x402 does.
    const at = { blockNumber: expect.any(Number), logIndex: expect.any(Number) };
    const lastState = async (id: unknown) => {
      const rs = (await w.get(`/v1/transactions/${id}/evidence`)).body.records as { kind: string; body: string }[];
      return JSON.parse(rs.find((r) => r.kind === "completed")!.body).rail_state;
    };
    expect((await lastState(usdc.body.id)).logs).toEqual([at, at]);
    // Stored by the completion itself: no record of their own before it.
    const usdcKinds = ((await w.get(`/v1/transactions/${usdc.body.id}/evidence`)).body.records as { kind: string }[]).map((r) => r.kind);
    expect(usdcKinds).toEqual(["created", "processing", "completed"]);
    const bankState = await lastState(bank.body.id);
    expect(bankState.logs).toEqual([at]);
    // The bank payment keeps each state its provider reported, with when, the last one what completed it.
    expect(bankState.reported.length).toBeGreaterThanOrEqual(1);
    expect(bankState.reported.at(-1)).toEqual({ status: "completed", at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });

    const ledger = w.ctx.ledger;
    const fromDb = await verifyEvidence(recordsOf(ledger.evidence, projectId), { ...options(), head: await ledger.evidence.head(projectId) });
    expect(fromDb.problems).toEqual([]);
    expect(fromDb.onChainChecked).toBe(3);

    // A USDC transfer's recorded log position moved, the chain re-hashed over it: the chain of blocks disagrees.
    const all: EvidenceRecord[] = [];
    for await (const r of recordsOf(ledger.evidence, projectId)) all.push(r);
    type Logged = { payment_id: string; rail_state?: { logs?: { logIndex: number }[] } };
    const moved = rechained<Logged>(all, (b) => (b.payment_id === usdc.body.id && b.rail_state?.logs ? { ...b, rail_state: { ...b.rail_state, logs: b.rail_state.logs.map((l) => ({ ...l, logIndex: l.logIndex + 7 })) } } : undefined));
    const movedReport = await verifyEvidence(iterate(moved), options());
    expect(movedReport.problems.length).toBeGreaterThan(0);
    expect(movedReport.problems.every((p) => p.code === "log_not_found" && p.paymentId === usdc.body.id)).toBe(true);

    const file = join(dir, `${database}.jsonl`);
    let text = "";
    const written = await exportPayments(ledger.evidence, projectId, "jsonl", async (chunk) => void (text += chunk));
    writeFileSync(file, text);
    expect(written.payments).toBe(3);
    const fromFile = await verifyEvidence(recordsOfExport(createInterface({ input: Readable.from([readFileSync(file, "utf8")]) })), options());
    expect(fromFile.problems).toEqual([]);
    expect(fromFile.records).toBe(fromDb.records);

    // A stored authorization's signature altered in the export: the record is named.
    const tampered = text.split("\n").map((line) => line.replace(/(\\"signature\\":\\"0x)([0-9a-f])/, (_m, a, c) => `${a}${c === "0" ? "1" : "0"}`));
    const changedAt = tampered.findIndex((l, i) => l !== text.split("\n")[i]);
    expect(changedAt).toBeGreaterThan(0);
    const report = await verifyEvidence(recordsOfExport(Readable.from(tampered)), options());
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => p.code)).toContain("hash_mismatch");

    let csv = "";
    await exportPayments(ledger.evidence, projectId, "csv", async (chunk) => void (csv += chunk));
    const rows = csv.trim().split("\n");
    expect(rows).toHaveLength(4);
    expect(rows[0]).toMatch(/^payment_id,created_at,rail,status,amount,fee/);
    expect(rows.slice(1).every((r) => /,[0-9a-f]{64}$/.test(r))).toBe(true);
  });

  // After the payments of the test above: its three real payments are the project's records.
  test("verify-evidence and export as command lines: 0 on the clean project, 1 naming an edited, deleted or moved record", async () => {
    const cli = (args: string[]) => runCommand([...args, "--data-dir", w.server.dataDir], { AGENTWALLET_DATA_DIR: w.server.dataDir, DATABASE_URL: w.ctx.config.databaseUrl ?? "" });
    const verify = () => cli(["verify-evidence", "--project", projectId]);
    const clean = await verify();
    // The command says which database it read (a URL's password hidden), on stderr, and nothing else there.
    const named = database === "sqlite" ? join(w.server.dataDir, "agentwallet.db") : w.ctx.config.databaseUrl!.replace(/^(postgres(?:ql)?:\/\/[^:@/]+:)[^@]*@/, "$1***@");
    expect(clean.stderr).toBe(`database: ${database === "sqlite" ? "SQLite" : "PostgreSQL"} ${named}\n`);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/^Evidence holds: \d+ record\(s\) of 3 payment\(s\), 3 transaction\(s\) read on-chain\./);

    const jsonl = join(dir, `${database}-cli.jsonl`);
    const csv = join(dir, `${database}-cli.csv`);
    expect(await cli(["export", "--project", projectId, "--format", "jsonl", "--out", jsonl])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Exported 3 payment\(s\) and \d+ evidence record\(s\)/) });
    expect(await cli(["export", "--project", projectId, "--format", "csv", "--out", csv])).toMatchObject({ code: 0 });
    expect(readFileSync(csv, "utf8").trim().split("\n")).toHaveLength(4);
    expect(await cli(["verify-evidence", "--file", jsonl])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Evidence holds/) });

    const ledger = w.ctx.ledger;
    const rows = await evidenceRows(ledger, projectId);
    expect(rows.length).toBeGreaterThanOrEqual(6);
    const set = (r: (typeof rows)[number], values: Partial<(typeof rows)[number]>) => setEvidence(ledger, projectId, r.seq, values);
    const names = (out: { code: number; stdout: string }, seq: number | bigint, paymentId: string) => {
      expect(out.code).toBe(1);
      expect(out.stdout).toMatch(/^Evidence does not hold/);
      expect(out.stdout).toContain(`record ${seq} (payment ${paymentId})`);
    };

    // Edited: the amount in a completed payment's record.
    const completed = rows.find((r) => r.kind === "completed")!;
    const edited = completed.body.replace(/("amount_micros"\s*:\s*)(\d)/, (_m, key: string, d: string) => `${key}${d === "9" ? "8" : "9"}`);
    expect(edited).not.toBe(completed.body);
    await set(completed, { body: edited });
    names(await verify(), completed.seq, completed.payment_id);
    await set(completed, { body: completed.body });

    // Deleted: a record in the middle of the chain; the next one is named.
    const middle = rows[2]!;
    await deleteEvidence(ledger, projectId, middle.seq);
    names(await verify(), rows[3]!.seq, rows[3]!.payment_id);
    await insertEvidence(ledger, middle);

    // Reordered: two neighbours swapped, each re-hashed at its new place.
    const [a, b] = [rows[3]!, rows[4]!];
    await set(a, { payment_id: b.payment_id, kind: b.kind, at: b.at, body: b.body, hash: evidenceHash({ ...b, prev_hash: a.prev_hash, seq: Number(a.seq) }) });
    await set(b, { payment_id: a.payment_id, kind: a.kind, at: a.at, body: a.body, hash: evidenceHash({ ...a, prev_hash: b.prev_hash, seq: Number(b.seq) }) });
    names(await verify(), b.seq, a.payment_id);
    for (const r of [a, b]) await set(r, r);

    expect((await verify()).code).toBe(0);
  });
});
