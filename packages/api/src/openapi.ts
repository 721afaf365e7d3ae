/**
 * OpenAPI 3.1 document generated from the zod schemas (OpenAPI 3.1 uses JSON Schema 2020-12,
 * which is what zod emits), so the document can never drift from what the server validates.
 */
import { z } from "zod";
import * as s from "./schemas.ts";

type Op = {
  /** Stable name for generated clients; when absent, derived from the method and path (see operationIdOf). */
  operationId?: string;
  summary: string;
  permission: string;
  request?: z.ZodType;
  query?: z.ZodObject;
  /** Path parameters, by name: `{id}` in the path. */
  params?: Record<string, string>;
  /** Request headers the operation reads, by name. */
  headers?: Record<string, string>;
  responses: Record<string, { description: string; schema: z.ZodType }>;
  deprecated?: boolean;
  /** `admin`: authenticated by an operator's admin credential instead of a project's API token; `none`: public (probes). */
  auth?: "admin" | "none";
};

const errorResponses = {
  "400": { description: "Validation error, insufficient balance, or x402 price above the cap.", schema: s.ErrorBody },
  "401": { description: "Missing, malformed, unknown, expired or revoked token.", schema: s.ErrorBody },
  "403": { description: "Token lacks the permission, or the project is paused.", schema: s.ErrorBody },
  "429": { description: "More than 100 requests per minute for this token.", schema: s.ErrorBody },
  "503": { description: "The service is at capacity for a moment (service_busy; Retry-After says when): send the same request again, with the same idempotency key.", schema: s.ErrorBody },
};
const payErrors = {
  ...errorResponses,
  "503": { description: "The service is at capacity for a moment (service_busy; Retry-After says when): send the same request again with the same idempotency key, which answers a payment it made and never makes it twice. Or the rail is not available on this deployment (rail_unavailable).", schema: s.ErrorBody },
  "409": { description: "A request with the same idempotency key is still in flight (idempotency_in_flight), or, on a deprecated endpoint, the key belongs to a payment of another rail (idempotency_key_reused); with a quote_id, the target's terms changed since the quote (quote_changed) or the quote expired (quote_expired).", schema: s.ErrorBody },
  "502": { description: "The payment provider, the target API or the facilitator failed.", schema: s.ErrorBody },
};

const adminErrors = {
  "400": { description: "Validation error (the detail names the field).", schema: s.ErrorBody },
  "401": { description: "Missing, malformed, unknown or revoked admin credential.", schema: s.ErrorBody },
  "403": { description: "A project's API token was sent (admin_credential_required): this API takes an admin credential only; or the credential's role does not allow this (admin_role_insufficient).", schema: s.ErrorBody },
  "404": { description: "No such project, token or payment.", schema: s.ErrorBody },
  "429": { description: "Too many requests for this credential.", schema: s.ErrorBody },
};
const ADMIN = "admin credential (aw_admin_…, `agentwallet admin credentials create`); reads take any role, changes the admin role";
const ADMIN_APPROVER = "admin credential of role approver or admin";
const projectId = { id: "The project's id." };
const tokenId = { id: "The token's id." };
const paymentId = { id: "The payment's id." };
const webhookId = { id: "The webhook endpoint's id." };
const decisionResponses = {
  "200": { description: "The decision, recorded with who made it and when.", schema: s.ApprovalDecision },
  ...adminErrors,
  "409": { description: "The payment is not waiting for approval (decided already, expired, or never needed one): not_awaiting_approval.", schema: s.ErrorBody },
};

