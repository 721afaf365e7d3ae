/**
 * The callers of `npm run bench -- x402`, on a thread of their own: an agent is another process, with its
 * own event loop. Timed on the thread that calls, the service's work after an answer (its record of the
 * reply, the settlement's dispatch) would delay the caller reading that answer, as it never does for a
 * real agent; and the merchant's and facilitator's work would delay the direct client the same way. Each
 * message names one request to make; the answer is its time in milliseconds, from the first byte asked for
 * to the last byte read.
 */
import { parentPort, workerData } from "node:worker_threads";
import { Mppx, evm } from "mppx/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

export type CallerSetup = {
  mpp: boolean;
  payerKey: Hex;
  chainId: number;
  usdcAddress: Hex;
  priceMicros: string;
  paidUrl: string;
  serviceUrl: string;
  token: string;
  /** The service side sends a new `idempotency_key` with each payment, as an agent that may retry does. */
  keyed: boolean;
};

export type CallKind = "direct" | "service" | "bare" | "quote";

/**
 * What the thread answers: a time, with when the call started and ended in absolute milliseconds
 * (`performance.timeOrigin + performance.now()`, comparable with the servers' thread: x402Timeline.ts), or the
 * failure that ended the call.
 */
export type CallAnswer = { ms: number; startedAt: number; endedAt: number; status?: string } | { error: string };

function callers(s: CallerSetup): Record<CallKind, () => Promise<string | undefined>> {
  // Direct: Coinbase's client, configured as its README says for a custom asset (both protocol versions).
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(s.payerKey) });
  client.setSpendControls({
    allowedAssets: [
      { network: "eip155:8453", asset: s.usdcAddress, maxAmountPerPayment: s.priceMicros },
      { network: "base" as `${string}:${string}`, asset: s.usdcAddress, maxAmountPerPayment: s.priceMicros },
    ],
  });
  // MPP: mppx's own client with its EVM charge method, limited to our USDC on our chain (its README's policy options).
  const mppClient = s.mpp
    ? Mppx.create({
        methods: [evm.charge({ account: privateKeyToAccount(s.payerKey), networks: [s.chainId], currencies: [s.usdcAddress], maxAtomicAmount: s.priceMicros, authorization: { name: "USD Coin", version: "2" } })],
        polyfill: false,
      })
    : undefined;
  const payDirect = mppClient ? mppClient.fetch : wrapFetchWithPayment(fetch, client);
  const body = JSON.stringify({ recipient: s.paidUrl, max_amount_usdc: Number(s.priceMicros) });
  let keys = 0;
  const keyPrefix = `bench-${process.pid}-${Date.now()}-`;
  const payBody = () => (s.keyed ? JSON.stringify({ recipient: s.paidUrl, max_amount_usdc: Number(s.priceMicros), idempotency_key: `${keyPrefix}${++keys}` }) : body);
  const headers = { authorization: `Bearer ${s.token}`, "content-type": "application/json" };
  return {
    async direct() {
      const r = await payDirect(s.paidUrl);
      if (r.status !== 200) throw new Error(`direct payment answered ${r.status}: ${await r.text()}`);
      await r.arrayBuffer();
      return undefined;
    },
    async service() {
      const r = await fetch(`${s.serviceUrl}/v1/pay`, { method: "POST", headers, body: payBody() });
      const answer = (await r.json()) as { status?: string; response?: { status_code: number } };
      if (r.status !== 200 || answer.response?.status_code !== 200) throw new Error(`POST /v1/pay answered ${r.status}: ${JSON.stringify(answer)}`);
      return answer.status;
    },
    async bare() {
      const r = await fetch(s.paidUrl);
      if (r.status !== 402) throw new Error(`the unpaid request answered ${r.status}`);
      await r.arrayBuffer();
      return undefined;
    },
    async quote() {
      const r = await fetch(`${s.serviceUrl}/v1/quote`, { method: "POST", headers, body });
      const answer = (await r.json()) as { payment_required?: boolean };
      if (r.status !== 200 || answer.payment_required !== true) throw new Error(`POST /v1/quote answered ${r.status}: ${JSON.stringify(answer)}`);
      return undefined;
    },
  };
}

if (parentPort) {
  const port = parentPort;
  const calls = callers(workerData as CallerSetup);
  port.on("message", (kind: CallKind) => {
    const startedAt = performance.timeOrigin + performance.now();
    const started = process.hrtime.bigint();
    calls[kind]().then(
      (status) => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        port.postMessage({ ms, startedAt, endedAt: performance.timeOrigin + performance.now(), ...(status ? { status } : {}) } satisfies CallAnswer);
      },
      (err: unknown) => port.postMessage({ error: (err as Error).message } satisfies CallAnswer),
    );
  });
}
