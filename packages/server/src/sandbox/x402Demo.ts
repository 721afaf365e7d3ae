/**
 * The sandbox's demo x402 merchant, so a newcomer sees an x402 payment in the first minute: x402's own
 * facilitator code settling on the sandbox chain, and a merchant built with `@x402/express` (v2) that
 * charges for `GET|POST /paid`, both on loopback. Loaded from the devchain package dynamically: never
 * on the production path.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ChainRuntime } from "../chain/runtime.ts";

/** $0.01 in test USDC per request: small enough to pay many times from a 1 USDC fund. */
export const DEMO_PRICE_MICROS = 10_000;

export type X402Demo = {
  facilitatorUrl: string;
  merchantUrl: string;
  paidUrl: string;
  priceMicros: number;
  /** Writes the merchant's port as the one to take next time: called once the whole start succeeded. */
  keepPort(): void;
  stop(): Promise<void>;
};

/**
 * The merchant keeps its port across restarts (kept in `x402-demo.json` in the data directory), so a URL
 * copied from the banner or the README keeps working. If another process took that port meanwhile, the
 * merchant takes a free one and `onPortTaken` is told; that port is kept only if the server's start
 * succeeds (`keepPort`), so a second start that fails — on a port the running sandbox holds — leaves the
 * running sandbox's port in place.
 */
export async function startX402Demo(chain: ChainRuntime, opts: { dataDir?: string; onPortTaken?: (port: number) => void } = {}): Promise<X402Demo> {
  const sandbox = chain.sandbox;
  const settler = sandbox?.accounts.facilitator;
  const payTo = sandbox?.accounts.merchant;
  if (!sandbox || !settler || !payTo) throw new Error("the x402 demo needs the sandbox chain and its facilitator and merchant accounts");
  const { startFacilitator, startMerchantV2 } = await import("@agentwallet/devchain");
  // The facilitator first: the v2 merchant reads its /supported at start-up.
  const facilitator = await startFacilitator({ rpcUrl: sandbox.rpcUrl, privateKey: settler.privateKey });
  try {
    const start = (port: number | undefined) =>
      startMerchantV2({ facilitatorUrl: facilitator.url, payTo: payTo.address, usdcAddress: chain.client.usdcAddress, priceMicros: BigInt(DEMO_PRICE_MICROS), port });
    const file = opts.dataDir ? join(opts.dataDir, "x402-demo.json") : undefined;
    const keptPort = file ? readKeptPort(file) : undefined;
    let merchant;
    try {
      merchant = await start(keptPort);
    } catch (err) {
      if (keptPort === undefined || (err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
      opts.onPortTaken?.(keptPort);
      merchant = await start(undefined);
    }
    const merchantPort = Number(new URL(merchant.url).port);
    // The facilitator's Bazaar catalogue lists the demo, so GET /v1/x402/resources finds it.
    facilitator.catalogue.push({
      resource: `${merchant.url}/paid`,
      type: "http",
      x402Version: 2,
      accepts: [{ scheme: "exact", network: `eip155:${chain.client.settings.chainId}`, amount: String(DEMO_PRICE_MICROS), asset: chain.client.usdcAddress, payTo: payTo.address, maxTimeoutSeconds: 60, extra: { name: "USD Coin", version: "2" } }],
      lastUpdated: new Date().toISOString(),
      description: "Agent Wallet sandbox demo resource",
      tags: ["demo", "sandbox"],
    });
    return {
      facilitatorUrl: facilitator.url,
      merchantUrl: merchant.url,
      paidUrl: `${merchant.url}/paid`,
      priceMicros: DEMO_PRICE_MICROS,
      keepPort() {
        if (file && merchantPort !== keptPort) writeFileSync(file, `${JSON.stringify({ merchant_port: merchantPort })}\n`);
      },
      async stop() {
        await merchant.stop();
        await facilitator.stop();
      },
    };
  } catch (err) {
    await facilitator.stop();
    throw err;
  }
}

function readKeptPort(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const port = (JSON.parse(readFileSync(file, "utf8")) as { merchant_port?: unknown }).merchant_port;
    return typeof port === "number" && Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
  } catch {
    return undefined; // unreadable: a fresh port, written anew
  }
}
