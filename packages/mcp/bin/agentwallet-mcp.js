#!/usr/bin/env node
// Entry point of `agentwallet-mcp`. In a checkout of the repository it runs the TypeScript source through
// tsx, so it can never run a stale build; in the published package (no src/) it runs the esbuild bundle.
import { existsSync } from "node:fs";

const source = new URL("../src/main.ts", import.meta.url);
const bundle = new URL("../dist/agentwallet-mcp.js", import.meta.url);

if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else if (existsSync(bundle)) {
  await import(bundle.href);
} else {
  process.stderr.write("agentwallet-mcp: dist/agentwallet-mcp.js is missing; run `npm run build` in packages/mcp\n");
  process.exitCode = 1;
}
