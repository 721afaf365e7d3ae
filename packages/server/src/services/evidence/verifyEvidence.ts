/**
 * `agentwallet verify-evidence`: a project's evidence records, from the database or from an exported file,
 * checked one after the other in chain order, keeping only the previous record (bounded memory):
 * - the chain: numbers 1, 2, … without gap or repeat, each record's `prev_hash` the previous record's hash,
 *   each hash recomputed over the record's fields (`evidenceHash`), and the last one the project's head
 *   when the head is known; an edited, deleted or moved record is named by its number;
 * - the signatures: every EIP-3009 authorization the wallet signed, the exact x402 payload sent, and the
 *   merchant's receipt with its signer's authorisation (checkSignatures.ts); for MPP, the challenge, the
 *   credential sent and the `Payment-Receipt` (checkMpp.ts);
 * - the chain of blocks: a completed payment's transaction, read from the RPC, must hold the USDC `Transfer`
 *   log of each of its transfers (at the block and index recorded, when recorded).
 */
import type { Hex } from "viem";
import { evidenceHash } from "../../ledger/evidenceHash.ts";
import type { EvidenceHead, EvidenceRow } from "../../ledger/evidence.ts";
import type { EvidenceReadStore } from "../../ledger/ports.ts";
import { type MppEvidence, checkMppEvidence } from "./checkMpp.ts";
import { type SignatureDomain, type SignatureProblem, authorizationSigned, authorizationsIn, checkReceipt, checkSentPayload, offerSignersOf, receiptOf } from "./checkSignatures.ts";

export type EvidenceRecord = EvidenceRow;

export type EvidenceProblemCode = "hash_mismatch" | "chain_broken" | "record_missing" | "out_of_order" | "head_mismatch" | "body_unreadable" | "log_not_found" | SignatureProblem["code"];

/** A record that does not hold: its number, its payment, what is wrong. */
export type EvidenceProblem = { seq: number; paymentId: string; code: EvidenceProblemCode; detail: string };

/** What the check reads of the chain: a transaction's receipt, its logs with their positions. */
export type ReceiptReader = (hash: Hex) => Promise<{ status: string; blockNumber: bigint; logs: readonly { address: string; topics: readonly (Hex | undefined)[]; data: Hex; logIndex: number | null }[] } | null | undefined>;

export type VerifyOptions = {
  domain: SignatureDomain;
  /** Reads receipts; without it the on-chain check is skipped (and said so). */
  receipt?: ReceiptReader;
  /** The project's head when the records come from its database: the last record must be it. */
  head?: EvidenceHead;
};

export type EvidenceReport = { ok: boolean; records: number; payments: number; onChainChecked: number; problems: EvidenceProblem[] };

/** Reported problems are capped here (a broken chain reports every record after a break). */
const PROBLEMS_MAX = 1_000;
/** Signatures and transactions already checked, remembered up to this many (then forgotten, and checked again). */
const CHECKED_MAX = 10_000;

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

export async function verifyEvidence(records: AsyncIterable<EvidenceRecord>, o: VerifyOptions): Promise<EvidenceReport> {
  const problems: EvidenceProblem[] = [];
  const report = (r: Pick<EvidenceRecord, "seq" | "payment_id">, code: EvidenceProblemCode, detail: string) => {
    if (problems.length < PROBLEMS_MAX) problems.push({ seq: Number(r.seq), paymentId: r.payment_id, code, detail });
  };
  const checked = new Set<string>();
  const once = (key: string) => {
    if (checked.has(key)) return false;
    if (checked.size >= CHECKED_MAX) checked.clear();
    checked.add(key);
    return true;
  };
  const payments = new Set<string>();
  let previous: EvidenceRecord | undefined;
  let count = 0;
  let onChainChecked = 0;
  for await (const r of records) {
    count += 1;
    if (payments.size < CHECKED_MAX) payments.add(r.payment_id);
    const seq = Number(r.seq);
    const expected = previous ? Number(previous.seq) + 1 : 1;
    if (seq < expected) report(r, "out_of_order", `record ${seq} comes after record ${expected - 1}: records were moved or repeated`);
    else if (seq > expected) report(r, "record_missing", `record${seq - expected > 1 ? `s ${expected}–${seq - 1} are` : ` ${expected} is`} missing before record ${seq}`);
    if (previous && r.prev_hash !== previous.hash) report(r, "chain_broken", `record ${seq} names ${r.prev_hash.slice(0, 12)}… as the previous record's hash, but record ${previous.seq} has ${previous.hash.slice(0, 12)}…`);
    if (!previous && seq === 1 && !/^0{64}$/.test(r.prev_hash)) report(r, "chain_broken", "the first record names a previous record");
    if (evidenceHash({ ...r, seq: Number(r.seq) }) !== r.hash) report(r, "hash_mismatch", `record ${seq} does not hash to the hash it carries: a field was changed after it was written`);
    for (const p of await checkBody(r, o, once)) report(r, p.code, p.detail);
    if (o.receipt) onChainChecked += await checkOnChain(r, o.domain.usdc, o.receipt, once, (code, detail) => report(r, code, detail));
    previous = r;
  }
  if (o.head && o.head.seq > 0) {
    const last = previous ? Number(previous.seq) : 0;
    if (last !== o.head.seq || previous?.hash !== o.head.hash) {
      const at = previous ?? { seq: o.head.seq, payment_id: "" };
      report(at, "head_mismatch", `the project's chain ends at record ${o.head.seq} (${o.head.hash.slice(0, 12)}…), but the records end at ${last}: the last records were deleted or changed`);
    }
  }
  return { ok: problems.length === 0, records: count, payments: payments.size, onChainChecked, problems };
}

type Body = { rail?: string; status?: string; amount_micros?: number; tx_hash?: string | null; rail_state?: Record<string, unknown> | null };

