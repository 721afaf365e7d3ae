/**
 * A small typed client over `fetch` for every endpoint. Responses are validated against the
 * schemas, so a contract drift fails loudly instead of handing a caller a wrong shape.
 */
import type { z } from "zod";
import * as s from "./schemas.ts";

export type WalletClientOptions = {
  /** Base address of the service, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** Bearer API token (`aw_live_…` / `aw_test_…`). */
  token: string;
  /** Per-request deadline; default 30 s (x402 payments include a round trip to the target). */
  timeoutMs?: number;
  fetch?: typeof fetch;
};

/** A non-2xx answer from the API: its status and the `detail` it gave. */
export class WalletApiError extends Error {
  override name = "WalletApiError";
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly code: string | undefined,
    readonly headers: Headers,
  ) {
    super(`HTTP ${status}: ${detail}`);
  }
}

/** Query of `listTransactions`: the contract's page, and the filters and cursor beside it. */
export type ListTransactionsParams = {
  limit?: number;
  offset?: number;
  type?: s.TransactionType[];
  status?: s.TransactionStatus[];
  /** ISO 8601, exclusive. */
  created_after?: string;
  created_before?: string;
  /** The id of the last transaction of the previous page. */
  starting_after?: string;
};

export type ApiResult<T> = { status: number; data: T; headers: Headers };

export function createWalletClient(options: WalletClientOptions) {
  const { baseUrl, token, timeoutMs = 30_000 } = options;
  const doFetch = options.fetch ?? fetch;
  const root = baseUrl.replace(/\/+$/, "");

  async function call<T extends z.ZodType>(
    method: "GET" | "POST" | "DELETE",
    path: string,
    schema: T,
    body?: unknown,
  ): Promise<ApiResult<z.infer<T>>> {
    const res = await doFetch(`${root}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const err = s.ErrorBody.safeParse(json);
      const detail = err.success ? err.data.detail : `unexpected response: ${text.slice(0, 200)}`;
      throw new WalletApiError(res.status, detail, err.success ? err.data.code : undefined, res.headers);
    }
    return { status: res.status, data: schema.parse(json), headers: res.headers };
  }

  return {
    getBalance: () => call("GET", "/v1/balance", s.Balance),
    getDepositAddress: () => call("GET", "/v1/stablecoin/address", s.DepositAddress),
    /** The token's spending controls (and its project's), with spent and remaining per window. */
    getLimits: () => call("GET", "/v1/limits", s.Limits),
    listTransactions: (query: ListTransactionsParams = {}) => {
      const params = new URLSearchParams();
      if (query.limit !== undefined) params.set("limit", String(query.limit));
      if (query.offset !== undefined) params.set("offset", String(query.offset));
      if (query.type?.length) params.set("type", query.type.join(","));
      if (query.status?.length) params.set("status", query.status.join(","));
      if (query.created_after !== undefined) params.set("created_after", query.created_after);
      if (query.created_before !== undefined) params.set("created_before", query.created_before);
      if (query.starting_after !== undefined) params.set("starting_after", query.starting_after);
      const qs = params.toString();
      return call("GET", `/v1/transactions${qs ? `?${qs}` : ""}`, s.TransactionList);
    },
    getTransaction: (id: string) => call("GET", `/v1/transactions/${encodeURIComponent(id)}`, s.TransactionDetail),
    getTransactionEvidence: (id: string) => call("GET", `/v1/transactions/${encodeURIComponent(id)}/evidence`, s.TransactionEvidence),
    pay: (body: s.PayRequest) => call("POST", "/v1/pay", s.PayResponse, body),
    quote: (body: s.QuoteRequest) => call("POST", "/v1/quote", s.QuoteResponse, body),
    /** A child token no wider than this one, for a sub-agent (needs `delegate`); its secret is in the answer this once. */
    createChildToken: (body: s.CreateChildTokenRequest) => call("POST", "/v1/tokens", s.CreatedChildToken, body),
    /** This token's descendants, with what each spent. */
    listChildTokens: () => call("GET", "/v1/tokens", s.ChildTokenList),
    /** Revokes a descendant and all of its own descendants. */
    revokeChildToken: (id: string) => call("DELETE", `/v1/tokens/${encodeURIComponent(id)}`, s.ChildToken),
    /** @deprecated use `pay` with bank details. */
    sendPayment: (body: s.LegacyPaymentRequest) => call("POST", "/v1/payments", s.LegacyPaymentResponse, body),
    /** @deprecated use `pay` with a URL. */
    x402Pay: (body: s.X402PayRequest) => call("POST", "/v1/x402/pay", s.X402PayResponse, body),
    /** @deprecated use `pay` with an EVM address. */
    sendUsdc: (body: s.UsdcTransferRequest) => call("POST", "/v1/usdc/transfer", s.UsdcTransferResponse, body),
  };
}
export type WalletClient = ReturnType<typeof createWalletClient>;
