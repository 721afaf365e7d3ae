/**
 * The Machine Payments Protocol (the "Payment" HTTP authentication scheme, served by `mppx`): a 402 whose
 * `WWW-Authenticate: Payment …` names a method, an intent and a base64url JSON request. This service pays
 * the EVM charge method only (`method="evm"`, `intent="charge"`): an EIP-3009 authorization of our USDC on
 * our chain, whose nonce is the challenge's hash (keccak256 of its id and realm), sent back as
 * `Authorization: Payment <credential>`; the merchant settles it on-chain and answers with a
 * `Payment-Receipt`. Every challenge is judged as strictly as an x402 requirement (chooseRequirement.ts):
 * method, intent, chain, asset, amount, recipient, credential type and expiry, before anything is signed.
 * Parsing and the wire encoding are `mppx`'s own, so what is signed is exactly what its servers verify.
 */
import { Challenge, Credential, Receipt, evm } from "mppx";
import { type Address, type Hex, getAddress } from "viem";
import { formatUsdc } from "../../money.ts";
import type { RequirementPolicy } from "./chooseRequirement.ts";
import { type Refusal, priceAboveMax, refusalError, showTargetValue as show } from "./x402Errors.ts";

/** A target offers a handful of challenges; more is not an answer to walk through. */
export const MPP_CHALLENGES_MAX = 16;
/** The longest `WWW-Authenticate` value read (a challenge's request is a small JSON object). */
const HEADER_MAX = 16 * 1024;

/** What this service needs of the policy x402 requirements are judged by, plus the chain's id. */
export type MppPolicy = Pick<RequirementPolicy, "usdcAddress" | "maxTimeoutSeconds" | "amountMicrosMax" | "ownAddresses" | "isProjectWallet"> & { chainId: number };

export type ChosenChallenge = {
  /** The challenge as the target sent it: the credential echoes it. */
  challenge: Challenge.Challenge;
  payTo: Address;
  amountMicros: number;
  /** The EIP-3009 nonce the method requires: the challenge's hash. */
  nonce: Hex;
  /** Unix seconds: the authorization's validBefore (the challenge's expiry, within our bound). */
  validBefore: number;
};

type Judged = { ok: true; chosen: ChosenChallenge } | { ok: false; supported: boolean; refusal: Refusal };

/** Whether a 402 answer carries an MPP challenge (a `Payment` scheme in `WWW-Authenticate`). */
export function offersMpp(headers: Readonly<Record<string, string>>): boolean {
  const h = headers["www-authenticate"];
  return typeof h === "string" && /(^|,)\s*Payment\s/i.test(h);
}

/** The challenges of a 402 answer; a header that cannot be read at all is a refusal (nothing signed). */
export function readMppChallenges(headers: Readonly<Record<string, string>>): Challenge.Challenge[] {
  const h = headers["www-authenticate"] ?? "";
  if (h.length > HEADER_MAX) throw refusalError({ code: "mpp_challenge_invalid", detail: `The target's WWW-Authenticate header is longer than ${HEADER_MAX} characters.` });
  let list: Challenge.Challenge[];
  try {
    list = Challenge.deserializeList(h);
  } catch (err) {
    throw refusalError({ code: "mpp_challenge_invalid", detail: `The target's Payment challenge does not parse (${String((err as Error).message).slice(0, 200)}).` });
  }
  if (list.length === 0 || list.length > MPP_CHALLENGES_MAX) throw refusalError({ code: "mpp_challenge_invalid", detail: `The target sent ${list.length} Payment challenges; 1 to ${MPP_CHALLENGES_MAX} are read.` });
  return list;
}

