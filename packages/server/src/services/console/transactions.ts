/**
 * A project's transactions in the console: the list and one transaction by the API's own reads
 * (services/listTransactions.ts, getTransaction.ts: the same filters, bounds and shapes as
 * `GET /v1/transactions`), and a transaction's way to its status (statusHistory.ts).
 */
import type { HistoryEntry } from "@agentwallet/console";
import type { Transaction, TransactionList } from "@agentwallet/api";
import { badRequest } from "../../domain/errors.ts";
import { getTransaction as getTransactionDetail } from "../getTransaction.ts";
import { type ListQuery, listTransactions as listApiTransactions } from "../listTransactions.ts";
import { orNull } from "./orNull.ts";
import { historyOf, historyOfEvents } from "./statusHistory.ts";
import type { ConsoleDeps } from "./viewers.ts";

/** A page of the list as the API's query parser gave it (http/listQuery.ts), the page's starting transaction still an id. */
export async function listTransactions(deps: Pick<ConsoleDeps, "ledger">, projectId: string, query: Omit<ListQuery, "cursor"> & { startingAfter?: string }): Promise<TransactionList> {
  const { startingAfter, ...q } = query;
  const cursor = startingAfter === undefined ? undefined : await deps.ledger.transactions.cursorOf(projectId, startingAfter);
  if (startingAfter !== undefined && !cursor) throw badRequest("invalid_query", "That page's starting transaction is not in this project.");
  return listApiTransactions(deps, projectId, { ...q, cursor });
}

/** One transaction of the project, or null (another project's id is answered as an unknown one). */
export async function getTransaction(deps: Pick<ConsoleDeps, "ledger">, projectId: string, id: string): Promise<Transaction | null> {
  return orNull(getTransactionDetail(deps.ledger, projectId, id));
}

/** The transitions its webhooks report, as the ledger's triggers recorded them, or, for older rows, what the ledger records. */
export async function transactionHistory(deps: Pick<ConsoleDeps, "ledger">, projectId: string, transactionId: string): Promise<HistoryEntry[]> {
  const t = await deps.ledger.transactions.history(projectId, transactionId);
  if (!t) return [];
  const [p, recorded] = await Promise.all([
    t.payment_id ? deps.ledger.payments.getPayment(t.payment_id) : undefined,
    deps.ledger.transactions.statusHistory(projectId, t.payment_id ?? transactionId),
  ]);
  return recorded.length ? historyOfEvents(recorded, p) : historyOf(t, p);
}
