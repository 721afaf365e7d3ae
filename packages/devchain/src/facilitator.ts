// An x402 facilitator for the dev chain, built from Coinbase's own packages (x402Facilitator +
// the exact EVM scheme). It verifies and settles both protocol versions: v2 payloads on
// "eip155:<chainId>" and v1 payloads on "base" (v1 names map to chain ids; "base" is 8453).
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import type { DiscoveryResource } from "@x402/extensions/bazaar";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import express, { type NextFunction, type Request, type Response } from "express";
import { createPublicClient, http, type Hex } from "viem";
import { RECEIPT_TIMEOUT_MS, devChainDefinition, devPublicClient, devWalletClient } from "./chain.ts";
import { listenOnLoopback } from "./listen.ts";

export type StartFacilitatorOptions = {
  rpcUrl: string;
  /** Key of the account that submits settlements and pays their gas (devAccounts().facilitator). */
  privateKey: Hex;
  /** Loopback port; a free one when omitted. */
  port?: number;
};

export type Facilitator = {
  /** Base URL; x402 clients append /verify, /settle and /supported (and /discovery/… for its catalogue). */
  url: string;
  /**
   * The Bazaar catalogue it serves at GET /discovery/resources and GET /discovery/search (x402's bazaar
   * extension), empty at start: a test adds the resources it wants listed.
   */
  catalogue: DiscoveryResource[];
  stop(): Promise<void>;
};

/** Catalogue pages: at most this many resources each, as a real facilitator bounds them. */
const DISCOVERY_LIMIT_MAX = 100;
const DISCOVERY_LIMIT_DEFAULT = 20;

/** Facilitator requests are a payload and its requirements: a few KB. */
const BODY_LIMIT = "64kb";

export async function startFacilitator(options: StartFacilitatorOptions): Promise<Facilitator> {
  const facilitator = await createFacilitator(options.rpcUrl, options.privateKey);
  const catalogue: DiscoveryResource[] = [];
  const listening = await listenOnLoopback(createFacilitatorApp(facilitator, catalogue), options.port);
  return { url: listening.url, catalogue, stop: listening.close };
}

/** The x402Facilitator, settling with `privateKey` on the chain behind `rpcUrl`. */
export async function createFacilitator(rpcUrl: string, privateKey: Hex): Promise<x402Facilitator> {
  const chainId = await createPublicClient({ transport: http(rpcUrl) }).getChainId();
  const chain = devChainDefinition(chainId, rpcUrl);
  const publicClient = devPublicClient(chain);
  const wallet = devWalletClient(chain, privateKey);

  // A narrow signer over viem clients. toFacilitatorEvmSigner needs `address` at the top level
  // (a viem WalletClient only has `account.address`); without it /supported lists null signers.
  const signer = toFacilitatorEvmSigner(
    {
      address: wallet.account.address,
      readContract: (args) => publicClient.readContract(args as Parameters<typeof publicClient.readContract>[0]),
      verifyTypedData: (args) => publicClient.verifyTypedData(args as Parameters<typeof publicClient.verifyTypedData>[0]),
      writeContract: (args) => wallet.writeContract(args as Parameters<typeof wallet.writeContract>[0]),
      sendTransaction: (args) => wallet.sendTransaction(args),
      waitForTransactionReceipt: (args) => publicClient.waitForTransactionReceipt(args),
      getCode: (args) => publicClient.getCode(args),
    },
    { confirmationTimeoutMs: RECEIPT_TIMEOUT_MS },
  );

  // Registers v2 for the given network and v1 for every v1 EVM network name, "base" among them.
  return registerExactEvmScheme(new x402Facilitator(), { signer, networks: `eip155:${chainId}` });
}

/**
 * The HTTP face of a facilitator: GET /supported, POST /verify, POST /settle, and the Bazaar catalogue
 * (GET /discovery/resources: filters and limit/offset pages; GET /discovery/search: a query matched
 * against each resource's URL, description and tags). Does not listen.
 */
