// x402 merchants for tests and the sandbox: the same small app behind Coinbase's v2 middleware
// (@x402/express) or v1 middleware (x402-express). Both price /paid explicitly in the dev chain's
// TestUSDC, because a price like "$0.01" would resolve to the real USDC of the network, and both
// use the given facilitator, never the public default one.
import { HTTPFacilitatorClient } from "@x402/core/server";
import { createEIP712OfferReceiptIssuer, createOfferReceiptExtension, declareOfferReceiptExtension } from "@x402/extensions/offer-receipt";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddlewareFromHTTPServer, x402HTTPResourceServer, x402ResourceServer } from "@x402/express";
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { paymentMiddleware as paymentMiddlewareV1 } from "x402-express";
import { listenOnLoopback } from "./listen.ts";

export type StartMerchantOptions = {
  /** Base URL of the facilitator (startFacilitator().url). */
  facilitatorUrl: string;
  /** Who gets paid. */
  payTo: Address;
  /** The dev chain's TestUSDC. */
  usdcAddress: Address;
  /** Price of one /paid request in USDC base units (1 USDC = 1_000_000). */
  priceMicros: bigint;
  /** Loopback port; a free one when omitted. */
  port?: number;
  /** How long a signed payment stays valid (x402 clients set validBefore = now + this); 60 when omitted. */
  maxTimeoutSeconds?: number;
  /**
   * v2 only: sign an offer for each requirement with this key (x402's offer-and-receipt extension, EIP-712).
   * The spec's simplest authorisation is a key whose address is the payTo; a test may give another to see
   * an unauthorised signer.
   */
  offerSignerKey?: Hex;
};

export type Merchant = {
  /** Base URL: GET|POST {url}/paid costs priceMicros, GET {url}/free costs nothing. */
  url: string;
  stop(): Promise<void>;
};

/** A v2 merchant whose price can change while it runs (a merchant raising its price between a quote and a payment). */
export type RepricingMerchant = Merchant & { setPrice(priceMicros: bigint): void };

/** The EIP-712 domain of USDC (and TestUSDC); x402 needs it in the requirements' `extra`. */
export const USDC_EIP712_DOMAIN = { name: "USD Coin", version: "2" } as const;

/** x402 v2 names networks by CAIP-2 id; v1 by name, and v1 "base" is chain id 8453. */
const V2_NETWORK = "eip155:8453";
const V1_NETWORK = "base";
/** How long a signed payment stays valid by default; x402 clients set validBefore = now + this. */
const MAX_TIMEOUT_SECONDS = 60;
const FACILITATOR_TIMEOUT_MS = 30_000;
const BODY_LIMIT = "1mb";
const DESCRIPTION = "Dev chain test resource";

/** A merchant speaking x402 v2 (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE). */
export async function startMerchantV2(options: StartMerchantOptions): Promise<RepricingMerchant> {
  assertPrice(options.priceMicros);
  let priceMicros = options.priceMicros;
  const facilitator = new HTTPFacilitatorClient({ url: options.facilitatorUrl, timeoutMs: FACILITATOR_TIMEOUT_MS });
  const resourceServer = new x402ResourceServer(facilitator).register(V2_NETWORK, new ExactEvmScheme());
  if (options.offerSignerKey) {
    const signer = privateKeyToAccount(options.offerSignerKey);
    const issuer = createEIP712OfferReceiptIssuer(`did:pkh:${V2_NETWORK}:${signer.address}`, (params) => signer.signTypedData(params as never));
    resourceServer.registerExtension(createOfferReceiptExtension(issuer));
  }
  const httpServer = new x402HTTPResourceServer(resourceServer, {
    "/paid": {
      accepts: {
        scheme: "exact",
        network: V2_NETWORK,
        payTo: options.payTo,
        // Read at each request, so setPrice takes effect at once (x402's dynamic price).
        price: () => ({ amount: priceMicros.toString(), asset: options.usdcAddress, extra: { ...USDC_EIP712_DOMAIN } }),
        maxTimeoutSeconds: options.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS,
      },
      description: DESCRIPTION,
      mimeType: "application/json",
      ...(options.offerSignerKey ? { extensions: declareOfferReceiptExtension() } : {}),
    },
  });
  // Fetch the facilitator's /supported now, so a missing facilitator fails here and not on a request.
  await httpServer.initialize();
  const payment = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false);
  const merchant = await listen(createMerchantApp(payment), options.port);
  return {
    ...merchant,
    setPrice(next) {
      assertPrice(next);
      priceMicros = next;
    },
  };
}

/** A merchant speaking x402 v1 (402 body `accepts`, X-PAYMENT / X-PAYMENT-RESPONSE). */
export async function startMerchantV1(options: StartMerchantOptions): Promise<Merchant> {
  assertPrice(options.priceMicros);
  const payment = paymentMiddlewareV1(
    options.payTo,
    {
      "/paid": {
        price: {
          amount: options.priceMicros.toString(),
          asset: { address: options.usdcAddress, decimals: 6, eip712: { ...USDC_EIP712_DOMAIN } },
        },
        network: V1_NETWORK,
        config: { description: DESCRIPTION, mimeType: "application/json", maxTimeoutSeconds: options.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS },
      },
    },
    { url: options.facilitatorUrl as `${string}://${string}` },
  );
  return listen(createMerchantApp(payment), options.port);
}

/** The resource app behind `payment`: /paid (GET, or POST echoing the body) and /free. Does not listen. */
export function createMerchantApp(payment: RequestHandler): express.Express {
  const app = express();
  // Raw bytes, so POST /paid echoes exactly what was sent, whatever its content type.
  app.use(express.raw({ type: () => true, limit: BODY_LIMIT }));
  app.use(payment);
  // After the payment middleware on purpose: it must let routes it does not price through for free.
  app.get("/free", (_req, res) => {
    res.json({ free: true });
  });
  app.get("/paid", (_req, res) => {
    res.json({ paid: true });
  });
  app.post("/paid", (req, res) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    res.type(req.get("content-type") ?? "application/octet-stream").send(body);
  });
  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: "not found: this merchant serves GET|POST /paid and GET /free" });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status =
      typeof error === "object" && error !== null && "status" in error && typeof error.status === "number"
        ? error.status
        : 500;
    res.status(status).json({ error: error instanceof Error ? error.message : String(error) });
  });
  return app;
}

async function listen(app: express.Express, port: number | undefined): Promise<Merchant> {
  const listening = await listenOnLoopback(app, port);
  return { url: listening.url, stop: listening.close };
}

function assertPrice(priceMicros: bigint): void {
  if (priceMicros <= 0n) throw new RangeError(`priceMicros must be positive, got ${priceMicros}`);
}
