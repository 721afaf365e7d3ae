// The evidence chain in the database, on both databases: every change of a payment writes one record in
// its own transaction, numbered and chained per project without a fork however many writers race (on
// PostgreSQL, two ledgers on two pools stand for two processes); and any record edited, deleted or moved
// afterwards is named by the check.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Ledger } from "../../src/ledger/store.ts";
import { type OpenedDb, openDb } from "../../src/ledger/db.ts";
import { evidenceHash } from "../../src/ledger/evidenceHash.ts";
import { recordsOf, verifyEvidence } from "../../src/services/evidence/verifyEvidence.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { deleteEvidence, evidenceRows, insertEvidence, setAvailable, setEvidence } from "../../src/ledger/testing.ts";
import { newId } from "../../src/ids.ts";
import { type HoldControls, windowStart } from "../../src/domain/spending.ts";

const domain = { chainId: 8453, usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" as const };

describe.each(dialects)("evidence chain (%s)", (dialect) => {
  let t: TestDb;
  let ledgers: Ledger[];
  let second: OpenedDb | undefined;
  let projectId: string;
  const check = async () => verifyEvidence(recordsOf(ledgers[0]!.evidence, projectId), { domain, head: await ledgers[0]!.evidence.head(projectId) });
  const ledger = () => ledgers[0]!;

  beforeAll(async () => {
    t = await createTestDb(dialect);
    ledgers = [ledgerOn(t)];
    if (dialect === "postgres") {
      second = openDb({ kind: "postgres", url: t.url! });
      ledgers.push(ledgerOn(second));
    }
    const project = await ledgers[0]!.projects.create({ name: "e", plan: "free" });
    projectId = project.id;
    await setAvailable(ledger(), projectId, 1_000_000_000);
  });
  afterAll(async () => {
    await second?.close();
    await t?.drop();
  });

  test("concurrent payments of one project write one unbroken chain: a record per change, in its transaction", async () => {
    const held = await Promise.all(Array.from({ length: 40 }, (_, i) => ledgers[i % ledgers.length]!.payments.hold(usdcPayment(projectId, 1_000 + i, 20))));
    const ids = held.map((h) => (h.kind === "held" ? h.payment.id : undefined)).filter((x): x is string => x !== undefined);
    expect(ids).toHaveLength(40);
    await Promise.all(ids.map((id, i) => ledgers[i % ledgers.length]!.payments.resolve(id, i % 2 ? "completed" : "failed", { failureCode: i % 2 ? null : "x402_not_sent" })));
    const report = await check();
    expect(report.problems).toEqual([]);
    expect(report.records).toBe(80);
    const head = await ledgers[0]!.evidence.head(projectId);
    expect(head.seq).toBe(80);
    const one = await ledgers[0]!.evidence.ofPayment(projectId, ids[1]!);
    expect(one.map((r) => r.kind)).toEqual(["created", "completed"]);
    expect(JSON.parse(one[1]!.body)).toMatchObject({ payment_id: ids[1], status: "completed", amount_micros: 1_001, fee_micros: 20 });
  });

  test("a record edited in any field is named", async () => {
    for (const field of ["body", "kind", "at", "payment_id", "prev_hash", "hash"] as const) {
      const [r] = await evidenceRows(ledger(), projectId, { seqs: [7] });
      const edited = field === "body" ? r!.body.replace("1", "2") : `${r![field]}x`;
      await setEvidence(ledger(), projectId, 7, { [field]: edited });
      const report = await check();
      expect(report.ok, field).toBe(false);
      expect(report.problems.map((p) => p.seq), field).toContain(7);
      await setEvidence(ledger(), projectId, 7, { [field]: r![field] });
    }
    expect((await check()).ok).toBe(true);
  });

  test("a deleted record is named, the last one too (by the head)", async () => {
    const all = await evidenceRows(ledger(), projectId);
    await deleteEvidence(ledger(), projectId, 12);
    const report = await check();
    expect(report.problems).toEqual(expect.arrayContaining([expect.objectContaining({ seq: 13, code: "record_missing" }), expect.objectContaining({ seq: 13, code: "chain_broken" })]));
    await insertEvidence(ledger(), all[11]!);
    const last = all[all.length - 1]!;
    await deleteEvidence(ledger(), projectId, last.seq);
    expect((await check()).problems).toEqual([expect.objectContaining({ code: "head_mismatch" })]);
    await insertEvidence(ledger(), last);
    expect((await check()).ok).toBe(true);
  });

  test("two records swapped are named, even with their hashes recomputed", async () => {
    const [a, b] = await evidenceRows(ledger(), projectId, { seqs: [20, 21] });
    const swap = async (x: typeof a, y: typeof a) => {
      await setEvidence(ledger(), projectId, x!.seq, { payment_id: y!.payment_id, kind: y!.kind, at: y!.at, body: y!.body, hash: evidenceHash({ ...y!, prev_hash: x!.prev_hash, seq: x!.seq }) });
    };
    await swap(a, b);
    await swap(b, a);
    const report = await check();
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => p.seq)).toContain(21);
    for (const r of [a!, b!]) await setEvidence(ledger(), projectId, r.seq, r);
    expect((await check()).ok).toBe(true);
  });

  test("what admitted a payment is in its created record only: a later change's record does not repeat it (migration 0045)", async () => {
    const tokenId = newId("tok");
    const controls: HoldControls & { approvalTimeoutMs: number } = {
      tokenId,
      token: { limits: [{ interval: "daily", amountMicros: 500_000_000 }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null },
      project: null,
      recipientKey: "addr:0x90f79bf6eb2c4f870365e785982e1f101e93b906",
      approvalTimeoutMs: 60_000,
    };
    const held = await ledger().payments.hold(usdcPayment(projectId, 2_500, 20, { controls }));
    if (held.kind !== "held") throw new Error(`not held: ${held.kind}`);
    await ledger().payments.resolve(held.payment.id, "completed");
    const [created, completed] = (await ledger().evidence.ofPayment(projectId, held.payment.id)).map((r) => ({ kind: r.kind, body: JSON.parse(r.body) as Record<string, unknown> }));
    expect(created).toMatchObject({ kind: "created", body: { status: "pending", admitted: { token_id: tokenId, windows: [{ scope: "token", scope_id: tokenId, kind: "daily", start: windowStart("daily", new Date()), limit_micros: 500_000_000 }], approval_required: false } } });
    expect(completed!.kind).toBe("completed");
    expect(completed!.body).toMatchObject({ payment_id: held.payment.id, status: "completed", token_id: tokenId });
    expect(Object.keys(completed!.body)).not.toContain("admitted");
    expect((await check()).problems).toEqual([]);
  });
});
