/**
 * The evidence of a payment made by MPP (rails/x402/mppChallenge.ts), checked from the record alone, with mppx's
 * own decoding: the challenge answered (its id, and its hash as the authorization's nonce: the method's binding of
 * a signature to one challenge), the credential sent (`Authorization: Payment …`: it answers that challenge and
 * carries the recorded authorization, signed by the wallet), and the merchant's `Payment-Receipt` (a success
 * whose reference is the settlement's transaction).
 */
import { Challenge, Credential, Receipt, evm } from "mppx";
import { type SignatureDomain, type SignatureProblem, authorizationSigned } from "./checkSignatures.ts";

/** The part of an MPP payment's rail state these checks read (x402State.ts). */
export type MppEvidence = {
  mpp?: { challengeId?: unknown; challenge?: unknown };
  authorization?: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };
  sent?: { name: string; value: string };
  settlement?: { txHash?: unknown; receipt?: unknown };
};

const FIELDS = ["from", "to", "value", "validAfter", "validBefore", "nonce"] as const;

const mismatch = (detail: string): SignatureProblem => ({ code: "payload_mismatch", detail });

export async function checkMppEvidence(state: MppEvidence, d: SignatureDomain): Promise<SignatureProblem[]> {
  const out: SignatureProblem[] = [];
  const id = state.mpp?.challengeId;
  const auth = state.authorization;
  if (typeof state.mpp?.challenge === "string") {
    try {
      const challenge = Challenge.deserialize(state.mpp.challenge);
      if (challenge.id !== id) out.push(mismatch(`the MPP challenge recorded is ${challenge.id}, not the challenge ${String(id)} the payment answered`));
      else if (auth && evm.challengeHash(challenge).toLowerCase() !== auth.nonce.toLowerCase()) out.push(mismatch(`the authorization's nonce is not the hash of the MPP challenge recorded: it answers another challenge`));
    } catch {
      out.push(mismatch("the MPP challenge recorded does not parse"));
    }
  }
  if (state.sent && auth) {
    try {
      const credential = Credential.deserialize<Record<string, unknown>>(state.sent.value);
      const p = credential.payload;
      if (credential.challenge.id !== id) out.push(mismatch(`the MPP credential sent answers challenge ${credential.challenge.id}, not ${String(id)}`));
      else if (!FIELDS.every((k) => String(p[k]).toLowerCase() === String(auth[k]).toLowerCase())) out.push(mismatch("the MPP credential sent carries another authorization than the one recorded"));
      else if (typeof p.signature !== "string" || !(await authorizationSigned({ ...auth, signature: p.signature }, d))) {
        out.push({ code: "authorization_signature_invalid", detail: `the signature in the MPP credential sent is not ${auth.from}'s over its authorization` });
      }
    } catch {
      out.push(mismatch("the MPP credential sent does not parse"));
    }
  }
  const receipt = state.settlement?.receipt;
  if (typeof receipt === "string") {
    try {
      const r = Receipt.deserialize(receipt);
      const txHash = String(state.settlement?.txHash ?? "");
      if (r.status !== "success" || r.reference.toLowerCase() !== txHash.toLowerCase()) out.push(mismatch(`the Payment-Receipt recorded says ${r.status} with reference ${r.reference.slice(0, 18)}…, not the settlement ${txHash.slice(0, 18)}…`));
    } catch {
      out.push(mismatch("the Payment-Receipt recorded does not parse"));
    }
  }
  return out;
}