function decodeBase64Json(value: string): unknown {
  try {
    return JSON.parse(Buffer.from(value, "base64").toString("utf8"));
  } catch {
    return undefined;
  }
}

function parse(r: EvidenceRecord): Body | undefined {
  try {
    return JSON.parse(r.body) as Body;
  } catch {
    return undefined;
  }
}

async function checkBody(r: EvidenceRecord, o: VerifyOptions, once: (key: string) => boolean): Promise<SignatureProblem[] | { code: "body_unreadable"; detail: string }[]> {
  const body = parse(r);
  if (!body) return [{ code: "body_unreadable", detail: `record ${r.seq}'s body is not JSON` }];
  const state = body.rail_state ?? undefined;
  if (!state) return [];
  const out: SignatureProblem[] = [];
  for (const a of authorizationsIn(state)) {
    if (!once(`auth:${a.signature}`)) continue;
    if (!(await authorizationSigned(a, o.domain))) out.push({ code: "authorization_signature_invalid", detail: `the authorization of ${a.value} to ${a.to} (nonce ${a.nonce.slice(0, 10)}…) is not signed by ${a.from}` });
  }
  if (state.protocol === "mpp") {
    const key = `mpp:${JSON.stringify([(state.sent as { value?: string } | undefined)?.value, (state.mpp as { challenge?: string } | undefined)?.challenge, (state.settlement as { receipt?: string } | undefined)?.receipt])}`;
    if (once(key)) out.push(...(await checkMppEvidence(state as MppEvidence, o.domain)));
    return out;
  }
  const sent = state.sent as { name: string; value: string } | undefined;
  const authorization = state.authorization as Parameters<typeof checkSentPayload>[1] | undefined;
  if (sent && authorization && once(`sent:${sent.value}`)) {
    const p = await checkSentPayload(sent, authorization, o.domain);
    if (p) out.push(p);
  }
  const settlement = state.settlement as { response?: string } | undefined;
  const receipt = settlement?.response ? receiptOf(decodeBase64Json(settlement.response)) : undefined;
  if (receipt && typeof state.payTo === "string" && once(`receipt:${receipt.signature}`)) {
    const p = await checkReceipt(receipt, state.payTo, await offerSignersOf(state.paymentRequired));
    if (p) out.push(p);
  }
  return out;
}

/** The transfers a completed payment's transaction must carry: its recorded authorizations (to, value, from). */
function expectedTransfers(body: Body): { from: string; to: string; value: string; at?: { blockNumber: number; logIndex: number } }[] {
  const state = body.rail_state ?? {};
  const settlement = state.settlement as { log?: { blockNumber: number; logIndex: number } } | undefined;
  const auth = state.authorization as { from: string; to: string; value: string } | undefined;
  // x402: the merchant's settlement of our authorization (sent again by us if the chain lost it: its legs).
  if (auth && !state.resent) return [{ ...auth, at: settlement?.log }];
  const legs = (state.resent as { transfers?: unknown } | undefined)?.transfers ?? state.transfers;
  if (!Array.isArray(legs)) return [];
  // A relayed leg's logs (USDC and bank transfers), one per authorization in order, when recorded.
  const logs = !state.resent && Array.isArray(state.logs) ? (state.logs as ({ blockNumber: number; logIndex: number } | null)[]) : [];
  return (legs as { from: string; to: string; value: string }[]).map((t, i) => (logs[i] ? { ...t, at: logs[i] } : t));
}

async function checkOnChain(r: EvidenceRecord, usdc: string, receiptOf: ReceiptReader, once: (key: string) => boolean, report: (code: EvidenceProblemCode, detail: string) => void): Promise<number> {
  const body = parse(r);
  if (!body || body.status !== "completed" || !body.tx_hash || !body.rail_state) return 0;
  if (!once(`tx:${r.payment_id}:${body.tx_hash}`)) return 0;
  const receipt = await receiptOf(body.tx_hash as Hex);
  if (!receipt || receipt.status !== "success") {
    report("log_not_found", `transaction ${body.tx_hash} is not a successful transaction on the chain`);
    return 1;
  }
  const word = (a: string) => `0x${a.slice(2).toLowerCase().padStart(64, "0")}`;
  for (const t of expectedTransfers(body)) {
    const log = receipt.logs.find(
      (l) => l.address.toLowerCase() === usdc.toLowerCase() && l.topics[0]?.toLowerCase() === TRANSFER_TOPIC && l.topics[1]?.toLowerCase() === word(t.from) && l.topics[2]?.toLowerCase() === word(t.to) && BigInt(l.data) === BigInt(t.value) && (t.at === undefined || l.logIndex === t.at.logIndex),
    );
    if (!log) report("log_not_found", `transaction ${body.tx_hash} carries no USDC Transfer of ${t.value} from ${t.from} to ${t.to}${t.at ? ` at log index ${t.at.logIndex}` : ""}`);
    else if (t.at && Number(receipt.blockNumber) !== t.at.blockNumber) report("log_not_found", `transaction ${body.tx_hash} is in block ${receipt.blockNumber}, not block ${t.at.blockNumber} as recorded`);
  }
  return 1;
}

/** Records read at once from the database while checking or exporting. */
export const EVIDENCE_PAGE_SIZE = 500;

/** A project's records in chain order, read a page at a time. */
export async function* recordsOf(evidence: Pick<EvidenceReadStore, "page">, projectId: string): AsyncGenerator<EvidenceRecord> {
  let after = 0;
  for (;;) {
    const page = await evidence.page(projectId, after, EVIDENCE_PAGE_SIZE);
    yield* page;
    if (page.length < EVIDENCE_PAGE_SIZE) return;
    after = Number(page[page.length - 1]!.seq);
  }
}
