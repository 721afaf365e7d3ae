/**
 * Addresses of the service itself that a `usdc_transfer` may not pay (decisions.md, "Paying the service's
 * own addresses"): the USDC contract (tokens sent to it are stuck), the relayer and the treasury (the
 * project's money would become the operator's, unaccounted), the off-ramp (USDC there with no payout
 * is unattributed), and the project's own wallet (a transfer to itself moves nothing but costs a fee).
 * Another project's deposit wallet is allowed: that project's watcher credits it as a deposit.
 */
import { badRequest } from "../domain/errors.ts";
import type { Rails } from "./rails.ts";

export function refuseOwnAddress(rails: Rails, projectWallet: string | null, recipient: string): void {
  const to = recipient.toLowerCase();
  const named: [string | undefined, string][] = [
    [projectWallet ?? undefined, "this project's own deposit wallet (a transfer to itself moves nothing)"],
    [rails.chain.client.usdcAddress, "the USDC contract (tokens sent to it are lost)"],
    [rails.chain.relayerAddress, "the service's relayer account"],
    [rails.chain.treasuryAddress, "the service's fee treasury"],
    [rails.fiatProvider?.depositAddress, "the off-ramp's deposit address (pay a bank account with a bank details recipient instead)"],
  ];
  for (const [address, what] of named) {
    if (address && address.toLowerCase() === to) {
      throw badRequest("recipient_not_allowed", `recipient ${recipient} is ${what}; the service does not pay its own addresses. Nothing was charged.`);
    }
  }
}
