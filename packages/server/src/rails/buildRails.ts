/**
 * Builds the rails of a deployment over a chain runtime: the relayer (nonce synced), the USDC and
 * x402 rails, and the fiat rail when an off-ramp is available (the sandbox one in sandbox mode). The
 * server and the CLI's `workers run-once` build them the same way.
 */
import type { RailDeps } from "./railDeps.ts";
import { createRelayer } from "../chain/relayer.ts";
import type { ChainRuntime } from "../chain/runtime.ts";
import { createFiatRail } from "./fiat/fiatRail.ts";
import type { FiatProvider } from "./fiat/provider.ts";
import { watchReturns } from "./fiat/returnWatch.ts";
import type { Rails } from "./rails.ts";
import { createUsdcRail } from "./usdc/usdcRail.ts";
import { createX402Rail } from "./x402/x402Rail.ts";

export type BuiltRails = { rails: Rails; fiatRail: ReturnType<typeof createFiatRail> | undefined };

export async function buildRails(ctx: RailDeps, chain: ChainRuntime, opts: { fiatProvider?: FiatProvider; onFinal?: (p: { rail: string }, outcome: string) => void } = {}): Promise<BuiltRails> {
  const relayer = createRelayer(ctx.ledger, chain, ctx.logger, ctx.custody, { maxPendingTxs: ctx.config.chain.relayerMaxPendingTxs, clock: ctx.clock });
  await relayer.syncNonce();
  const legDeps = { ctx, chain, relayer, onFinal: opts.onFinal };
  const rails: Rails = { chain, relayer, fiatProvider: opts.fiatProvider, byName: { usdc_transfer: createUsdcRail(legDeps) }, onFinal: opts.onFinal };
  const fiatRail = opts.fiatProvider ? createFiatRail({ ...legDeps, provider: opts.fiatProvider }) : undefined;
  if (fiatRail) {
    rails.byName.fiat = fiatRail;
    rails.watchReturns = (wake) => watchReturns(ctx, fiatRail, wake);
  }
  // The off-ramp's address is ours too: an x402 payTo there is refused like a project wallet.
  rails.x402 = createX402Rail({ ...legDeps, otherOwnAddresses: opts.fiatProvider?.depositAddress ? [opts.fiatProvider.depositAddress] : [] });
  return { rails, fiatRail };
}
