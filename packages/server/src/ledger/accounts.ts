/** The journal's accounts (payments.ts says what each holds); every movement's entries sum to zero. */
export const account = {
  available: (projectId: string) => `project:${projectId}:available`,
  held: (projectId: string) => `project:${projectId}:held`,
  chain: "world:chain",
  payouts: "world:payouts",
  fees: "revenue:fees",
} as const;