/** Judges one challenge without I/O. `supported`: it was the EVM charge method at all. */
export function judgeMppChallenge(challenge: Challenge.Challenge, policy: MppPolicy, nowMs: number): Judged {
  const refuse = (code: Refusal["code"], detail: string, supported = true): Judged => ({ ok: false, supported, refusal: { code, detail } });
  if (challenge.method !== evm.paymentMethod || challenge.intent !== evm.chargeIntent) {
    return refuse("x402_no_supported_requirement", `Only the Payment method "evm" with intent "charge" is paid; got method ${show(challenge.method)}, intent ${show(challenge.intent)}.`, false);
  }
  // The credential goes in Authorization, where the scheme puts it by default; a challenge naming another
  // header for it is not followed (it could name one the fetcher owns, such as Host or Content-Length).
  if (challenge.header !== undefined && challenge.header.toLowerCase() !== "authorization") {
    return refuse("mpp_challenge_invalid", `The challenge asks for its credential in header ${show(challenge.header)}; only Authorization is used.`);
  }
  const r = challenge.request as Record<string, unknown>;
  const details = (typeof r.methodDetails === "object" && r.methodDetails !== null ? r.methodDetails : {}) as Record<string, unknown>;
  if (details.chainId !== policy.chainId) {
    return refuse("x402_no_supported_requirement", `The challenge asks for chain ${show(details.chainId)}; only chain ${policy.chainId} is paid.`, false);
  }
  const amount = r.amount;
  if (typeof amount !== "string" || !/^[1-9][0-9]{0,15}$/.test(amount) || Number(amount) > policy.amountMicrosMax) {
    return refuse("x402_amount_invalid", `The challenge's amount ${show(amount)} is not a whole number of micro-USDC from 1 to ${policy.amountMicrosMax} (${formatUsdc(policy.amountMicrosMax)} USDC).`);
  }
  if (typeof r.currency !== "string" || r.currency.toLowerCase() !== policy.usdcAddress.toLowerCase()) {
    return refuse("x402_asset_not_allowed", `The challenge asks for currency ${show(r.currency)}; only USDC (${policy.usdcAddress}) on chain ${policy.chainId} is paid.`);
  }
  if (details.decimals !== undefined && details.decimals !== 6) {
    return refuse("x402_asset_not_allowed", `The challenge says the currency has ${show(details.decimals)} decimals; USDC has 6.`);
  }
  const types = details.credentialTypes;
  if ((types !== undefined && !(Array.isArray(types) && types.includes("authorization"))) || details.splits !== undefined || details.permit2Address !== undefined) {
    return refuse("x402_transfer_method_unsupported", `The challenge asks for credential types ${show(types)}${details.splits !== undefined ? " with splits" : ""}${details.permit2Address !== undefined ? " through Permit2" : ""}; only a single EIP-3009 authorization is signed.`);
  }
  const payTo = r.recipient;
  if (typeof payTo !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(payTo) || /^0x0{40}$/.test(payTo)) {
    return refuse("x402_pay_to_invalid", `The challenge's recipient ${show(payTo)} is not a valid, non-zero address.`);
  }
  if (policy.ownAddresses.has(payTo.toLowerCase())) return refuse("x402_pay_to_own_wallet", `The challenge's recipient ${payTo} is one of this service's own wallets or contracts.`);
  const nowS = Math.floor(nowMs / 1000);
  let validBefore = nowS + policy.maxTimeoutSeconds;
  if (challenge.expires !== undefined) {
    const expires = Date.parse(challenge.expires);
    if (!Number.isFinite(expires)) return refuse("mpp_challenge_invalid", `The challenge's expires ${show(challenge.expires)} is not a date.`);
    const expiresS = Math.floor(expires / 1000);
    if (expiresS <= nowS) return refuse("mpp_challenge_invalid", `The challenge expired at ${challenge.expires}.`);
    validBefore = Math.min(validBefore, expiresS);
  }
  return { ok: true, chosen: { challenge, payTo: getAddress(payTo), amountMicros: Number(amount), nonce: evm.challengeHash(challenge) as Hex, validBefore } };
}

/** The challenge to pay, or a refusal naming why none can be (the cheapest payable within `maxAmountMicros`). */
export async function chooseMppChallenge(challenges: Challenge.Challenge[], policy: MppPolicy, maxAmountMicros: number, nowMs: number): Promise<ChosenChallenge> {
  const payable: ChosenChallenge[] = [];
  let firstRefusal: Refusal | undefined;
  for (const c of challenges) {
    const j = judgeMppChallenge(c, policy, nowMs);
    if (!j.ok) {
      if (j.supported) firstRefusal ??= j.refusal;
    } else if (await policy.isProjectWallet(j.chosen.payTo)) {
      firstRefusal ??= { code: "x402_pay_to_own_wallet", detail: `The challenge's recipient ${j.chosen.payTo} is the deposit wallet of a project of this service.` };
    } else payable.push(j.chosen);
  }
  if (payable.length === 0) {
    if (firstRefusal) throw refusalError(firstRefusal);
    const offered = challenges.slice(0, 4).map((c) => `${show(c.method)}/${show(c.intent)}`).join(", ");
    throw refusalError({ code: "x402_no_supported_requirement", detail: `The target accepts no Payment method this service pays (evm/charge in USDC on chain ${policy.chainId}); it offered ${offered}.` });
  }
  const cheapest = payable.reduce((a, b) => (b.amountMicros < a.amountMicros ? b : a));
  if (cheapest.amountMicros > maxAmountMicros) throw priceAboveMax(cheapest.amountMicros, maxAmountMicros);
  return cheapest;
}

/** A signed EIP-3009 authorization, as eip3009.ts signs it. */
export type MppAuthorization = { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex; signature: Hex };

/** A challenge as mppx writes it in `WWW-Authenticate` (kept with the payment as its evidence). */
export function challengeText(challenge: Challenge.Challenge): string {
  return Challenge.serialize(challenge);
}

/** The `Authorization` header value that pays `chosen` with `auth` (signed for its payTo, amount and nonce). */
export function mppCredential(chosen: ChosenChallenge, auth: MppAuthorization, chainId: number): string {
  if (auth.nonce.toLowerCase() !== chosen.nonce.toLowerCase() || getAddress(auth.to) !== chosen.payTo || auth.value !== String(chosen.amountMicros)) {
    throw new Error("the authorization does not pay the chosen challenge");
  }
  return Credential.serialize(
    Credential.from({
      challenge: chosen.challenge,
      payload: { type: "authorization", from: getAddress(auth.from), to: getAddress(auth.to), value: auth.value, validAfter: auth.validAfter, validBefore: auth.validBefore, nonce: auth.nonce, signature: auth.signature },
      source: evm.toSource({ address: getAddress(auth.from), chainId }),
    }),
  );
}

/** The merchant's `Payment-Receipt`, if it sent one that reads; its `reference` is the settlement transaction. */
export function readMppReceipt(headers: Readonly<Record<string, string>>): { status: string; reference: string; method: string; timestamp: string } | undefined {
  const h = headers["payment-receipt"];
  if (!h) return undefined;
  try {
    const r = Receipt.deserialize(h) as { status: string; reference: string; method: string; timestamp: string };
    return typeof r.reference === "string" ? r : undefined;
  } catch {
    return undefined;
  }
}

