/**
 * The guards every payment tool goes through, in order: the user's per-payment cap (refused here, the API
 * never sees the call), the user's confirmation when the client can ask for it, then the API call with an
 * idempotency key, so a retried tool call cannot pay twice.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ApiResult } from "@agentwallet/api";
import { mcpLimits } from "./config.ts";
import { apiFailure } from "./errors.ts";
import { formatUsd } from "./money.ts";
import { toolFailure, toolSuccess, type ToolContext, type ToolExtra } from "./tool.ts";

export type PaymentIntent<T extends Record<string, unknown>> = {
  tool: string;
  /** Most this call can spend, micro-USD, fee excluded; undefined when only the target knows (x402 without a max). */
  amountMicrosMax: number | undefined;
  /** One phrase for the user and the model, e.g. `$5.00 in USDC to 0xabc… on Base`. */
  summary: string;
  /** Undefined only where the endpoint takes no key (`x402_pay`). */
  idempotency: IdempotencyChoice | undefined;
  send: () => Promise<ApiResult<T>>;
};

export type IdempotencyChoice = { key: string; derived: boolean };

/** The model-facing text of every payment tool's `idempotency_key`. */
export const idempotencyKeyDescription =
  "Optional. Repeating a key returns the original payment instead of paying again. Leave it out and this server " +
  `derives one from the arguments, so an identical call within ${mcpLimits.autoIdempotencyWindowMs / 60_000} minutes ` +
  "(a retry) cannot pay twice; give a new key to pay the same recipient the same amount again on purpose.";
/** The character rule of `IdempotencyKey` in `@agentwallet/api`, for the endpoints that use it. */
export const keyCharacters = "Letters, digits, _ - : . only; at most 255 characters.";

/** The model's key when it gave one, else the key derived from the arguments (see `AutoIdempotencyKeys`). */
export function chooseIdempotencyKey(
  ctx: ToolContext,
  tool: string,
  args: Record<string, unknown> & { idempotency_key?: string | undefined },
): IdempotencyChoice {
  if (args.idempotency_key) return { key: args.idempotency_key, derived: false };
  return { key: ctx.autoKeys.keyFor(tool, args), derived: true };
}

export async function runPayment<T extends Record<string, unknown>>(
  ctx: ToolContext,
  extra: ToolExtra,
  intent: PaymentIntent<T>,
): Promise<CallToolResult> {
  const refusal = capRefusal(ctx, intent);
  if (refusal) return refusal;
  const declined = await confirmWithUser(ctx, extra, intent);
  if (declined) return declined;
  const key = intent.idempotency?.key;
  let result: ApiResult<T>;
  try {
    result = await intent.send();
  } catch (error) {
    return apiFailure(error, ctx, { kind: "payment", idempotencyKey: key });
  }
  return toolSuccess(result.data, paymentNotes(ctx, intent, result));
}

function capRefusal(ctx: ToolContext, intent: PaymentIntent<Record<string, unknown>>): CallToolResult | undefined {
  const cap = ctx.config.maxPaymentMicros;
  if (cap === undefined || intent.amountMicrosMax === undefined || intent.amountMicrosMax <= cap) return undefined;
  return toolFailure(
    `Refused by this MCP server before reaching the API: ${intent.summary} is above the per-payment limit of ` +
      `${formatUsd(cap)} that the user set (AGENTWALLET_MAX_PAYMENT_USD). Nothing was paid.\n` +
      "Next: ask the user to make this payment another way or to raise the limit. Do not split it into smaller " +
      "payments to get under the limit.",
  );
}

/**
 * Asks the user through the client (MCP elicitation) before a payment above the confirmation threshold, or
 * of an amount only the target knows. Clients that cannot show a form skip this step: the cap above is the
 * guard that always holds.
 */
async function confirmWithUser(
  ctx: ToolContext,
  extra: ToolExtra,
  intent: PaymentIntent<Record<string, unknown>>,
): Promise<CallToolResult | undefined> {
  const needsConfirmation =
    intent.amountMicrosMax === undefined || intent.amountMicrosMax > ctx.config.confirmAboveMicros;
  if (!needsConfirmation || !ctx.clientCanConfirm()) return undefined;
  let answer;
  try {
    answer = await extra.sendRequest(
      {
        method: "elicitation/create",
        params: {
          mode: "form",
          message: `Confirm payment from your Agent Wallet: ${intent.summary}, plus the platform fee (1-2%).`,
          requestedSchema: {
            type: "object",
            properties: {
              confirm: { type: "boolean", title: "Send this payment", default: false },
            },
            required: ["confirm"],
          },
        },
      },
      ElicitResultSchema,
      { timeout: mcpLimits.confirmationTimeoutMs },
    );
  } catch (error) {
    return toolFailure(
      `Could not get the user's confirmation for ${intent.summary} (${error instanceof Error ? error.message : String(error)}). ` +
        "Nothing was paid.\nNext: ask the user in the conversation whether to try again.",
    );
  }
  if (answer.action === "accept" && answer.content?.confirm === true) return undefined;
  return toolFailure(
    `The user did not confirm ${intent.summary}; nothing was paid.\n` +
      "Next: do not retry unless the user asks for this payment again.",
  );
}

function paymentNotes(
  ctx: ToolContext,
  intent: PaymentIntent<Record<string, unknown>>,
  result: ApiResult<Record<string, unknown>>,
): string[] {
  const notes: string[] = [];
  const key = intent.idempotency?.key;
  // The API marks a replay with a header; the deprecated /v1/payments also answers 200 instead of 201.
  const replayed =
    result.headers.get("idempotent-replayed") === "true" || (intent.tool === "send_payment" && result.status === 200);
  if (replayed && key) {
    notes.push(
      `No new payment was made: idempotency_key "${key}" was already used, and this is that original payment. ` +
        "To pay again deliberately, call again with a different idempotency_key.",
    );
  } else if (intent.idempotency?.derived) {
    const minutes = Math.round(ctx.autoKeys.windowMs / 60_000);
    notes.push(
      `idempotency_key "${key}" was derived from the arguments: an identical call within ${minutes} minutes returns ` +
        "this payment instead of paying again; pass a different idempotency_key to make a deliberate second payment.",
    );
  }
  const data = result.data as { id?: string; status?: string; rail?: string; tx_hash?: string | null; approval?: { status: string; expires_at: string } };
  if (data.approval?.status === "required") {
    notes.push(
      `Waiting for a person's approval: nothing is sent until someone approves it, and if nobody does by ${data.approval.expires_at} ` +
        `it fails and is credited back. Check with get_transaction (id "${data.id}"); do not pay again meanwhile.`,
    );
  } else if (data.rail === "x402" && data.tx_hash) {
    notes.push("The target was paid on-chain (tx_hash); the platform fee is being moved, then the payment shows completed.");
  } else if (data.status === "processing" || data.status === "pending") {
    notes.push("Accepted but not settled yet: list_transactions shows when it completes (or fails and is credited back).");
  }
  return notes;
}
