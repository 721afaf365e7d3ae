/**
 * Reads the payment requirements of a 402 answer, in either protocol version: v2 carries them in the
 * base64 JSON `PAYMENT-REQUIRED` header (body `{}`), v1 in the JSON body (`x402Version: 1`, `accepts`).
 * Decoding is x402's own (`x402HTTPClient.getPaymentRequiredResponse`), which checks nothing, so the
 * envelope is checked here; each requirement is judged later (chooseRequirement.ts).
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { z } from "zod";
import type { SafeFetchResponse } from "../../net/safeFetch.ts";
import { paymentRequiredInvalid } from "./x402Errors.ts";

/** Real merchants offer a handful of options; more is not an x402 answer we should walk through. */
export const ACCEPTS_MAX = 16;

/** Decoding needs no signer; one client serves every request. */
const decoder = new x402HTTPClient(new x402Client());

const Envelope = z.object({
  x402Version: z.union([z.literal(1), z.literal(2)]),
  accepts: z.array(z.record(z.string(), z.unknown())).min(1).max(ACCEPTS_MAX),
});

export function readPaymentRequired(response: SafeFetchResponse): PaymentRequired {
  const getHeader = (name: string) => response.headers[name.toLowerCase()];
  let decoded: unknown;
  try {
    decoded = decoder.getPaymentRequiredResponse(getHeader, parseJsonBody(response.body));
  } catch {
    throw paymentRequiredInvalid("neither a PAYMENT-REQUIRED header (x402 v2) nor an x402 v1 JSON body could be read");
  }
  const envelope = Envelope.safeParse(decoded);
  if (!envelope.success) {
    throw paymentRequiredInvalid(`its payment requirements are malformed (x402Version 1 or 2 and 1 to ${ACCEPTS_MAX} accepts entries expected)`);
  }
  return decoded as PaymentRequired;
}

function parseJsonBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
