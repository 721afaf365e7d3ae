// x402 merchants for tests and the sandbox: the same small app behind Coinbase's v2 middleware
// (@x402/express) or v1 middleware (x402-express). Both price /paid explicitly in the dev chain's
// TestUSDC, because a price like "$0.01" would resolve to the real USDC of the network, and both
// use the given facilitator, never the public default one.
import { HTTPFacilitatorClient } from "@x402/core/server";
import { createPrivateKey, sign } from "node:crypto";
import { createEIP712OfferReceiptIssuer, createJWSOfferReceiptIssuer, createOfferReceiptExtension, declareOfferReceiptExtension } from "@x402/extensions/offer-receipt";
import { PAYMENT_IDENTIFIER, declarePaymentIdentifierExtension, extractPaymentIdentifier } from "@x402/extensions/payment-identifier";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddlewareFromHTTPServer, x402HTTPResourceServer, x402ResourceServer } from "@x402/express";
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
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
  /**
   * How offers and receipts are signed with `offerSignerKey`: EIP-712 (the default), or JWS (`ES256K` over the
   * same secp256k1 key, its `kid` a did:jwk holding the public key).
   */
  offerSignatureFormat?: "eip712" | "jws";
  /**
   * v2 only: declare x402's payment-identifier extension and answer a payload whose identifier was already
   * settled with the answer it got (the spec's "recovering a lost response"), without settling it again.
   * `dropFirstReply`: the first paid request is settled, then its connection is closed before any answer.
   * `closeFirst`: the first this many paid requests find the handler down: their connection is closed as they
   * arrive, before anything is verified or settled (received, but the signature is not used).
   */
  paymentIdentifier?: { dropFirstReply?: boolean; closeFirst?: number };
};

export type Merchant = {
  /** Base URL: GET|POST {url}/paid costs priceMicros, GET {url}/free costs nothing. */
  url: string;
  stop(): Promise<void>;
};

/** A v2 merchant whose price can change while it runs (a merchant raising its price between a quote and a payment). */
export type RepricingMerchant = Merchant & {
  setPrice(priceMicros: bigint): void;
  /** The payment header (`PAYMENT-SIGNATURE`) of each paid request, exactly as received, in arrival order. */
  paymentHeaders: readonly string[];
};

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
    const issuer =
      options.offerSignatureFormat === "jws"
        ? jwsIssuer(options.offerSignerKey, signer.publicKey)
        : createEIP712OfferReceiptIssuer(`did:pkh:${V2_NETWORK}:${signer.address}`, (params) => signer.signTypedData(params as never));
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
      ...(options.offerSignerKey || options.paymentIdentifier
        ? {
            extensions: {
              ...(options.offerSignerKey ? declareOfferReceiptExtension() : {}),
              ...(options.paymentIdentifier ? { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension() } : {}),
            },
          }
        : {}),
    },
  });
  // Fetch the facilitator's /supported now, so a missing facilitator fails here and not on a request.
  await httpServer.initialize();
  const paymentHeaders: string[] = [];
  const x402 = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false);
  const payment = options.paymentIdentifier ? answeredOnce(x402, paymentHeaders, options.paymentIdentifier) : recordingHeaders(x402, paymentHeaders);
  const merchant = await listen(createMerchantApp(payment), options.port);
  return {
    ...merchant,
    paymentHeaders,
    setPrice(next) {
      assertPrice(next);
      priceMicros = next;
    },
  };
}

/** x402's JWS issuer over a secp256k1 key (ES256K, signed by node:crypto), named by a did:jwk of its public key. */
function jwsIssuer(privateKey: Hex, publicKey: Hex) {
  const point = Buffer.from(publicKey.slice(4), "hex");
  const jwk = { kty: "EC", crv: "secp256k1", x: point.subarray(0, 32).toString("base64url"), y: point.subarray(32).toString("base64url") };
  const key = createPrivateKey({ key: { ...jwk, d: Buffer.from(privateKey.slice(2), "hex").toString("base64url") }, format: "jwk" });
  const kid = `did:jwk:${Buffer.from(JSON.stringify(jwk)).toString("base64url")}#0`;
  return createJWSOfferReceiptIssuer(kid, { kid, format: "jws", algorithm: "ES256K", sign: async (bytes) => sign("sha256", bytes, { key, dsaEncoding: "ieee-p1363" }).toString("base64url") });
}

