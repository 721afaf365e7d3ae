/**
 * The payer: signs the chosen requirement with x402's own client (`@x402/core` + `@x402/evm`, v2 and
 * v1), from the project wallet. The client is configured so that it can sign nothing else: it is
 * offered only the chosen requirement, a policy keeps only our USDC on our network, its spend controls
 * cap the amount at exactly the price, and its selector insists on the chosen requirement. What it
 * signed is then checked against what we meant to pay before the header leaves this function.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { Network, PaymentPayload, PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { PAYMENT_IDENTIFIER, appendPaymentIdentifierToExtensions } from "@x402/extensions/payment-identifier";
import { type Address, type Hex, getAddress } from "viem";
import type { ChosenRequirement } from "./chooseRequirement.ts";

/** What the project wallet signed: an EIP-3009 TransferWithAuthorization. */
export type SignedAuthorization = { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex };

/** The project wallet as x402's client wants it: an address and EIP-712 signing. */
export type PaymentSigner = { address: Address; signTypedData(def: never): Promise<Hex> };

export type SignedPayment = {
  authorization: SignedAuthorization;
  /** `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1), and its value. */
  header: { name: string; value: string };
  /** The payment-identifier the payload carries (the merchant declared the extension), or undefined. */
  paymentIdentifier: string | undefined;
};

/** Seconds of clock skew tolerated between x402's `validBefore` and our own bound. */
const VALIDITY_SLACK_SECONDS = 5;

export async function signPayment(
  signer: PaymentSigner,
  paymentRequired: PaymentRequired,
  chosen: ChosenRequirement,
  p: { usdcAddress: Address; v2Network: string; v1Network: string; nowMs: number; paymentIdentifier?: string },
): Promise<SignedPayment> {
  const client = new x402Client((_version, offered) => {
    const match = offered.find((r) => r === chosen.raw);
    if (!match) throw new Error("x402 client offered a requirement other than the chosen one");
    return match;
  });
  registerExactEvmScheme(client, { signer: signer as never, networks: [p.v2Network as Network] });
  const usdc = p.usdcAddress.toLowerCase();
  client.registerPolicy((_version, reqs) => reqs.filter((r) => r.asset.toLowerCase() === usdc && (r.network === p.v2Network || r.network === p.v1Network)));
  const cap = String(chosen.amountMicros);
  client.setSpendControls({
    allowedAssets: [
      { network: p.v2Network as Network, asset: p.usdcAddress, maxAmountPerPayment: cap },
      // v1 requirements name the network "base"; the entry must say so to match them.
      { network: p.v1Network as Network, asset: p.usdcAddress, maxAmountPerPayment: cap },
    ],
  });
  const http = new x402HTTPClient(client);
  // x402's payment-identifier: only to a merchant that declared it (v2 payloads carry extensions).
  const identified = p.paymentIdentifier !== undefined && paymentRequired.x402Version === 2 && paymentRequired.extensions?.[PAYMENT_IDENTIFIER] !== undefined;
  const extensions = identified ? appendPaymentIdentifierToExtensions(structuredClone(paymentRequired.extensions ?? {}), p.paymentIdentifier) : paymentRequired.extensions;
  const payload = await http.createPaymentPayload({ ...paymentRequired, ...(extensions ? { extensions } : {}), accepts: [chosen.raw] });
  const authorization = checkSigned(payload, signer.address, chosen, p.nowMs);
  const [entry, ...more] = Object.entries(http.encodePaymentSignatureHeader(payload));
  if (!entry || more.length > 0) throw new Error("x402 client produced an unexpected payment header set");
  return { authorization, header: { name: entry[0], value: entry[1] }, paymentIdentifier: identified ? p.paymentIdentifier : undefined };
}

/** The signed authorization, asserted to be exactly the payment we chose; anything else is a bug. */
function checkSigned(payload: PaymentPayload, from: Address, chosen: ChosenRequirement, nowMs: number): SignedAuthorization {
  const a = (payload.payload as { authorization?: Record<string, unknown> }).authorization;
  if (!a) throw new Error("x402 payload carries no EIP-3009 authorization");
  const auth: SignedAuthorization = {
    from: getAddress(String(a.from)),
    to: getAddress(String(a.to)),
    value: String(a.value),
    validAfter: String(a.validAfter),
    validBefore: String(a.validBefore),
    nonce: String(a.nonce) as Hex,
  };
  const latest = Math.floor(nowMs / 1000) + chosen.maxTimeoutSeconds + VALIDITY_SLACK_SECONDS;
  if (
    payload.x402Version !== chosen.x402Version ||
    auth.from !== getAddress(from) ||
    auth.to !== chosen.payTo ||
    auth.value !== String(chosen.amountMicros) ||
    !/^0x[0-9a-f]{64}$/i.test(auth.nonce) ||
    !/^\d+$/.test(auth.validBefore) ||
    Number(auth.validBefore) > latest
  ) {
    throw new Error("x402 client signed an authorization that differs from the chosen requirement");
  }
  return auth;
}