/** The operator's API over the same service functions as the CLI: projects, tokens and their controls, approvals, refusals. */
const adminOperations: Record<string, Record<string, Op>> = {
  "/v1/admin/projects": {
    get: { operationId: "adminListProjects", summary: "Every project", permission: ADMIN, auth: "admin", responses: { "200": { description: "The projects, oldest first.", schema: s.AdminProjectList }, ...adminErrors } },
    post: { operationId: "adminCreateProject", summary: "Create a project", permission: ADMIN, auth: "admin", request: s.CreateProjectRequest, responses: { "201": { description: "The new project.", schema: s.AdminProject }, ...adminErrors } },
  },
  "/v1/admin/projects/{id}": {
    get: { operationId: "adminGetProject", summary: "One project", permission: ADMIN, auth: "admin", params: projectId, responses: { "200": { description: "The project.", schema: s.AdminProject }, ...adminErrors } },
  },
  "/v1/admin/projects/{id}/pause": {
    post: { operationId: "adminPauseProject", summary: "Pause a project: its new payments are refused", permission: ADMIN, auth: "admin", params: projectId, responses: { "200": { description: "The project, paused.", schema: s.AdminProject }, ...adminErrors } },
  },
  "/v1/admin/projects/{id}/resume": {
    post: { operationId: "adminResumeProject", summary: "Resume a paused project", permission: ADMIN, auth: "admin", params: projectId, responses: { "200": { description: "The project, resumed.", schema: s.AdminProject }, ...adminErrors } },
  },
  "/v1/admin/projects/{id}/controls": {
    patch: {
      operationId: "adminUpdateProjectControls",
      summary: "Change the spending controls every token of the project obeys (the fields given)",
      permission: ADMIN,
      auth: "admin",
      params: projectId,
      request: s.SpendingControlsInput,
      responses: { "200": { description: "The project now.", schema: s.AdminProject }, ...adminErrors },
    },
  },
  "/v1/admin/projects/{id}/tokens": {
    get: { operationId: "adminListTokens", summary: "The project's API tokens (never their secrets)", permission: ADMIN, auth: "admin", params: projectId, responses: { "200": { description: "The tokens, oldest first.", schema: s.AdminTokenList }, ...adminErrors } },
    post: {
      operationId: "adminCreateToken",
      summary: "Issue an API token with its spending controls (shown once)",
      permission: ADMIN,
      auth: "admin",
      params: projectId,
      request: s.CreateTokenRequest,
      responses: { "201": { description: "The token, with its secret this once.", schema: s.CreatedAdminToken }, ...adminErrors },
    },
  },
  "/v1/admin/tokens/{id}/controls": {
    patch: {
      operationId: "adminUpdateTokenControls",
      summary: "Change a token's spending controls (the fields given replace theirs)",
      permission: ADMIN,
      auth: "admin",
      params: tokenId,
      request: s.SpendingControlsInput,
      responses: { "200": { description: "The token now.", schema: s.AdminToken }, ...adminErrors },
    },
  },
  "/v1/admin/tokens/{id}/revoke": {
    post: { operationId: "adminRevokeToken", summary: "Revoke a token: refused from the next request on", permission: ADMIN, auth: "admin", params: tokenId, responses: { "200": { description: "The token, revoked.", schema: s.AdminToken }, ...adminErrors } },
  },
  "/v1/admin/tokens/{id}/limits": {
    get: { operationId: "adminGetTokenLimits", summary: "A token's controls and, per window, spent and remaining", permission: ADMIN, auth: "admin", params: tokenId, responses: { "200": { description: "What the token's own GET /v1/limits answers.", schema: s.Limits }, ...adminErrors } },
  },
  "/v1/admin/payments/pending": {
    get: { operationId: "adminListPendingApprovals", summary: "Payments waiting for a person's approval", permission: ADMIN, auth: "admin", query: s.AdminPendingQuery, responses: { "200": { description: "Oldest first.", schema: s.PendingApprovalList }, ...adminErrors } },
  },
  "/v1/admin/payments/{id}/approve": {
    post: { operationId: "adminApprovePayment", summary: "Approve a waiting payment: the worker sends it", permission: ADMIN_APPROVER, auth: "admin", params: paymentId, request: s.DecisionRequest, responses: decisionResponses },
  },
  "/v1/admin/payments/{id}/deny": {
    post: { operationId: "adminDenyPayment", summary: "Deny a waiting payment: failed and credited back", permission: ADMIN_APPROVER, auth: "admin", params: paymentId, request: s.DecisionRequest, responses: decisionResponses },
  },
  "/v1/admin/projects/{id}/webhooks": {
    get: { operationId: "adminListWebhookEndpoints", summary: "A project's webhook endpoints", permission: ADMIN, auth: "admin", params: projectId, responses: { "200": { description: "Oldest first.", schema: s.AdminWebhookEndpointList }, ...adminErrors } },
    post: {
      operationId: "adminCreateWebhookEndpoint",
      summary: "Send a project's events to a URL (Standard Webhooks); the signing secret is answered once",
      permission: ADMIN,
      auth: "admin",
      params: projectId,
      request: s.CreateWebhookEndpointRequest,
      responses: { "201": { description: "The endpoint, with its secret.", schema: s.CreatedAdminWebhookEndpoint }, ...adminErrors },
    },
  },
  "/v1/admin/webhooks/{id}": {
    delete: { operationId: "adminDeleteWebhookEndpoint", summary: "Delete an endpoint: nothing more is sent to it", permission: ADMIN, auth: "admin", params: webhookId, responses: { "200": { description: "Deleted.", schema: s.AdminWebhookDeleted }, ...adminErrors } },
  },
  "/v1/admin/webhooks/{id}/enable": {
    post: { operationId: "adminEnableWebhookEndpoint", summary: "Enable an endpoint disabled for failing: what is pending is sent", permission: ADMIN, auth: "admin", params: webhookId, responses: { "200": { description: "The endpoint, enabled.", schema: s.AdminWebhookEndpoint }, ...adminErrors } },
  },
  "/v1/admin/webhooks/{id}/deliveries": {
    get: { operationId: "adminListWebhookDeliveries", summary: "An endpoint's newest deliveries and their attempts", permission: ADMIN, auth: "admin", params: webhookId, query: s.AdminWebhookDeliveriesQuery, responses: { "200": { description: "Newest first.", schema: s.AdminWebhookDeliveryList }, ...adminErrors } },
  },
  "/v1/admin/webhook-events/{id}/redeliver": {
    post: { operationId: "adminRedeliverWebhookEvent", summary: "Send an event again to its enabled endpoints", permission: ADMIN, auth: "admin", params: { id: "The event's id (the `webhook-id` header)." }, responses: { "200": { description: "How many deliveries were scheduled.", schema: s.AdminWebhookRedelivery }, ...adminErrors } },
  },
  "/v1/admin/audit": {
    get: { operationId: "adminListAudit", summary: "The audit log: every operator and token-management change, newest first", permission: ADMIN, auth: "admin", query: s.AuditQuery, responses: { "200": { description: "Newest first, paged by `before`.", schema: s.AuditList }, ...adminErrors } },
  },
  "/v1/admin/refusals": {
    get: { operationId: "adminListRefusals", summary: "Payment attempts the spending controls refused", permission: ADMIN, auth: "admin", query: s.AdminRefusalsQuery, responses: { "200": { description: "Newest first.", schema: s.RefusalList }, ...adminErrors } },
  },
};

