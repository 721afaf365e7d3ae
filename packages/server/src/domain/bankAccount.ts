/**
 * A bank payment's account number at rest (decisions.md, "Bank account numbers at rest"): the payment's
 * `recipient_json` shows `****` and the last four digits, and beside them, only until the payout is created,
 * the whole number sealed under the deployment's key (`account_sealed`, secretBox.ts, the project's id bound
 * in). The payout opens it; creating the payout, or any final status (a database trigger, migration 0023),
 * forgets it.
 */
import type { BankRecipient } from "@agentwallet/api";
import { openText, sealText } from "./secretBox.ts";

type StoredBank = { name: string; routing_number: string; account_number: string; account_sealed?: string };

export const maskAccountNumber = (n: string): string => `****${n.slice(-4)}`;
const isMasked = (n: string) => n.startsWith("****");

/** The recipient as stored at the hold: the number masked, and sealed beside it for the payout. */
export function sealBankRecipient(key: Uint8Array, projectId: string, recipientJson: string): string {
  const r = JSON.parse(recipientJson) as StoredBank;
  if (isMasked(r.account_number)) return recipientJson;
  return JSON.stringify({ name: r.name, routing_number: r.routing_number, account_number: maskAccountNumber(r.account_number), account_sealed: sealText(key, projectId, r.account_number) });
}

/** The whole bank details for the payout (a row stored before sealing holds the number in the clear). */
export function openBankRecipient(key: Uint8Array, projectId: string, recipientJson: string): BankRecipient {
  const r = JSON.parse(recipientJson) as StoredBank;
  const accountNumber = r.account_sealed ? openText(key, projectId, r.account_sealed, "the sealed account number") : r.account_number;
  if (isMasked(accountNumber)) throw new Error("the account number was forgotten before the payout was created");
  return { name: r.name, routing_number: r.routing_number, account_number: accountNumber };
}

/** The recipient once the payout exists (or the payment ended): the last four digits only. */
export function forgetBankAccount(recipientJson: string): string {
  const r = JSON.parse(recipientJson) as StoredBank;
  return JSON.stringify({ name: r.name, routing_number: r.routing_number, account_number: isMasked(r.account_number) ? r.account_number : maskAccountNumber(r.account_number) });
}