export function createFacilitatorApp(facilitator: x402Facilitator, catalogue: readonly DiscoveryResource[] = []): express.Express {
  const app = express();
  app.use(express.json({ limit: BODY_LIMIT }));

  const limitOf = (raw: unknown) => Math.min(DISCOVERY_LIMIT_MAX, Math.max(1, Number.parseInt(String(raw ?? DISCOVERY_LIMIT_DEFAULT), 10) || DISCOVERY_LIMIT_DEFAULT));
  const filtered = (q: Request["query"]) =>
    catalogue.filter(
      (r) =>
        (q.type === undefined || r.type === q.type) &&
        (q.network === undefined || r.accepts.some((a) => a.network === q.network)) &&
        (q.payTo === undefined || r.accepts.some((a) => a.payTo.toLowerCase() === String(q.payTo).toLowerCase())) &&
        (q.scheme === undefined || r.accepts.some((a) => a.scheme === q.scheme)),
    );
  app.get("/discovery/resources", (req, res) => {
    const limit = limitOf(req.query.limit);
    const offset = Math.max(0, Number.parseInt(String(req.query.offset ?? 0), 10) || 0);
    const items = filtered(req.query);
    res.json({ x402Version: 2, items: items.slice(offset, offset + limit), pagination: { limit, offset, total: items.length } });
  });
  app.get("/discovery/search", (req, res) => {
    const query = typeof req.query.query === "string" ? req.query.query.trim().toLowerCase() : "";
    if (!query) {
      res.status(400).json({ error: "query is required" });
      return;
    }
    const words = query.split(/\s+/);
    const text = (r: DiscoveryResource) => [r.resource, r.description ?? "", ...(r.tags ?? [])].join(" ").toLowerCase();
    const matches = filtered(req.query).filter((r) => words.every((w) => text(r).includes(w)));
    const limit = limitOf(req.query.limit);
    res.json({ x402Version: 2, resources: matches.slice(0, limit), partialResults: matches.length > limit, pagination: { limit, cursor: null } });
  });

  app.get("/supported", (_req, res) => {
    res.json(facilitator.getSupported());
  });

  app.post("/verify", async (req, res) => {
    const parsed = parseRequest(req);
    if (!parsed) {
      res.status(400).json({ isValid: false, invalidReason: "invalid_payload", invalidMessage: MALFORMED });
      return;
    }
    const { payload, requirements } = parsed;
    if (!isSupported(facilitator, payload, requirements)) {
      res.json({ isValid: false, invalidReason: "unsupported_scheme", invalidMessage: unsupported(payload, requirements) });
      return;
    }
    try {
      res.json(await facilitator.verify(payload, requirements));
    } catch (error) {
      // A throw here is a fault of this facilitator, not of the payment: say so with a 500.
      res.status(500).json({ isValid: false, invalidReason: "unexpected_verify_error", invalidMessage: messageOf(error) });
    }
  });

  app.post("/settle", async (req, res) => {
    const parsed = parseRequest(req);
    if (!parsed) {
      res.status(400).json(settleFailure("invalid_payload", MALFORMED, ""));
      return;
    }
    const { payload, requirements } = parsed;
    if (!isSupported(facilitator, payload, requirements)) {
      res.json(settleFailure("unsupported_scheme", unsupported(payload, requirements), requirements.network));
      return;
    }
    try {
      res.json(await facilitator.settle(payload, requirements));
    } catch (error) {
      // Caught so one bad settlement (v1 settle throws on some reverts) cannot take the process down.
      res.status(500).json(settleFailure("unexpected_settle_error", messageOf(error), requirements.network));
    }
  });

  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: "not found: this facilitator serves GET /supported, POST /verify, POST /settle" });
  });
  // Body parser failures (bad JSON, too large) carry their HTTP status; anything else is our fault.
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = isObject(error) && typeof error.status === "number" ? error.status : 500;
    res.status(status).json({ error: messageOf(error) });
  });
  return app;
}

const MALFORMED = "expected a JSON body { x402Version, paymentPayload, paymentRequirements }";

function parseRequest(req: Request): { payload: PaymentPayload; requirements: PaymentRequirements } | undefined {
  const body: unknown = req.body;
  if (!isObject(body) || !isObject(body.paymentPayload) || !isObject(body.paymentRequirements)) return undefined;
  const payload = body.paymentPayload;
  const requirements = body.paymentRequirements;
  if (typeof payload.x402Version !== "number" || typeof requirements.scheme !== "string") return undefined;
  if (typeof requirements.network !== "string") return undefined;
  return { payload: payload as PaymentPayload, requirements: requirements as PaymentRequirements };
}

/** Whether a scheme is registered for this version and network; x402Facilitator throws otherwise. */
function isSupported(facilitator: x402Facilitator, payload: PaymentPayload, requirements: PaymentRequirements): boolean {
  return facilitator
    .getSupported()
    .kinds.some(
      (kind) =>
        kind.x402Version === payload.x402Version &&
        kind.scheme === requirements.scheme &&
        kind.network === requirements.network,
    );
}

function unsupported(payload: PaymentPayload, requirements: PaymentRequirements): string {
  return `no scheme "${requirements.scheme}" for x402 version ${payload.x402Version} on network "${requirements.network}"; see GET /supported`;
}

function settleFailure(errorReason: string, errorMessage: string, network: string) {
  return { success: false, errorReason, errorMessage, transaction: "", network };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