const operations: Record<string, Record<string, Op>> = {
  // Public probes; like every route they answer 400 malformed_http to a request HTTP itself does not allow.
  "/healthz": {
    get: {
      operationId: "getHealth",
      summary: "Liveness: the process answers",
      permission: "none (for load balancers and orchestrators)",
      auth: "none",
      responses: {
        "200": { description: "The process is up.", schema: s.Health },
        "400": { description: "The HTTP request itself is malformed (malformed_http); the connection is closed.", schema: s.ErrorBody },
      },
    },
  },
  "/readyz": {
    get: {
      operationId: "getReadiness",
      summary: "Readiness: the database answers, and whether settlement runs",
      permission: "none (for load balancers and orchestrators)",
      auth: "none",
      responses: {
        "200": { description: "Ready to serve requests.", schema: s.Readiness },
        "400": { description: "The HTTP request itself is malformed (malformed_http); the connection is closed.", schema: s.ErrorBody },
        "503": { description: "The database does not answer (not_ready): take the instance out of rotation.", schema: s.ErrorBody },
      },
    },
  },
  "/v1/balance": {
    get: {
      operationId: "getBalance",
      summary: "Project balance",
      permission: "read",
      responses: { "200": { description: "The project balance.", schema: s.Balance }, ...errorResponses },
    },
  },
  "/v1/limits": {
    get: {
      operationId: "getLimits",
      summary: "The calling token's spending controls (and its project's), with spent and remaining per window",
      permission: "read",
      responses: { "200": { description: "The controls and windows.", schema: s.Limits }, ...errorResponses },
    },
  },
  "/v1/tokens": {
    post: {
      operationId: "createChildToken",
      summary: "Create a child token no wider than the calling one, for a sub-agent (its secret shown once)",
      permission: "delegate",
      request: s.CreateChildTokenRequest,
      responses: {
        "201": { description: "The child token, with its secret this once.", schema: s.CreatedChildToken },
        ...errorResponses,
        "403": { description: "Token lacks delegate (permission_denied), the child would be wider than it (token_wider_than_parent), the depth is reached (delegation_depth_exceeded) or it has too many children (child_tokens_limit).", schema: s.ErrorBody },
      },
    },
    get: {
      operationId: "listChildTokens",
      summary: "The calling token's descendants, with what each (and its own descendants) spent",
      permission: "delegate",
      responses: { "200": { description: "Oldest first.", schema: s.ChildTokenList }, ...errorResponses },
    },
  },
  "/v1/tokens/{id}": {
    delete: {
      operationId: "revokeChildToken",
      summary: "Revoke a descendant and, at once, all of its own descendants",
      permission: "delegate",
      params: { id: "The descendant's id." },
      responses: {
        "200": { description: "The token, revoked.", schema: s.ChildToken },
        ...errorResponses,
        "404": { description: "No descendant of the calling token has this id (token_not_found); another branch's tokens answer the same.", schema: s.ErrorBody },
      },
    },
  },
  "/v1/tokens/{id}/limits": {
    get: {
      operationId: "getChildTokenLimits",
      summary: "A descendant's controls and, per window, spent and remaining",
      permission: "delegate",
      params: { id: "The descendant's id." },
      responses: {
        "200": { description: "What the descendant's own GET /v1/limits answers.", schema: s.Limits },
        ...errorResponses,
        "404": { description: "No descendant of the calling token has this id (token_not_found).", schema: s.ErrorBody },
      },
    },
  },
  "/v1/stablecoin/address": {
    get: {
      operationId: "getDepositAddress",
      summary: "USDC deposit address on Base (created on first call)",
      permission: "read",
      responses: { "200": { description: "The deposit address.", schema: s.DepositAddress }, ...errorResponses },
    },
  },
  "/v1/transactions": {
    get: {
      operationId: "listTransactions",
      summary: "Transactions, newest first",
      permission: "read",
      query: s.ListTransactionsQuery,
      responses: { "200": { description: "A page of transactions.", schema: s.TransactionList }, ...errorResponses },
    },
  },
  "/v1/transactions/{id}": {
    get: {
      summary: "One transaction of the project, with its payment's or deposit's details",
      permission: "read",
      params: { id: "The transaction's id (from a payment answer or the list)." },
      responses: {
        "200": { description: "The transaction.", schema: s.TransactionDetail },
        ...errorResponses,
        "404": { description: "No such transaction in this project (another project's id answers the same).", schema: s.ErrorBody },
      },
    },
  },
  "/v1/transactions/{id}/evidence": {
    get: {
      summary: "The evidence of a transaction's payment: every change, hash-chained per project",
      permission: "read",
      params: { id: "The transaction's id: the payment's or its fee's." },
      responses: {
        "200": { description: "The payment's evidence records, oldest first, and the project's chain head.", schema: s.TransactionEvidence },
        ...errorResponses,
        "404": { description: "No such transaction in this project (another project's id answers the same).", schema: s.ErrorBody },
      },
    },
  },
  "/v1/pay": {
    post: {
      operationId: "pay",
      summary: "Pay a URL (x402), an EVM address (USDC) or a bank account (ACH)",
      permission: "pay (and x402 for URL recipients)",
      request: s.PayRequest,
      headers: { "Idempotency-Key": "Alternative to the body's idempotency_key, same rules; both given and different is a 400." },
      responses: {
        "200": { description: "x402 payment (or pass-through), or an idempotent replay.", schema: s.PayResponse },
        "201": { description: "USDC transfer or fiat payment accepted.", schema: s.PayResponse },
        ...payErrors,
      },
    },
  },
  "/v1/quote": {
    post: {
      operationId: "quote",
      summary: "What paying a URL would cost, and whether this token's controls allow it (nothing is signed or charged)",
      permission: "x402",
      request: s.QuoteRequest,
      responses: {
        "200": { description: "The price, fee, requirement, the merchant's signed offer, the controls' verdict and a quote_id for POST /v1/pay.", schema: s.QuoteResponse },
        ...errorResponses,
        "502": { description: "The target failed or could not be reached.", schema: s.ErrorBody },
      },
    },
  },
  "/v1/x402/resources": {
    get: {
      operationId: "discoverX402Resources",
      summary: "Paid HTTP resources from the configured facilitator's Bazaar catalogue (prices are hints)",
      permission: "x402",
      query: s.DiscoveryQuery,
      responses: {
        "200": { description: "Catalogue entries; quote one with POST /v1/quote before paying.", schema: s.DiscoveryResponse },
        ...errorResponses,
        "502": { description: "The facilitator's catalogue failed (discovery_failed).", schema: s.ErrorBody },
        "503": { description: "No facilitator catalogue is configured (discovery_unavailable).", schema: s.ErrorBody },
      },
    },
  },
  "/v1/payments": {
    post: {
      operationId: "createAchPayment",
      summary: "ACH payment (deprecated: use POST /v1/pay with bank details)",
      permission: "pay",
      deprecated: true,
      request: s.LegacyPaymentRequest,
      headers: { "Idempotency-Key": "Alternative to the body's idempotency_key, same rules; both given and different is a 400." },
      responses: {
        "200": { description: "Idempotent replay of an earlier payment.", schema: s.LegacyPaymentResponse },
        "201": { description: "Payment accepted.", schema: s.LegacyPaymentResponse },
        ...payErrors,
      },
    },
  },
  "/v1/x402/pay": {
    post: {
      operationId: "x402Pay",
      summary: "x402 payment (deprecated: use POST /v1/pay with a URL)",
      permission: "x402",
      deprecated: true,
      request: s.X402PayRequest,
      headers: { "Idempotency-Key": "Makes the payment idempotent (this body has no idempotency_key); letters, digits, _ - : . only, at most 255." },
      responses: { "200": { description: "The target's reply.", schema: s.X402PayResponse }, ...payErrors },
    },
  },
  "/v1/usdc/transfer": {
    post: {
      operationId: "transferUsdc",
      summary: "On-chain USDC transfer (deprecated: use POST /v1/pay with an EVM address)",
      permission: "pay",
      deprecated: true,
      request: s.UsdcTransferRequest,
      headers: { "Idempotency-Key": "Alternative to the body's idempotency_key, same rules; both given and different is a 400." },
      responses: {
        "200": { description: "Idempotent replay of an earlier transfer.", schema: s.UsdcTransferResponse },
        "201": { description: "Transfer accepted.", schema: s.UsdcTransferResponse },
        ...payErrors,
      },
    },
  },
};

