/**
 * The pages of GET /v1/transactions that the plan tests hold both databases to (transactionListPlans.test.ts,
 * transactionListPlansSqlite.test.ts): the read bench's pages (bench/read.ts), plus a filtered offset and a filtered
 * cursor by time. Each is a name and its query, given points of the seeded history: the middle row and the time 10 %
 * in. `none`: the filter matches no row.
 */
export type SeededPoints = { middle: { id: string; created_at: string }; early: string };
export type ListPage = [name: string, query: (p: SeededPoints) => Record<string, string>, none?: true];

const monthAfter = (at: string) => new Date(Date.parse(at) + 30 * 86_400_000).toISOString();

export const LIST_PAGES: ListPage[] = [
  ["plain, first page", () => ({})],
  ["plain, half way", () => ({ offset: "25000" })],
  ["type=x402_payment", () => ({ type: "x402_payment" })],
  ["type=fiat_withdrawal (none)", () => ({ type: "fiat_withdrawal" }), true],
  ["status=completed", () => ({ status: "completed" })],
  ["status=failed", () => ({ status: "failed" })],
  ["type=payment&status=reversed", () => ({ type: "payment", status: "reversed" })],
  ["type=usdc_transfer,payment&status=completed,failed", () => ({ type: "usdc_transfer,payment", status: "completed,failed" })],
  ["created_after=<middle>", ({ middle }) => ({ created_after: middle.created_at })],
  ["created_after=<middle>&created_before=<+30 days>", ({ middle }) => ({ created_after: middle.created_at, created_before: monthAfter(middle.created_at) })],
  ["created_before=<10 % in>", ({ early }) => ({ created_before: early })],
  ["created_after=<middle>&offset=1000", ({ middle }) => ({ created_after: middle.created_at, offset: "1000" })],
  ["created_after=<10 % in>&starting_after=<middle>", ({ middle, early }) => ({ created_after: early, starting_after: middle.id })],
  ["type=x402_payment,platform_fee&status=completed&created_*", ({ middle }) => ({ type: "x402_payment,platform_fee", status: "completed", created_after: middle.created_at, created_before: monthAfter(middle.created_at) })],
  ["starting_after=<middle>", ({ middle }) => ({ starting_after: middle.id })],
  ["status=completed&starting_after=<middle>", ({ middle }) => ({ status: "completed", starting_after: middle.id })],
  ["status=failed&offset=1000", () => ({ status: "failed", offset: "1000" })],
];
