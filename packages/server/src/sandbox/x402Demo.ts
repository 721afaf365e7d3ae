/**
 * The sandbox's demo x402 merchant, so a newcomer sees an x402 payment in the first minute: x402's own
 * facilitator code settling on the sandbox chain, and a merchant built with `@x402/express` (v2) that
 * charges for `GET|POST /paid`, both on loopback. Loaded from the devchain package dynamically: never
 * on the production path.
 */
import type { ChainRuntime } from "../chain/runtime.ts";

/** $0.01 in test USDC per request: small enough to pay many times from a 1 USDC fund. */
export const DEMO_PRICE_MICROS = 10_000;

export type X402Demo = { facilitatorUrl: string; merchantUrl: string; paidUrl: string; priceMicros: number; stop(): Promise<void> };

export async function startX402Demo(chain: ChainRuntime): Promise<X402Demo> {
  const sandbox = chain.sandbox;
  const settler = sandbox?.accounts.facilitator;
  const payTo = sandbox?.accounts.merchant;
  if (!sandbox || !settler || !payTo) throw new Error("the x402 demo needs the sandbox chain and its facilitator and merchant accounts");
  const { startFacilitator, startMerchantV2 } = await import("@agentwallet/devchain");
  // The facilitator first: the v2 merchant reads its /supported at start-up.
  const facilitator = await startFacilitator({ rpcUrl: sandbox.rpcUrl, privateKey: settler.privateKey });
  try {
    const merchant = await startMerchantV2({ facilitatorUrl: facilitator.url, payTo: payTo.address, usdcAddress: chain.client.usdcAddress, priceMicros: BigInt(DEMO_PRICE_MICROS) });
    return {
      facilitatorUrl: facilitator.url,
      merchantUrl: merchant.url,
      paidUrl: `${merchant.url}/paid`,
      priceMicros: DEMO_PRICE_MICROS,
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
