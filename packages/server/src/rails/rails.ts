/** The payment rails a deployment has, built by deps.ts once the chain is configured. */
export type Rails = Record<string, never>;
