/**
 * Whether this server's token may create child tokens (the `delegate` permission): asked of the API at start
 * by listing its descendants (`GET /v1/tokens`), which answers 403 to a token without `delegate`. Only a token
 * that has it is shown `create_sub_agent_token`, so a model never plans around a tool that must fail.
 */
import type { WalletClient } from "@agentwallet/api";
import { withinMs } from "./limits.ts";

/** Start-up waits at most this long (the limits read runs alongside); no answer: no delegate tool. */
export const delegateProbeTimeoutMs = 3_000;

/** Never throws: any failure (403, unreachable, timeout) means the tool is not registered. */
export async function probeDelegate(client: WalletClient): Promise<boolean> {
  try {
    await withinMs(client.listChildTokens(), delegateProbeTimeoutMs);
    return true;
  } catch {
    return false;
  }
}
