/**
 * The world of the x402 end-to-end tests: the real server (sandbox harness: real database, anvil, real
 * HTTP), a real x402 facilitator on loopback and real merchants built with Coinbase's packages, plus
 * probes: on-chain balances, a signature counter on the project's custody, and a small API client.
 */
import { randomBytes } from "node:crypto";
import { startFacilitator, startMerchantV1, startMerchantV2, startMppMerchant, type Facilitator, type Merchant, type MppMerchant, type RepricingMerchant, type StartMerchantOptions } from "@agentwallet/devchain";
import { type Address, getAddress } from "viem";
import type { Custody } from "../../../src/chain/custody.ts";
import type { AppContext } from "../../../src/context.ts";
import { type StartTestServerOptions, type TestServer, startTestServer } from "../../../src/testing/harness.ts";
import { createPgSchema } from "../../support/db.ts";

export const randomAddress = (): Address => getAddress(`0x${randomBytes(20).toString("hex")}`);

/** Counts every EIP-712 signature the service makes with any project wallet. */
export function countSignatures(ctx: AppContext): { count(): number } {
  // The context is frozen and the rails hold the same custody, so its signer is wrapped in place.
  const custody: Custody = ctx.custody;
  const signerFor = custody.signerFor.bind(custody);
  let signatures = 0;
  custody.signerFor = (i, opts) => {
    const signer = signerFor(i, opts);
    return {
      address: signer.address,
      signTypedData: (def) => {
        signatures += 1;
        return signer.signTypedData(def);
      },
    };
  };
  return { count: () => signatures };
}

export type ApiAnswer = { status: number; body: Record<string, unknown> & { detail?: string; code?: string }; headers: Headers };

export type X402World = {
  server: TestServer;
  ctx: AppContext;
  facilitator: Facilitator;
  usdc: Address;
  treasury: Address;
  signatures: { count(): number };
  post(path: string, body: unknown, token?: string): Promise<ApiAnswer>;
  get(path: string, token?: string): Promise<ApiAnswer>;
  balanceOf(address: Address): Promise<bigint>;
  /** The project's deposit wallet (created on first use). */
  wallet(): Promise<Address>;
  startMerchant(version: 1 | 2, priceMicros: bigint, payTo?: Address): Promise<Merchant & { payTo: Address }>;
  /** A v2 merchant with the options of the extensions (offer-and-receipt, payment-identifier); a random payTo unless given. */
  startMerchantV2(o: Omit<StartMerchantOptions, "facilitatorUrl" | "usdcAddress" | "payTo"> & { payTo?: Address }): Promise<RepricingMerchant & { payTo: Address }>;
  /** A merchant on mppx's own server (MPP's EVM charge; with "both", x402 v2 on the same route too). */
  startMppMerchant(priceMicros: bigint, offers?: "mpp" | "both", payTo?: Address): Promise<MppMerchant & { payTo: Address }>;
  /** Runs the payment worker until the payment leaves `processing` (bounded). */
  settle(paymentId: string, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
};

export async function startX402World(o: { database?: "sqlite" | "postgres"; env?: NodeJS.ProcessEnv; fundMicros?: bigint } = {}): Promise<X402World> {
  const pg = o.database === "postgres" ? await createPgSchema() : undefined;
  // Settlement inline: the fee sweep's signature is counted on this thread's custody like the merchant's.
  const options: StartTestServerOptions = { database: o.database, databaseUrl: pg?.url, env: { RATE_LIMIT_PER_MINUTE: "100000", SETTLEMENT: "inline", ...o.env } };
  const server = await startTestServer(options);
  const ctx = server.server.ctx;
  const chain = server.server.chain!;
  const sandbox = chain.sandbox!;
  const facilitator = await startFacilitator({ rpcUrl: sandbox.rpcUrl, privateKey: sandbox.accounts.facilitator!.privateKey });
  const merchants: { stop(): Promise<void> }[] = [];
  if (o.fundMicros) await server.fund(o.fundMicros);
  const signatures = countSignatures(ctx);
  const call = async (method: string, path: string, body?: unknown, token = server.token): Promise<ApiAnswer> => {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as ApiAnswer["body"], headers: response.headers };
  };
  return {
    server,
    ctx,
    facilitator,
    usdc: chain.client.usdcAddress,
    treasury: chain.treasuryAddress,
    signatures,
    post: (path, body, token) => call("POST", path, body, token),
    get: (path, token) => call("GET", path, undefined, token),
    balanceOf: (address) => chain.client.usdcBalance(address),
    async wallet() {
      const answer = await call("GET", "/v1/stablecoin/address");
      return answer.body.address as Address;
    },
    async startMerchant(version, priceMicros, payTo = randomAddress()) {
      const start = version === 2 ? startMerchantV2 : startMerchantV1;
      const merchant = await start({ facilitatorUrl: facilitator.url, payTo, usdcAddress: chain.client.usdcAddress, priceMicros });
      merchants.push(merchant);
      return { ...merchant, payTo };
    },
    async startMerchantV2({ payTo = randomAddress(), ...o }) {
      const merchant = await startMerchantV2({ ...o, facilitatorUrl: facilitator.url, payTo, usdcAddress: chain.client.usdcAddress });
      merchants.push(merchant);
      return Object.assign(merchant, { payTo });
    },
    async startMppMerchant(priceMicros, offers = "mpp", payTo = randomAddress()) {
      const merchant = await startMppMerchant({ rpcUrl: sandbox.rpcUrl, chainId: chain.client.settings.chainId, usdcAddress: chain.client.usdcAddress, payTo, priceMicros, settlerKey: sandbox.accounts.merchant!.privateKey, offers });
      merchants.push(merchant);
      return { ...merchant, payTo };
    },
    async settle(paymentId, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const p = await ctx.ledger.payments.getPayment(paymentId);
        if (p && p.status !== "pending" && p.status !== "processing") return p.status;
        if (Date.now() > deadline) throw new Error(`payment ${paymentId} still ${p?.status} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      await Promise.all(merchants.map((m) => m.stop()));
      await facilitator.stop();
      await server.stop();
      await pg?.drop();
    },
  };
}
