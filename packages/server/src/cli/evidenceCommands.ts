/**
 * `agentwallet verify-evidence` and `agentwallet export`: a project's evidence checked (from the database,
 * or from an exported file with no database), and its payments exported for accounting, streamed.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { once } from "node:events";
import { createInterface } from "node:readline";
import type { Hex } from "viem";
import { connectChain } from "../chain/connectSandbox.ts";
import { openLedger } from "../ledger/open.ts";
import { type ExportFormat, exportPayments, recordsOfExport } from "../services/evidence/exportPayments.ts";
import { type EvidenceReport, type VerifyOptions, recordsOf, verifyEvidence } from "../services/evidence/verifyEvidence.ts";
import { type Command, UsageError, need } from "./command.ts";

/** USDC on Base: the signatures' domain when neither the chain nor the configuration names another. */
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

export const verifyEvidenceCommand: Command = async ({ config, options, io }) => {
  const file = typeof options.file === "string" ? options.file : undefined;
  const projectId = file ? undefined : need(options, "project");
  // The on-chain checks read the configured RPC; --offline leaves them out (and says so).
  const chain = options.offline === true ? undefined : await connectChain(config);
  const base = { domain: { chainId: chain?.client.settings.chainId ?? 8453, usdc: chain?.client.usdcAddress ?? ((config.chain.usdcAddress ?? BASE_USDC) as Hex) } };
  const withChain: VerifyOptions = chain ? { ...base, receipt: (hash) => chain.client.receipt(hash) as never } : base;
  let report: EvidenceReport;
  if (file) {
    const lines = createInterface({ input: createReadStream(file, "utf8"), crlfDelay: Infinity });
    report = await verifyEvidence(recordsOfExport(lines), withChain);
  } else {
    const { ledger, opened } = await openLedger(config);
    try {
      report = await verifyEvidence(recordsOf(ledger.evidence, projectId!), { ...withChain, head: await ledger.evidence.head(projectId!) });
    } finally {
      await opened.close();
    }
  }
  const what = `${report.records} record(s) of ${report.payments} payment(s)${chain ? `, ${report.onChainChecked} transaction(s) read on-chain` : ", on-chain checks skipped (--offline)"}`;
  const human = report.ok ? `Evidence holds: ${what}.` : [`Evidence does not hold: ${what}.`, ...report.problems.map((p) => `  record ${p.seq} (payment ${p.paymentId}): ${p.code}: ${p.detail}`)].join("\n");
  io.out(human, report);
  return report.ok ? 0 : 1;
};

export const exportCommand: Command = async ({ config, options, io }) => {
  const projectId = need(options, "project");
  const format = need(options, "format");
  if (format !== "jsonl" && format !== "csv") throw new UsageError("--format must be jsonl or csv");
  const out = typeof options.out === "string" ? options.out : `export-${projectId}.${format}`;
  const { ledger, opened } = await openLedger(config);
  const sink = createWriteStream(out, { encoding: "utf8", mode: 0o600 });
  try {
    const written = await exportPayments(ledger.evidence, projectId, format as ExportFormat, async (chunk) => {
      if (!sink.write(chunk)) await once(sink, "drain");
    });
    await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err ? reject(err) : resolve())));
    io.out(`Exported ${written.payments} payment(s)${format === "jsonl" ? ` and ${written.records} evidence record(s)` : ""} to ${out}.`, { ...written, out });
    return 0;
  } finally {
    sink.destroy();
    await opened.close();
  }
};
