/**
 * Decides what, if anything, we pay: every requirement of a 402 answer is judged against our policy
 * before anything is signed, because the x402 client signs whatever it is given. A requirement is
 * payable only when it is scheme `exact` on our network, in our USDC, with USDC's EIP-712 domain, an
 * EIP-3009 authorization flow, a real payee that is not one of our own wallets, a bounded validity,
 * and a canonical integer amount up to the 100 USDC cap. The cheapest payable one within the caller's
 * `max_amount_usdc` is chosen; otherwise the refusal names the reason.
 */
import type { PaymentRequired } from "@x402/core/types";
import { type Address, getAddress, isAddress, zeroAddress } from "viem";
import { formatUsdc } from "../../money.ts";
import { type Refusal, priceAboveMax, refusalError, showTargetValue as show } from "./x402Errors.ts";

export type RequirementPolicy = {
  /** CAIP-2 network of v2 requirements, "eip155:8453" on Base. */
  v2Network: string;
  /** Network name of v1 requirements, "base" on Base. */
  v1Network: string;
  /** Our USDC on that network. */
  usdcAddress: Address;
  /** The EIP-712 domain of that USDC: name "USD Coin", version "2". */
  eip712: { name: string; version: string };
  /** Longest authorization validity we sign (config X402_MAX_TIMEOUT_SECONDS). */
  maxTimeoutSeconds: number;
  /** Largest amount any requirement may ask, in micro-USDC (the 100 USDC cap). */
  amountMicrosMax: number;
  /** Our own addresses, lowercased: the payer, relayer, treasury, the USDC contract, the off-ramp. */
  ownAddresses: ReadonlySet<string>;
  /** Whether an address is a deposit wallet of any project (one indexed lookup). */
  isProjectWallet(address: Address): Promise<boolean>;
};

export type ChosenRequirement = {
  /** The requirement exactly as the target sent it: v2 targets match `accepted` against it verbatim. */
  raw: PaymentRequired["accepts"][number];
  x402Version: 1 | 2;
  network: string;
  payTo: Address;
  amountMicros: number;
  maxTimeoutSeconds: number;
};

type Judged = { ok: true; chosen: ChosenRequirement } | { ok: false; supported: boolean; refusal: Refusal };

