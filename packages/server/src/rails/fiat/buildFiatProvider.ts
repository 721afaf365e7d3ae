/**
 * The off-ramp of a deployment: the Bridge adapter when Bridge settings are configured (live, or the
 * sandbox's stand-in with FIAT_PROVIDER=bridge), the built-in sandbox off-ramp in the sandbox, and
 * none otherwise (the fiat rail then answers 503 `rail_unavailable`).
 */
import type { Logger } from "pino";
import type { Hex } from "viem";
import type { ChainClient } from "../../chain/chainClient.ts";
import type { Config } from "../../config.ts";
import type { KvStore } from "../../ledger/ports.ts";
import { type BridgeFiatProvider, type BridgeSettings, createBridgeFiatProvider } from "./bridgeProvider.ts";
import { createSandboxFiatProvider, type SandboxFiatProvider } from "./sandboxProvider.ts";

export type BuiltFiatProvider = { kind: "sandbox"; provider: SandboxFiatProvider } | { kind: "bridge"; provider: BridgeFiatProvider } | undefined;

export function buildFiatProvider(o: { config: Config; ledger: { kv: KvStore }; chain: ChainClient; logger: Logger; offrampKey: Hex | undefined; bridge?: BridgeSettings; webhookSecret?: string }): BuiltFiatProvider {
  const bridge = o.bridge ?? o.config.fiat.bridge;
  if (o.config.fiat.provider === "bridge" && bridge) return { kind: "bridge", provider: createBridgeFiatProvider({ settings: bridge, ledger: o.ledger, logger: o.logger }) };
  if (o.config.fiat.provider === "sandbox" && o.offrampKey) {
    return {
      kind: "sandbox",
      provider: createSandboxFiatProvider({ ledger: o.ledger, chain: o.chain, privateKey: o.offrampKey, webhookSecret: o.webhookSecret ?? o.config.webhooks.fiatSecret ?? "", delayMs: o.config.fiat.sandboxDelayMs, logger: o.logger }),
    };
  }
  return undefined;
}
