/**
 * What the services use beyond the rails' dependencies (rails/railDeps.ts), declared here by their
 * users: the rails themselves, the hand-over of accepted payments, and the keys derived from the master
 * key source. deps.ts builds it.
 */
import type { Ledger } from "../ledger/store.ts";
import type { Payment } from "../domain/payment.ts";
import type { RailDeps } from "../rails/railDeps.ts";
import type { Rails } from "../rails/rails.ts";
import type { AfterAnswer } from "./payments/paymentContext.ts";

export type ServiceDeps = RailDeps & {
  /**
   * The whole ledger: between them the services use nearly every port (payments, projects, tokens,
   * balances, webhooks, sessions, credentials), and each service function names the narrow one it uses.
   */
  ledger: Ledger;
  /** Payment rails; absent until the chain is configured (read-only deployments, some tests). */
  rails: Rails | undefined;
  /** Hands a just-accepted payment (leased to this process) to settlement. */
  dispatch?: (payment: Payment) => void;
  /** Work after an answer, which a graceful stop waits for (services/payments/paymentContext.ts). */
  afterAnswer?: AfterAnswer;
  /** The key bank accounts in spending controls are hashed with (deps.ts derives it from the master key source). */
  recipientHashKey?: Uint8Array;
  /** The key webhook endpoints' signing secrets are encrypted with (masterKeys.ts `loadWebhookSecretKey`). */
  webhookSecretKey?: Uint8Array;
};
