/**
 * A stream of payments of every rail, planned from the scenario's seed, and a client that behaves as a
 * careful agent does across outages: it repeats a request with the same idempotency key until it gets
 * an answer that is not "try again" (a network error, a 5xx, a 409 in flight), within a bound.
 */
import { randomBytes } from "node:crypto";
import { type Address, getAddress } from "viem";
import { FIAT_FAIL_ACCOUNT, FIAT_OK_ACCOUNT, FIAT_RETURN_ACCOUNT, type FaultWorld, type Project, ROUTING } from "./faultWorld.ts";
import type { Rng } from "./rng.ts";

export type Kind = "usdc" | "fiat_ok" | "fiat_fail" | "fiat_return" | "x402_v1" | "x402_v2";
export const ALL_KINDS: Kind[] = ["usdc", "usdc", "fiat_ok", "fiat_fail", "fiat_return", "x402_v1", "x402_v2"];

export type Spec = { key: string; kind: Kind; project: Project; body: Record<string, unknown>; to?: Address };
export type Answer = { spec: Spec; status: number; id?: string; payStatus?: string; attempts: number; error?: string };

export function planStream(world: FaultWorld, rng: Rng, projects: Project[], n: number, kinds: Kind[] = ALL_KINDS): Spec[] {
  const specs: Spec[] = [];
  for (let i = 0; i < n; i++) {
    const kind = rng.pick(kinds);
    const project = projects[i % projects.length]!;
    const key = `fault-${i}-${randomBytes(4).toString("hex")}`;
    if (kind === "usdc") {
      // A fresh recipient per payment: its on-chain balance says exactly how often it was paid.
      const to = getAddress(`0x${randomBytes(20).toString("hex")}`);
      specs.push({ key, kind, project, to, body: { recipient: to, amount_usd: rng.int(1_000, 40_000) / 1e6, idempotency_key: key } });
    } else if (kind === "x402_v1" || kind === "x402_v2") {
      const m = kind === "x402_v1" ? world.merchants.v1 : world.merchants.v2;
      specs.push({ key, kind, project, body: { recipient: `${m.url}/paid`, max_amount_usdc: 100_000, idempotency_key: key } });
    } else {
      const account = kind === "fiat_ok" ? FIAT_OK_ACCOUNT : kind === "fiat_fail" ? FIAT_FAIL_ACCOUNT : FIAT_RETURN_ACCOUNT;
      specs.push({ key, kind, project, body: { recipient: { name: `Payee ${i}`, account_number: account, routing_number: ROUTING }, amount_usd: rng.int(100, 400) / 100, idempotency_key: key } });
    }
  }
  return specs;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One payment, repeated with its key until answered (bounded: `deadlineMs`). */
export async function pay(world: FaultWorld, spec: Spec, deadlineMs = 90_000): Promise<Answer> {
  const over = world.within(deadlineMs);
  let attempts = 0;
  let last = "";
  while (!over()) {
    attempts++;
    try {
      const res = await fetch(`${world.baseUrl}/v1/pay`, {
        method: "POST",
        headers: { authorization: `Bearer ${spec.project.token}`, "content-type": "application/json" },
        body: JSON.stringify(spec.body),
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await res.json().catch(() => ({}))) as { id?: string; status?: string; code?: string; detail?: string };
      if (res.status !== 409 && res.status < 500) return { spec, status: res.status, id: body.id, payStatus: body.status, attempts, error: res.status >= 400 ? `${body.code}: ${body.detail}` : undefined };
      last = `${res.status} ${body.code ?? ""} ${body.detail ?? ""}`;
    } catch (err) {
      last = String((err as Error).message ?? err);
    }
    await sleep(150);
  }
  return { spec, status: 0, attempts, error: `no answer within ${deadlineMs} ms; last: ${last}` };
}

/**
 * Sends the stream with a few payments in flight at a time, as concurrent agents would, each agent
 * pausing `gapMs` (from the seed) between its payments, so the stream overlaps the settlement of its
 * own earlier payments and a fault lands among payments at every stage.
 */
export async function runStream(world: FaultWorld, specs: Spec[], o: { concurrency?: number; rng?: Rng; gapMs?: [number, number] } = {}): Promise<Answer[]> {
  const answers: Answer[] = new Array(specs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: o.concurrency ?? 2 }, async () => {
      for (;;) {
        const i = next++;
        if (i >= specs.length) return;
        answers[i] = await pay(world, specs[i]!);
        if (o.rng && o.gapMs) await sleep(o.rng.int(o.gapMs[0], o.gapMs[1]));
      }
    }),
  );
  return answers;
}
