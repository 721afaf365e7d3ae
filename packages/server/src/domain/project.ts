/** A project's plan: it sets the platform fee rate (money.ts). */
export type Plan = "free" | "pro" | "business";