/** Judges one requirement without I/O. `supported` says whether it was `exact` on our network. */
export function judgeRequirement(raw: unknown, x402Version: 1 | 2, policy: RequirementPolicy): Judged {
  const refuse = (code: Refusal["code"], detail: string, supported = true): Judged => ({ ok: false, supported, refusal: { code, detail } });
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return refuse("x402_no_supported_requirement", "A payment requirement is not an object.", false);
  const r = raw as Record<string, unknown>;
  const network = x402Version === 2 ? policy.v2Network : policy.v1Network;
  if (r.scheme !== "exact" || r.network !== network) {
    return refuse("x402_no_supported_requirement", `Only scheme "exact" on ${network} is paid; got scheme ${show(r.scheme)} on ${show(r.network)}.`, false);
  }

  const amountField = x402Version === 2 ? "amount" : "maxAmountRequired";
  const amount = r[amountField];
  // Canonical decimal digits only: no sign, fraction, exponent, hex, spaces or leading zeros.
  if (typeof amount !== "string" || !/^[1-9][0-9]{0,15}$/.test(amount) || Number(amount) > policy.amountMicrosMax) {
    return refuse("x402_amount_invalid", `The requirement's ${amountField} ${show(amount)} is not a whole number of micro-USDC from 1 to ${policy.amountMicrosMax} (${formatUsdc(policy.amountMicrosMax)} USDC).`);
  }

  if (typeof r.asset !== "string" || r.asset.toLowerCase() !== policy.usdcAddress.toLowerCase()) {
    return refuse("x402_asset_not_allowed", `The requirement asks for asset ${show(r.asset)}; only USDC (${policy.usdcAddress}) on ${network} is paid.`);
  }

  const extra = r.extra;
  if (typeof extra !== "object" || extra === null || Array.isArray(extra)) {
    return refuse("x402_eip712_domain_invalid", `The requirement has no extra.name/extra.version; USDC's EIP-712 domain ("${policy.eip712.name}", "${policy.eip712.version}") is expected.`);
  }
  const e = extra as Record<string, unknown>;
  if (e.name !== policy.eip712.name || e.version !== policy.eip712.version) {
    return refuse("x402_eip712_domain_invalid", `The requirement's EIP-712 domain is name ${show(e.name)}, version ${show(e.version)}; USDC's is ("${policy.eip712.name}", "${policy.eip712.version}").`);
  }
  // We sign EIP-3009 authorizations only, and only for the flow that settles after delivery: a
  // Permit2 or escrow/upfront signature would not be watched by authorizationState.
  if ((e.assetTransferMethod !== undefined && e.assetTransferMethod !== "eip3009") || (e.paymentFlow !== undefined && e.paymentFlow !== "authorization")) {
    return refuse("x402_transfer_method_unsupported", `The requirement asks for transfer method ${show(e.assetTransferMethod)} / payment flow ${show(e.paymentFlow)}; only EIP-3009 authorizations are signed.`);
  }

  const payTo = r.payTo;
  if (typeof payTo !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(payTo) || !checksumOk(payTo)) {
    return refuse("x402_pay_to_invalid", `The requirement's payTo ${show(payTo)} is not a valid address (0x and 40 hex characters, EIP-55 checksum when mixed case).`);
  }
  if (payTo.toLowerCase() === zeroAddress) return refuse("x402_pay_to_invalid", "The requirement's payTo is the zero address; USDC sent there is lost.");
  if (policy.ownAddresses.has(payTo.toLowerCase())) {
    return refuse("x402_pay_to_own_wallet", `The requirement's payTo ${payTo} is one of this service's own wallets or contracts.`);
  }

  const timeout = r.maxTimeoutSeconds;
  if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 1 || timeout > policy.maxTimeoutSeconds) {
    return refuse("x402_max_timeout_invalid", `The requirement's maxTimeoutSeconds ${show(timeout)} is not an integer from 1 to ${policy.maxTimeoutSeconds}: a signed payment stays valid that long, so it is bounded.`);
  }

  return { ok: true, chosen: { raw: raw as ChosenRequirement["raw"], x402Version, network, payTo: getAddress(payTo), amountMicros: Number(amount), maxTimeoutSeconds: timeout } };
}

/**
 * The requirement to pay, or a refusal (`invalid`) that names why none can be paid. `maxAmountMicros` is the caller's
 * `max_amount_usdc` (or the 100 USDC cap when none was given).
 */
export async function chooseRequirement(paymentRequired: PaymentRequired, policy: RequirementPolicy, maxAmountMicros: number): Promise<ChosenRequirement> {
  const version = paymentRequired.x402Version as 1 | 2;
  const judged = paymentRequired.accepts.map((raw) => judgeRequirement(raw, version, policy));
  const payable: ChosenRequirement[] = [];
  let firstRefusal: Refusal | undefined;
  for (const j of judged) {
    if (j.ok) {
      if (await policy.isProjectWallet(j.chosen.payTo)) {
        firstRefusal ??= { code: "x402_pay_to_own_wallet", detail: `The requirement's payTo ${j.chosen.payTo} is the deposit wallet of a project of this service.` };
      } else payable.push(j.chosen);
    } else if (j.supported) firstRefusal ??= j.refusal;
  }
  if (payable.length === 0) {
    if (firstRefusal) throw refusalError(firstRefusal);
    const offered = paymentRequired.accepts.slice(0, 4).map((a) => { const o = a as unknown as Record<string, unknown>; return `${show(o?.scheme)} on ${show(o?.network)}`; }).join(", ");
    const network = version === 2 ? policy.v2Network : policy.v1Network;
    throw refusalError({ code: "x402_no_supported_requirement", detail: `The target accepts no payment this service makes (scheme "exact" on ${network} in USDC); it offered ${offered}.` });
  }
  const cheapest = payable.reduce((a, b) => (b.amountMicros < a.amountMicros ? b : a));
  if (cheapest.amountMicros > maxAmountMicros) throw priceAboveMax(cheapest.amountMicros, maxAmountMicros);
  return cheapest;
}

/** All-lowercase or all-uppercase hex carries no checksum; mixed case must be valid EIP-55. */
function checksumOk(address: string): boolean {
  const hex = address.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase() || isAddress(address, { strict: true });
}

