/**
 * `create_sub_agent_token` → `POST /v1/tokens`: a child of this server's token for a sub-agent, no wider than
 * it (the API refuses anything wider), and the configuration to hand that sub-agent: its token, the base
 * address and a ready-to-paste MCP client configuration (the console's shape, `mcpClientConfig`). Registered
 * only when the token has `delegate` (server.ts probes `GET /v1/tokens` at start).
 */
import { z } from "zod";
import { CreateChildTokenRequest, CreatedChildToken, mcpClientConfig, SpendingControls, SpendingControlsInput, SpendingLimit } from "@agentwallet/api";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

const controlsInput = inlined(SpendingControlsInput).extend({
  spending_limits: z.array(inlined(SpendingLimit)).max(10).optional().describe("The limits (one per interval), each at most this token's; not given: this token's."),
});
const In = inlined(CreateChildTokenRequest).extend({
  spending_controls: controlsInput.optional().describe("At most this token's in every field; a field not given is inherited from this token."),
});

const token = inlined(CreatedChildToken).extend({
  spending_controls: inlined(SpendingControls).extend({ spending_limits: z.array(inlined(SpendingLimit)) }).nullable(),
});
const Out = z.object({
  token: token.describe("The child token as the API created it; `token.token` is its secret, shown this once."),
  base_url: z.string().describe("The Agent Wallet API address the sub-agent calls (AGENTWALLET_BASE_URL)."),
  mcp_config: z
    .object({
      mcpServers: z.object({
        agentwallet: z.object({
          command: z.string(),
          args: z.array(z.string()).optional(),
          env: z.record(z.string(), z.string()).describe("AGENTWALLET_API_TOKEN, AGENTWALLET_BASE_URL, and the guards that fit the token."),
        }),
      }),
    })
    .describe("Ready to paste into the sub-agent's MCP client configuration (claude_desktop_config.json, .cursor/mcp.json)."),
});

export const createSubAgentToken = defineTool({
  name: "create_sub_agent_token",
  title: "Create a token for a sub-agent",
  description:
    "Give a sub-agent its own API token with a slice of this token's budget, instead of sharing this one. The child " +
    "may have only permissions this token has (read, pay, x402; delegate only if the depth allows) and spending " +
    "controls at most this token's (limits, allowed recipients and rails, approval threshold); fields left out are " +
    "inherited. `allowance_usd` is the most it may ever spend. Its payments count against its own limits and against " +
    "this token's, so together the sub-agents never spend more than this token may. Answers the token (its secret " +
    "shown this once), the base URL and `mcp_config`, the MCP client configuration to hand the sub-agent as it is. " +
    "Treat the token as a secret: give it only to the sub-agent it is for. Revoking this token revokes the child too.",
  access: "delegate",
  inputSchema: In,
  outputSchema: Out,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  handler: async (args, ctx) => {
    try {
      const { data } = await ctx.client.createChildToken(args);
      // The user's per-payment cap on this server binds the sub-agent's server too, or the smaller per-payment limit.
      const caps = [
        ...(ctx.config.maxPaymentMicros === undefined ? [] : [ctx.config.maxPaymentMicros / 1_000_000]),
        ...(data.spending_controls?.spending_limits.filter((l) => l.interval === "per_payment").map((l) => l.amount_usd) ?? []),
      ];
      const mcp_config = mcpClientConfig({
        token: data.token,
        permissions: data.permissions,
        baseUrl: ctx.config.baseUrl,
        command: ctx.launch,
        maxPaymentUsd: caps.length ? Math.min(...caps) : undefined,
      });
      return toolSuccess(
        { token: data, base_url: ctx.config.baseUrl, mcp_config },
        [`Hand mcp_config (or AGENTWALLET_API_TOKEN=${data.display_prefix}… with AGENTWALLET_BASE_URL=${ctx.config.baseUrl}) to the sub-agent; the token is not shown again. Revoke it with the user's console or DELETE /v1/tokens/${data.id}.`],
      );
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
