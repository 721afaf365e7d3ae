// Bundles src/main.ts into dist/agentwallet-mcp.js for the bin and `npm pack`. @agentwallet/api (TypeScript,
// unpublished) is bundled in; the MCP SDK and zod stay external as real dependencies.
// AGENTWALLET_PUBLIC_BASE_URL sets the default API address of this build (see src/config.ts).
import { build } from "esbuild";

const root = new URL("..", import.meta.url);
const publicBaseUrl = process.env.AGENTWALLET_PUBLIC_BASE_URL?.trim() ?? "";
if (publicBaseUrl && !/^https?:\/\//.test(publicBaseUrl)) {
  throw new Error(`AGENTWALLET_PUBLIC_BASE_URL must be an http(s) URL, got ${JSON.stringify(publicBaseUrl)}`);
}

await build({
  entryPoints: [new URL("src/main.ts", root).pathname],
  outfile: new URL("dist/agentwallet-mcp.js", root).pathname,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // A package name also marks its subpaths (`@modelcontextprotocol/sdk/server/mcp.js`) external.
  external: ["@modelcontextprotocol/sdk", "zod"],
  define: { __AGENTWALLET_DEFAULT_BASE_URL__: JSON.stringify(publicBaseUrl) },
  legalComments: "none",
  logLevel: "warning",
});