const PAYMENT_HEADER = "payment-signature";

/** `payment`, with each request's payment header appended to `received` first. */
function recordingHeaders(payment: RequestHandler, received: string[]): RequestHandler {
  return (req, res, next) => {
    const header = req.get(PAYMENT_HEADER);
    if (header !== undefined) received.push(header);
    payment(req, res, next);
  };
}

/** What a settled request was answered, kept to answer the same payment identifier again. */
type Answer = { payload: string; status: number; headers: Record<string, string | number | readonly string[]>; body: Buffer };

/**
 * `payment` behind x402's payment-identifier, as the extension asks of a resource server: a payload whose
 * identifier was settled gets the stored answer again (never a second settlement); the same identifier with
 * another payload is a conflict (409). With `dropFirstReply`, the first settled answer is stored and its
 * connection closed instead of answered: the client learns nothing of a payment that happened.
 */
function answeredOnce(payment: RequestHandler, received: string[], o: { dropFirstReply?: boolean; closeFirst?: number }): RequestHandler {
  const answers = new Map<string, Answer>();
  const dropFirstReply = o.dropFirstReply === true;
  let dropped = false;
  let closed = 0;
  return (req, res, next) => {
    const header = req.get(PAYMENT_HEADER);
    if (header === undefined) return payment(req, res, next);
    received.push(header);
    if (closed < (o.closeFirst ?? 0)) {
      closed += 1;
      return void req.socket.destroy();
    }
    const id = paymentIdOf(header);
    const known = id === undefined ? undefined : answers.get(id);
    if (known) {
      if (known.payload !== header) return void res.status(409).json({ error: `payment identifier ${id} was used with another payload` });
      res.writeHead(known.status, known.headers as never);
      return void res.end(known.body);
    }
    // Wrapped before the x402 middleware wraps it in turn: it calls these once it has settled.
    const write = res.write.bind(res) as (...a: unknown[]) => boolean;
    const end = res.end.bind(res) as (...a: unknown[]) => Response;
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown) => {
      if (chunk !== undefined && chunk !== null && typeof chunk !== "function") chunks.push(Buffer.from(chunk as string));
    };
    const settled = () => id !== undefined && res.getHeader("payment-response") !== undefined && res.statusCode < 400;
    // The answer to drop is never written, not even in part.
    const dropping = () => dropFirstReply && !dropped && settled();
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return dropping() ? true : write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk);
      if (!settled()) return end(chunk, ...rest);
      answers.set(id!, { payload: header, status: res.statusCode, headers: { ...res.getHeaders() } as Answer["headers"], body: Buffer.concat(chunks) });
      if (dropping()) {
        dropped = true;
        res.socket?.destroy();
        return res;
      }
      return end(chunk, ...rest);
    }) as typeof res.end;
    payment(req, res, next);
  };
}

/** The payment identifier a v2 payment header carries (`extensions["payment-identifier"].info.id`), if any. */
function paymentIdOf(header: string): string | undefined {
  try {
    return extractPaymentIdentifier(JSON.parse(Buffer.from(header, "base64").toString("utf8"))) ?? undefined;
  } catch {
    return undefined;
  }
}

/** A merchant speaking x402 v1 (402 body `accepts`, X-PAYMENT / X-PAYMENT-RESPONSE). */
export async function startMerchantV1(options: StartMerchantOptions): Promise<Merchant> {
  assertPrice(options.priceMicros);
  // Loaded here, not with the package: x402-express v1 brings every chain viem defines (some 1,600 modules),
  // which the sandbox (a v2 merchant only) would load at every start and every CLI command.
  const { paymentMiddleware: paymentMiddlewareV1 } = await import("x402-express");
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
