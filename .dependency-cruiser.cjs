/**
 * Import rules of the server: layers only point down, and nothing imports in a circle.
 *
 *   domain (principal, errors, plan)                             ← lowest
 *   ledger / chain / net / leaf modules (config, ids, money, tokens, tokenScan)
 *   rails
 *   services
 *   http / workers / deposits / settlement
 *   server, settlementMain, cli, deps, masterKeys, context, sandbox, testing ← highest (wiring and entry points)
 *
 * Only ledger/ touches the database (no Kysely, ledger/db.ts or ledger/connection.ts elsewhere in the server);
 * its inspection port for tests, ledger/testing.ts, is imported by tests only.
 *
 * `npm test` runs `npm run lint:imports`, which fails on any violation: there is no list of tolerated ones.
 */
const src = "^packages/server/src/";
const topFiles = `${src}(server|settlementMain|settlementThread|deps|context|masterKeys)\\.(ts|mjs)$`;
const top = `${topFiles}|${src}(cli|sandbox|testing)/`;
const entry = `${src}(http|workers|deposits|settlement)/`;
const layer = (name, above) => ({
  name: `no-upward-from-${name}`,
  comment: `${name} may only import layers below it`,
  severity: "error",
  from: { path: `${src}${name}/` },
  to: { path: above },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "a circle of imports hides which module depends on which",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    layer("domain", `${src}(ledger|chain|net|rails|services)/|${src}(config|ids|money|tokens|tokenScan)\\.ts$|${entry}|${top}`),
    {
      name: "ledger-owns-the-database",
      comment: "only ledger/ touches the database: Kysely, the connection (ledger/db.ts) and its accessor (ledger/connection.ts) stay inside it",
      severity: "error",
      from: { path: src, pathNot: `${src}ledger/` },
      to: { path: `(^|/)node_modules/kysely/|${src}ledger/(db|connection)\\.ts$` },
    },
    {
      name: "ledger-testing-is-for-tests",
      comment: "ledger/testing.ts is the tests' inspection port (reads and writes past the ledger's operations): nothing in the server imports it",
      severity: "error",
      from: { path: src, pathNot: `${src}ledger/testing\\.ts$` },
      to: { path: `${src}ledger/testing\\.ts$` },
    },
    {
      name: "payment-rows-stay-in-the-ledger",
      comment:
        "above the ledger a payment is a domain Payment (domain/payment.ts): the row's type (ledger/paymentRows.ts) and the table types (ledger/schema.ts) are imported inside ledger/ only (decisions.md, \"A domain Payment at the ledger's edge\")",
      severity: "error",
      from: { path: src, pathNot: `${src}ledger/` },
      to: { path: `${src}ledger/(paymentRows|schema)\\.ts$` },
    },
    {
      name: "http-makes-no-ledger-calls",
      comment:
        "http/ reaches the ledger only through services/: it imports nothing from ledger/ but a type (decisions.md, \"The console's backend in services/\"); never a payment's row (the rule above)",
      severity: "error",
      from: { path: `${src}http/` },
      to: { path: `${src}ledger/`, dependencyTypesNot: ["type-only"] },
    },
    layer("ledger", `${src}(rails|services)/|${entry}|${top}`),
    layer("chain", `${src}(rails|services)/|${entry}|${top}`),
    // The SSRF-safe fetcher and its address policy: used by the x402 rail and by webhooks alike.
    layer("net", `${src}(ledger|chain|rails|services)/|${entry}|${top}`),
    layer("rails", `${src}services/|${entry}|${top}`),
    layer("services", `${entry}|${top}`),
    layer("http", `${src}(workers|deposits|settlement)/|${top}`),
    layer("workers", `${src}(http|settlement)/|${top}`),
    layer("deposits", `${src}(http|settlement)/|${top}`),
    // The dispatcher, payment worker, settlement thread, retry rule and lost-leg repair: entered by the wiring only.
    layer("settlement", `${src}(http|deposits)/|${top}`),
    {
      name: "no-upward-from-leaf-modules",
      comment: "config, ids, money, tokens and tokenScan are leaves of the server",
      severity: "error",
      from: { path: `${src}(config|ids|money|tokens|tokenScan)\\.ts$` },
      to: { path: `${src}(ledger|chain|net|rails|services|http|workers|deposits|settlement|cli|sandbox|testing)/|${topFiles}` },
    },
    {
      name: "api-stands-alone",
      comment: "the wire contract imports no other package of this repository",
      severity: "error",
      from: { path: "^packages/api/" },
      to: { path: "^packages/(server|mcp|devchain)/" },
    },
    {
      name: "mcp-speaks-over-the-api",
      comment: "the MCP server reaches the wallet only through the typed client",
      severity: "error",
      from: { path: "^packages/mcp/src/" },
      to: { path: "^packages/(server|devchain)/" },
    },
    {
      name: "devchain-on-the-live-path",
      comment: "the local chain is loaded only by dynamic import (sandbox and tests), never statically",
      severity: "error",
      from: { path: "^packages/server/src/" },
      to: { path: "^packages/devchain/", dependencyTypesNot: ["dynamic-import"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Packages are left out, but for Kysely: the rule "ledger-owns-the-database" looks for its imports.
    exclude: { path: "(^|/)node_modules/(?!kysely/)|^(?!.*node_modules/kysely/).*(^|/)dist/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
  },
};