/**
 * `get /v1/transactions/{id}` → `getTransactionsById`: every operation gets a unique, stable operationId even
 * when its entry names none.
 */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split("/")
    .filter((part) => part !== "" && part !== "v1")
    .map((part) => (part.startsWith("{") ? `by_${part.slice(1, -1)}` : part))
    .flatMap((part) => part.split(/[^A-Za-z0-9]+/))
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join("");
}

const componentUri = (id: string) => `#/components/schemas/${id}`;

/** A named schema (`.meta({ id })`) becomes a `$ref` to its component; anything else is inlined. */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const id = z.globalRegistry.get(schema)?.id;
  if (id) return { $ref: componentUri(id) };
  const out = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/** Every named schema, each referring to the others through `#/components/schemas/…`. */
function componentSchemas(): Record<string, unknown> {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    target: "draft-2020-12",
    io: "input",
    unrepresentable: "any",
    uri: componentUri,
  }) as { schemas: Record<string, Record<string, unknown>> };
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return schemas;
}

/** Builds the OpenAPI 3.1 document; `serverUrl` is the public base address. */
export function buildOpenApiDocument(serverUrl = "/"): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [path, methods] of Object.entries({ ...operations, ...adminOperations })) {
    const item: Record<string, unknown> = {};
    for (const [method, op] of Object.entries(methods)) {
      const responses: Record<string, unknown> = {};
      for (const [code, r] of Object.entries(op.responses)) {
        responses[code] = { description: r.description, content: { "application/json": { schema: jsonSchema(r.schema, "output") } } };
      }
      const queryParameters = op.query
        ? Object.entries(op.query.shape).map(([name, schema]) => ({
            name,
            in: "query",
            required: false,
            schema: jsonSchema(schema as z.ZodType, "input"),
            description: (schema as z.ZodType).description,
          }))
        : [];
      const pathParameters = Object.entries(op.params ?? {}).map(([name, description]) => ({ name, in: "path", required: true, schema: { type: "string" }, description }));
      const headerParameters = Object.entries(op.headers ?? {}).map(([name, description]) => ({ name, in: "header", required: false, schema: { type: "string", maxLength: 255 }, description }));
      const all = [...pathParameters, ...queryParameters, ...headerParameters];
      const parameters = all.length ? all : undefined;
      item[method] = {
        operationId: op.operationId ?? operationIdOf(method, path),
        summary: op.summary,
        description: op.auth === undefined ? `Permission: ${op.permission}.` : `Authentication: ${op.permission}.`,
        deprecated: op.deprecated ?? false,
        security: op.auth === "none" ? [] : [op.auth === "admin" ? { admin: [] } : { bearer: [] }],
        ...(parameters ? { parameters } : {}),
        ...(op.request
          ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(op.request, "input") } } } }
          : {}),
        responses,
      };
    }
    paths[path] = item;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Agent Wallet API",
      version: "1.0.0",
      description: "Project-scoped USDC wallet for AI agents: balance, deposits on Base, and payments over x402, USDC and ACH.",
    },
    servers: [{ url: serverUrl }],
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "aw_live_… or aw_test_… API token" },
        admin: { type: "http", scheme: "bearer", description: "aw_admin_… operator credential (`agentwallet admin credentials create`); never a project token" },
      },
    },
    paths,
  };
}
