// Everything a live deployment reaches outside itself, on loopback, for rehearsing docs/deploy.md before real
// money: the chain (anvil, chain id 8453, USDC's code at Base's USDC address, Multicall3, a block a second as
// Base makes them), the Bridge stand-in, an x402 facilitator and a merchant. The relayer and treasury are anvil's
// public accounts: nothing here may ever hold real value.
import type { Address } from "viem";
import { BASE_USDC_ADDRESS } from "./circleUsdc.ts";
import { startBridgeStandIn } from "./bridgeStandIn.ts";
import { startFacilitator } from "./facilitator.ts";
import { startMerchantV2 } from "./merchants.ts";
import { startDevChain } from "./startDevChain.ts";

/** Seconds per block: Base makes one every 2 s; a second keeps a rehearsal's confirmations short. */
export const STAND_IN_BLOCK_SECONDS = 1;
/** What the merchant's `/paid` costs: one cent. */
export const STAND_IN_PRICE_MICROS = 10_000n;

export type BaseStandIn = {
  /** The settings it answers for, as `agentwallet.env` lines take them (the webhook key with `\n` escapes). */
  env: {
    BASE_RPC_URL: string;
    USDC_ADDRESS: Address;
    RELAYER_PRIVATE_KEY: string;
    TREASURY_ADDRESS: Address;
    BRIDGE_BASE_URL: string;
    BRIDGE_API_KEY: string;
    BRIDGE_CUSTOMER_ID: string;
    BRIDGE_WEBHOOK_PUBLIC_KEY: string;
  };
  /** The x402 merchant's priced resource, over plain http (live mode needs TLS in front of it). */
  merchantPaidUrl: string;
  /** Stops the merchant, the facilitator, the Bridge stand-in and the chain. */
  stop(): Promise<void>;
};

/** `bridgeWebhookUrl`: where the Bridge stand-in sends its signed events (Bridge's dashboard registration). */
export async function startBaseStandIn(options: { bridgeWebhookUrl?: string } = {}): Promise<BaseStandIn> {
  const dev = await startDevChain({ usdcAddress: BASE_USDC_ADDRESS, blockTime: STAND_IN_BLOCK_SECONDS, mixedMining: true });
  const stops: (() => Promise<void>)[] = [dev.stop];
  try {
    const bridge = await startBridgeStandIn({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, webhookUrl: options.bridgeWebhookUrl });
    stops.unshift(bridge.stop);
    const facilitator = await startFacilitator({ rpcUrl: dev.rpcUrl, privateKey: dev.accounts.facilitator.privateKey });
    stops.unshift(facilitator.stop);
    const merchant = await startMerchantV2({ facilitatorUrl: facilitator.url, payTo: dev.accounts.merchant.address, usdcAddress: dev.usdcAddress, priceMicros: STAND_IN_PRICE_MICROS });
    stops.unshift(merchant.stop);
    return {
      env: {
        BASE_RPC_URL: dev.rpcUrl,
        USDC_ADDRESS: dev.usdcAddress,
        RELAYER_PRIVATE_KEY: dev.accounts.relayer.privateKey,
        TREASURY_ADDRESS: dev.accounts.treasury.address,
        BRIDGE_BASE_URL: bridge.url,
        BRIDGE_API_KEY: bridge.apiKey,
        BRIDGE_CUSTOMER_ID: bridge.customerId,
        BRIDGE_WEBHOOK_PUBLIC_KEY: bridge.webhookPublicKey.trim().replace(/\n/g, "\\n"),
      },
      merchantPaidUrl: `${merchant.url}/paid`,
      stop: () => stopAll(stops),
    };
  } catch (error) {
    await stopAll(stops);
    throw error;
  }
}

async function stopAll(stops: (() => Promise<void>)[]): Promise<void> {
  for (const stop of stops.splice(0)) await stop().catch(() => {});
}
