/**
 * The transactions export as CSV (RFC 4180: CRLF lines, quoted fields where needed), one line a row of the
 * console's list. Amounts are plain decimals in US dollars (no thousands separators), times UTC ISO 8601, so
 * a spreadsheet reads them as numbers and dates. A text field that a spreadsheet would run as a formula
 * (starting with =, +, -, @, tab or CR) is prefixed with an apostrophe: counterparties and descriptions come
 * from agents and merchants.
 */
import type { ListedTransaction } from "./backend.ts";
import { formatMicros } from "./format.ts";
import { counterpartyText } from "./transactionsPage.ts";

export const CSV_COLUMNS = ["id", "created_at_utc", "completed_at_utc", "agent", "agent_token", "rail", "type", "status", "counterparty", "amount_usd", "fee_usd", "description", "tx_hash", "failure_code"] as const;

export function csvHeader(): string {
  return `${CSV_COLUMNS.join(",")}\r\n`;
}

export function csvRow(t: ListedTransaction): string {
  const fields: (string | null)[] = [
    t.id,
    t.created_at,
    t.completed_at,
    t.agent ? (t.agent.name ?? "") : "",
    t.agent ? `${t.agent.prefix}…` : "",
    t.rail ?? "",
    t.type,
    t.status,
    counterpartyText(t.counterparty),
    dollars(t.amount_micros),
    t.fee_micros === null ? "" : dollars(t.fee_micros),
    t.description,
    t.tx_hash,
    t.failure_code,
  ];
  return `${fields.map(field).join(",")}\r\n`;
}

/** micro-USD → "1234.50": the console's figure without thousands separators, an ASCII minus. */
export function dollars(micros: number): string {
  return formatMicros(micros).replace(/,/g, "").replace("−", "-");
}

function field(v: string | null): string {
  if (v === null || v === "") return "";
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** One line of the file as its fields: the inverse of `csvRow`'s quoting (RFC 4180), for readers of the export. */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') (cur += '"'), i++;
      else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") out.push(cur), (cur = "");
    else cur += ch;
  }
  out.push(cur);
  return out;
}
